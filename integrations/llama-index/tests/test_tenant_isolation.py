"""Tenant isolation through LlamaIndex: entity A's retriever and memory block never show
entity B's memories, and what A's block captures is stored as A's.

Every entity's texts carry its own marker token and every query words all entities use,
so a memory of another entity shows up as a foreign marker in the output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.schema import NodeWithScore
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

from llama_index.memory.memtrellis import MemoryRetriever, MemtrellisMemoryBlock

MARKERS = {"default": "qqdefaultmark", "ent-a": "qqalphamark", "ent-b": "qqbravomark"}
ENTITIES = sorted(MARKERS)
QUERIES = ["tea in paris", "violin lessons", "dentist deadline", "qqbravomark tea"]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """One store; each entity has memories on the same subjects, in two sessions."""
    path: Path = tmp_path_factory.mktemp("tenants") / "store"
    with Memory(path, embedder=HashingEmbedder()) as memory:
        for entity, mark in MARKERS.items():
            for number, subject in enumerate(["tea in Paris", "violin lessons", "the dentist"]):
                memory.add(
                    f"{mark} {subject} {number}",
                    entity_id=entity,
                    session_id=f"s{number % 2}",
                    entities=["Paris", "Clara"],
                )
            memory.add(f"{mark} decided on a deadline", entity_id=entity, memory_type="decision")
            memory.capture(f"{mark} captured tea note", entity_id=entity, mode="fast")
        assert memory.flush(30)
        yield memory


def assert_only(entity: str, text: str) -> None:
    for other, mark in MARKERS.items():
        if other != entity:
            assert mark not in text, f"{other}'s memory shown to {entity}"


def check_nodes(memory: Memory, entity: str, nodes: list[NodeWithScore]) -> None:
    ids = {item.id for item in memory.list(entity_id=entity, limit=1000)}
    for hit in nodes:
        assert hit.node.node_id in ids
        content = hit.node.get_content()
        assert MARKERS[entity] in content
        assert_only(entity, content + repr(hit.node.metadata))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("entity", ENTITIES)
async def test_retriever_returns_only_its_entitys_memories(
    shared: Memory, entity: str, query: str
) -> None:
    retriever = MemoryRetriever(shared, entity_id=entity, k=20, strict=True)
    nodes = retriever.retrieve(query)
    assert nodes
    check_nodes(shared, entity, nodes)
    check_nodes(shared, entity, await retriever.aretrieve(query))
    other = next(e for e in ENTITIES if e != entity)
    with shared.scope(entity_id=other):  # the retriever's own entity wins
        check_nodes(shared, entity, retriever.retrieve(query))
    by_session = MemoryRetriever(shared, entity_id=entity, session_id="s1", k=20, strict=True)
    check_nodes(shared, entity, by_session.retrieve(query))
    unscoped = MemoryRetriever(shared, k=20, strict=True)
    with shared.scope(entity_id=entity):
        check_nodes(shared, entity, unscoped.retrieve(query))


@pytest.mark.parametrize("entity", ENTITIES)
async def test_memory_block_shows_and_stores_only_its_entitys_memories(
    shared: Memory, entity: str
) -> None:
    block = MemtrellisMemoryBlock(memory=shared, entity_id=entity, k=20, mode="fast")
    question = "tea in paris? violin? deadline? qqbravomark qqalphamark"
    text = await block.aget([ChatMessage(role="user", content=question)])
    assert MARKERS[entity] in text
    assert_only(entity, text.replace(question, ""))
    shorter = await block.atruncate(text, 40)
    assert_only(entity, (shorter or "").replace(question, ""))

    said = f"{MARKERS[entity]} block note for {entity}"
    await block.aput([ChatMessage(role="user", content=said)])
    assert shared.flush(30)
    for who in ENTITIES:
        texts = [i.text for i in shared.list(entity_id=who, limit=1000)]
        assert (said in texts) == (who == entity)
