"""Whose memory a call uses: the conventional ways of naming the user, and calls naming none."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from langchain.agents import create_agent
from memtrellis import InvalidInputError, Memory
from memtrellis.testing import HashingEmbedder

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper, MemoryMiddleware, memory_context


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        yield memory


def entities(memory: Memory) -> dict[str, list[tuple[str, str | None]]]:
    """{entity: sorted (text, session)} of the given entities that hold memories."""
    assert memory.flush(30)
    out = {}
    for entity in ("ann", "ben", "default", "c-7"):
        items = memory.list(entity_id=entity, limit=100)
        if items:
            out[entity] = sorted((i.text, i.scope.session_id) for i in items)
    return out


@dataclass
class UserContext:
    user_id: str


@dataclass
class TenantContext:
    tenant: str


def test_the_wrapper_reads_user_id_and_thread_id_from_configurable(shared: Memory) -> None:
    shared.add("Ann drinks oat milk", entity_id="ann")
    inner = FakeChat(messages=iter(["Oat milk it is."]))
    chat = ChatMemoryWrapper(inner, memory=shared)

    chat.invoke(
        "Which milk do I drink?",
        config={"configurable": {"user_id": "ann", "thread_id": "t-1"}},
    )

    assert "Ann drinks oat milk" in inner.sent()[0].content
    assert entities(shared) == {
        "ann": [
            ("Ann drinks oat milk", None),
            ("Oat milk it is.", "t-1"),
            ("Which milk do I drink?", "t-1"),
        ]
    }


def test_memtrellis_keys_come_before_the_conventional_ones(shared: Memory) -> None:
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["hi"])), memory=shared)

    chat.invoke(
        "hello",
        config={
            "configurable": {"user_id": "ann"},
            "metadata": {"memtrellis_entity_id": "ben", "memtrellis_session_id": "s-9"},
        },
    )

    assert entities(shared) == {"ben": [("hello", "s-9"), ("hi", "s-9")]}


def test_another_key_can_name_the_user(shared: Memory) -> None:
    chat = ChatMemoryWrapper(
        FakeChat(messages=iter(["noted"])), memory=shared, user_keys=("customer_id",)
    )

    chat.invoke("I am customer seven", config={"configurable": {"customer_id": "c-7"}})

    assert entities(shared) == {"c-7": [("I am customer seven", None), ("noted", None)]}


def test_require_user_refuses_a_call_naming_nobody_before_the_model_runs(
    shared: Memory,
) -> None:
    inner = FakeChat(messages=iter(["never"]))
    chat = ChatMemoryWrapper(inner, memory=shared, require_user=True)

    with pytest.raises(InvalidInputError, match="names no user"):
        chat.invoke("who am I?")
    with pytest.raises(InvalidInputError, match="names no user"):
        list(chat.stream("who am I?"))

    assert inner.calls == []
    assert entities(shared) == {}
    named = ChatMemoryWrapper(FakeChat(messages=iter(["ok"])), memory=shared, require_user=True)
    assert named.invoke("hi", config={"configurable": {"user_id": "ann"}}).content == "ok"


async def test_require_user_refuses_async_calls_too(shared: Memory) -> None:
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["x"])), memory=shared, require_user=True)

    with pytest.raises(InvalidInputError):
        await chat.ainvoke("who am I?")


def test_turns_falling_into_default_are_warned_about_once(
    shared: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["a1", "a2"])), memory=shared)

    with caplog.at_level(logging.WARNING, logger="langchain_memtrellis"):
        chat.invoke("q1")
        chat.invoke("q2")

    warnings = [r for r in caplog.records if "named no user" in r.getMessage()]
    assert len(warnings) == 1
    assert "user_id" in warnings[0].getMessage()
    assert entities(shared) == {"default": [("a1", None), ("a2", None), ("q1", None), ("q2", None)]}


def test_no_warning_when_the_adapter_names_the_user(
    shared: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["a1"])), memory=shared, entity_id="ann")

    with caplog.at_level(logging.WARNING, logger="langchain_memtrellis"):
        chat.invoke("q1")

    assert not [r for r in caplog.records if "named no user" in r.getMessage()]


def test_the_middleware_reads_the_langgraph_context(shared: Memory) -> None:
    shared.add("Ben is vegetarian", entity_id="ben")
    model = FakeChat(messages=iter(["Lentil soup."]))
    agent = create_agent(model, middleware=[MemoryMiddleware(shared)], context_schema=UserContext)

    agent.invoke(
        {"messages": [("user", "Dinner idea? I am vegetarian")]},
        {"configurable": {"thread_id": "t-2"}},
        context=UserContext(user_id="ben"),
    )

    assert "Ben is vegetarian" in model.sent()[0].content
    assert entities(shared) == {
        "ben": [
            ("Ben is vegetarian", None),
            ("Dinner idea? I am vegetarian", "t-2"),
            ("Lentil soup.", "t-2"),
        ]
    }


def test_the_middleware_reads_configurable_and_mapped_context_keys(shared: Memory) -> None:
    agent = create_agent(
        FakeChat(messages=iter(["one", "two"])),
        middleware=[MemoryMiddleware(shared, user_keys=("tenant", "user_id"))],
        context_schema=TenantContext,
    )

    agent.invoke(
        {"messages": [("user", "first")]},
        {"configurable": {"user_id": "ann"}},
        context=TenantContext(tenant="c-7"),
    )
    agent.invoke({"messages": [("user", "second")]}, {"configurable": {"user_id": "ann"}})

    assert entities(shared) == {
        "ann": [("second", None), ("two", None)],
        "c-7": [("first", None), ("one", None)],
    }


def test_the_middleware_can_require_a_user(shared: Memory) -> None:
    model = FakeChat(messages=iter(["never"]))
    agent = create_agent(model, middleware=[MemoryMiddleware(shared, require_user=True)])

    with pytest.raises(InvalidInputError, match="names no user"):
        agent.invoke({"messages": [("user", "who am I?")]})

    assert model.calls == []


def test_the_lcel_step_reads_user_id(shared: Memory) -> None:
    shared.add("Ann is vegetarian", entity_id="ann")
    step = memory_context(shared)

    placed = step.invoke("Am I vegetarian?", config={"configurable": {"user_id": "ann"}})

    assert "Ann is vegetarian" in placed[0].content
