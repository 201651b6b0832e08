"""Tenant isolation through LangChain: entity A's retriever, wrapper and memory-context
runnable never show entity B's memories.

Every entity's texts carry its own marker token and every query words all entities use,
so a memory of another entity shows up as a foreign marker in the output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

from fakes import FakeChat
from langchain_memtrellis import (
    ChatMemoryWrapper,
    MemoryChatMessageHistory,
    MemoryRetriever,
    memory_context,
)

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


def own_ids(memory: Memory, entity: str) -> set[str]:
    return {item.id for item in memory.list(entity_id=entity, limit=1000)}


def assert_only(entity: str, text: str) -> None:
    for other, mark in MARKERS.items():
        if other != entity:
            assert mark not in text, f"{other}'s memory shown to {entity}"


def check_documents(memory: Memory, entity: str, docs: list[Document]) -> None:
    ids = own_ids(memory, entity)
    for doc in docs:
        assert doc.id in ids
        assert MARKERS[entity] in doc.page_content
        assert_only(entity, doc.page_content + repr(doc.metadata))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("entity", ENTITIES)
async def test_retriever_returns_only_its_entitys_memories(
    shared: Memory, entity: str, query: str
) -> None:
    retriever = MemoryRetriever(memory=shared, entity_id=entity, k=20)
    other = next(e for e in ENTITIES if e != entity)

    docs = retriever.invoke(query)
    assert docs  # every entity has memories on every subject
    check_documents(shared, entity, docs)
    check_documents(shared, entity, await retriever.ainvoke(query))
    # Another entity's scope block, or an entity_id passed to the call, changes nothing.
    with shared.scope(entity_id=other):
        check_documents(shared, entity, retriever.invoke(query, entity_id=other))
    session = MemoryRetriever(memory=shared, entity_id=entity, session_id="s1", k=20)
    check_documents(shared, entity, session.invoke(query))


@pytest.mark.parametrize("entity", ENTITIES)
def test_retriever_without_an_entity_follows_memory_scope(shared: Memory, entity: str) -> None:
    retriever = MemoryRetriever(memory=shared, k=20)
    with shared.scope(entity_id=entity):
        docs = retriever.invoke("tea in paris violin")
    check_documents(shared, entity, docs)
    assert docs


@pytest.mark.parametrize("entity", ENTITIES)
def test_wrapper_and_memory_context_show_only_the_entitys_memories(
    shared: Memory, entity: str
) -> None:
    question = [HumanMessage("tea in paris? violin? deadline? qqbravomark qqalphamark")]
    inner = FakeChat(messages=iter(["ok"] * 4))
    chat = ChatMemoryWrapper(inner, memory=shared, entity_id=entity, k=20, capture=False)
    chat.invoke(question)
    # the scope from a run's metadata (as the wrapper documents) is honoured, not mixed
    other = next(e for e in ENTITIES if e != entity)
    by_metadata = ChatMemoryWrapper(inner, memory=shared, entity_id=other, capture=False)
    by_metadata.invoke(question, config={"metadata": {"memtrellis_entity_id": entity}})
    for call in (0, 1):
        system = str(inner.sent(call)[0].content)
        assert MARKERS[entity] in system
        assert_only(entity, system.replace(str(question[0].content), ""))

    placed = memory_context(shared, entity_id=entity, k=20).invoke(question)
    system = str(placed[0].content)
    assert MARKERS[entity] in system
    assert_only(entity, system.replace(str(question[0].content), ""))


def test_chat_history_of_a_shared_session_id_stays_per_entity(tmp_path: Path) -> None:
    """Session ids are not unique across entities: two entities' "s1" are two histories."""
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        histories = {
            entity: MemoryChatMessageHistory("s1", memory, entity_id=entity) for entity in ENTITIES
        }
        for entity, history in histories.items():
            history.add_messages([HumanMessage(f"{MARKERS[entity]} hello"), AIMessage("hi")])
        first = ENTITIES[0]
        histories[first].clear()
        for entity, history in histories.items():
            texts = [str(m.content) for m in history.messages]
            assert texts == ([] if entity == first else [f"{MARKERS[entity]} hello", "hi"])
