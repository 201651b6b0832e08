"""MemoryRetriever alone, in a RetrieverQueryEngine and inside a QueryFusionRetriever."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes import GatedEmbedder
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import TextNode
from memtrellis import Memory, StoreClosedError

from llama_index.memory.memtrellis import MemoryRetriever


def _conversation(memory: Memory) -> None:
    memory.add(
        [
            {"role": "user", "content": "My sister Clara moved to Lisbon.", "id": "m1"},
            {"role": "assistant", "content": "Lisbon is lovely in spring!", "id": "m2"},
        ],
        mode="fast",
    )
    memory.add("Alice prefers green tea", memory_type="preference")


def test_nodes_carry_memory_provenance_confidence_and_explanation(memory: Memory) -> None:
    _conversation(memory)
    nodes = MemoryRetriever(memory, k=5).retrieve("Where does Clara live?")

    top = nodes[0]
    assert top.node.get_content() == "My sister Clara moved to Lisbon."
    item = memory.get(top.node.node_id)  # the node id is the memory id
    assert top.node.metadata["memory_id"] == item.id
    assert top.node.metadata["confidence"] == pytest.approx(item.confidence)
    [source] = top.node.metadata["sources"]
    assert (source["message_id"], source["role"]) == ("m1", "user")
    explanation = top.node.metadata["explanation"]
    assert explanation["final_score"] == pytest.approx(top.score)
    assert explanation["keyword_score"] is not None
    assert [n.score for n in nodes] == sorted((n.score for n in nodes), reverse=True)


def test_provenance_stays_out_of_the_llm_text(memory: Memory) -> None:
    _conversation(memory)
    [node, *_] = MemoryRetriever(memory).retrieve("Clara Lisbon")
    for_llm = node.node.get_content(metadata_mode="llm")  # type: ignore[arg-type]
    assert "Clara moved to Lisbon" in for_llm
    assert "final_score" not in for_llm and "message_id" not in for_llm
    assert "memory_type: episode" in for_llm


def test_scope_arguments_select_whose_memory(memory: Memory) -> None:
    memory.add("Bob collects stamps", entity_id="bob")
    memory.add("Alice collects coins")
    assert [n.text for n in MemoryRetriever(memory, entity_id="bob").retrieve("collects")] == [
        "Bob collects stamps"
    ]
    assert [n.text for n in MemoryRetriever(memory).retrieve("collects")] == [
        "Alice collects coins"
    ]
    assert MemoryRetriever(memory).retrieve("   ") == []


def test_query_engine_answers_from_memories(memory: Memory) -> None:
    _conversation(memory)
    engine = RetrieverQueryEngine.from_args(MemoryRetriever(memory, k=2), llm=MockLLM())
    response = engine.query("Where does Clara live now?")
    # MockLLM answers with its prompt: the memory text reached the model.
    assert "Clara moved to Lisbon" in str(response)
    assert response.source_nodes[0].node.metadata["sources"][0]["message_id"] == "m1"


async def test_fusion_with_a_document_index(memory: Memory) -> None:
    _conversation(memory)
    docs = VectorStoreIndex(
        nodes=[TextNode(text="Lisbon trams run until midnight.", id_="doc-1")],
        embed_model=MockEmbedding(embed_dim=8),
    ).as_retriever(similarity_top_k=1)
    fusion = QueryFusionRetriever(
        [MemoryRetriever(memory, k=2), docs],
        llm=MockLLM(),
        num_queries=1,  # no query generation: the fusion of the two retrievers is tested
        mode="reciprocal_rerank",
        use_async=True,
        similarity_top_k=5,
    )
    fused = await fusion.aretrieve("Clara Lisbon")
    ids = [n.node.node_id for n in fused]
    assert "doc-1" in ids
    assert any(n.node.metadata.get("sources") for n in fused)
    assert len(fused) == 3


async def test_aretrieve_runs_recall_off_the_event_loop(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    with Memory(tmp_path / "s", embedder=embedder) as memory:
        memory.add("The deploy freeze starts on Friday")
        retriever = MemoryRetriever(memory, strict=True)
        embedder.close_gate()
        nodes, _ = await asyncio.gather(retriever.aretrieve("deploy freeze"), embedder.open_gate())
        assert [n.text for n in nodes] == ["The deploy freeze starts on Friday"]


async def test_failures_return_no_nodes_unless_strict(closed_memory: Memory) -> None:
    retriever = MemoryRetriever(closed_memory)
    assert retriever.retrieve("anything") == []
    assert await retriever.aretrieve("anything") == []
    assert retriever.failures == 2
    with pytest.raises(StoreClosedError):
        MemoryRetriever(closed_memory, strict=True).retrieve("anything")


def test_rejects_what_is_not_a_memory() -> None:
    with pytest.raises(TypeError, match="memtrellis Memory"):
        MemoryRetriever("./store")  # type: ignore[arg-type]
