"""MemoryRetriever: recalled memories as Documents with their provenance and scores."""

from __future__ import annotations

import pytest
from memtrellis import InvalidInputError, Memory

from langchain_memtrellis import MemoryRetriever


@pytest.fixture
def stocked(memory: Memory) -> Memory:
    memory.add(
        [
            {"role": "user", "content": "My sister Clara moved to Lisbon", "id": "m1"},
            {"role": "assistant", "content": "Lisbon is lovely in spring", "id": "m2"},
        ]
    )
    memory.add("Alice plays the cello", memory_type="preference", entity_id="alice")
    memory.add("Bob plays the drums", entity_id="bob")
    return memory


def test_documents_carry_text_provenance_and_scores(stocked: Memory) -> None:
    docs = MemoryRetriever(memory=stocked, k=1).invoke("Where did Clara move?")

    [doc] = docs
    assert doc.page_content == "My sister Clara moved to Lisbon"
    meta = doc.metadata
    assert doc.id == meta["id"]
    assert meta["type"] == "episode"
    assert 0.0 <= meta["confidence"] <= 1.0
    assert meta["sources"][0]["message_id"] == "m1"
    assert meta["sources"][0]["role"] == "user"
    assert meta["scores"]["final"] == meta["explanation"]["final_score"] == meta["score"]
    assert meta["scores"]["keyword"] is not None


def test_k_and_token_budget_per_call(stocked: Memory) -> None:
    retriever = MemoryRetriever(memory=stocked, k=3)

    assert len(retriever.invoke("Clara Lisbon cello", k=2)) == 2
    assert retriever.invoke("Clara Lisbon cello", token_budget=0) == []


def test_entity_scope_keeps_tenants_apart(stocked: Memory) -> None:
    docs = MemoryRetriever(memory=stocked, entity_id="bob", k=5).invoke("who plays music?")

    assert [d.page_content for d in docs] == ["Bob plays the drums"]


async def test_async_path_uses_arecall(stocked: Memory) -> None:
    docs = await MemoryRetriever(memory=stocked, k=1).ainvoke("cello")

    assert [d.page_content for d in docs] == ["Alice plays the cello"]
    assert docs[0].metadata["type"] == "preference"


async def test_a_blank_question_finds_nothing_and_other_bad_input_is_typed(
    stocked: Memory,
) -> None:
    retriever = MemoryRetriever(memory=stocked)
    # a RAG graph whose question came out blank gets no documents, not an error
    assert retriever.invoke("") == []
    assert await retriever.ainvoke("  \n") == []
    # a question of the wrong type is still a typed error
    with pytest.raises(InvalidInputError):
        retriever.invoke(5)  # type: ignore[arg-type]


async def test_a_memory_failure_returns_no_documents_and_is_counted(
    stocked: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk unreadable")

    monkeypatch.setattr(stocked, "recall", broken)
    monkeypatch.setattr(stocked, "arecall", broken)
    # the RAG chain goes on without memories, and health() says so
    assert MemoryRetriever(memory=stocked).invoke("cello") == []
    assert await MemoryRetriever(memory=stocked).ainvoke("cello") == []
    health = stocked.health()
    assert health.adapter_recall_failures == 2
    assert health.adapter_failures["langchain.recall"] == 2
    # strict: the failure reaches the caller (and is still counted)
    with pytest.raises(OSError, match="disk unreadable"):
        MemoryRetriever(memory=stocked, strict=True).invoke("cello")
    assert stocked.health().adapter_recall_failures == 3
