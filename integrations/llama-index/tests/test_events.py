"""MemtrellisEventHandler capturing turns from real LlamaIndex pipelines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes import TOOL, scripted_llm
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.tools import FunctionTool
from llama_index_instrumentation.dispatcher import instrument_tags
from memtrellis import Memory, MemoryItem
from memtrellis.context import tool_trail

from llama_index.memory.memtrellis import (
    MemoryRetriever,
    MemtrellisEventHandler,
    MemtrellisLLM,
    MemtrellisMemoryBlock,
)
from llama_index.memory.memtrellis.events import ENTITY_TAG, SESSION_TAG, skip_capture


@pytest.fixture
def handler(memory: Memory) -> Iterator[MemtrellisEventHandler]:
    h = MemtrellisEventHandler(
        memory=memory, entity_id="bob", process_id="shop-bot", session_id="s1", mode="fast"
    ).attach()
    yield h
    h.detach()


def _stored(memory: Memory, entity_id: str = "bob") -> list[MemoryItem]:
    assert memory.flush(timeout=60)
    return memory.list(entity_id=entity_id, limit=1000)


def _said(items: list[MemoryItem]) -> list[tuple[str | None, str]]:
    return [(i.sources[0].role, i.text) for i in items]


def test_chat_engine_turns_are_captured_with_the_configured_scope(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    llm, _ = scripted_llm("Porto is a fine city.")
    engine = SimpleChatEngine.from_defaults(llm=llm, system_prompt="Be brief.")
    engine.chat("I moved to Porto last week.")

    stored = _stored(memory)
    assert _said(stored) == [
        ("user", "I moved to Porto last week."),
        ("assistant", "Porto is a fine city."),
    ]
    assert {(i.scope.entity_id, i.scope.process_id, i.scope.session_id) for i in stored} == {
        ("bob", "shop-bot", "s1")
    }
    assert memory.list(entity_id="alice") == []  # the Memory's default entity is untouched
    assert handler.captured == 1


def test_memory_placed_in_the_user_message_is_not_captured_back(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    memory.add("Bob always books a window seat", entity_id="bob")
    llm, script = scripted_llm("Window seat it is.")
    chat_memory = ChatMemory.from_defaults(
        insert_method="user",
        memory_blocks=[MemtrellisMemoryBlock(memory=memory, entity_id="bob")],
    )
    SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory).chat("Which seat for me?")

    sent = script.calls[0][-1]
    assert "window seat" in (sent.content or "") and "<memory>" in (sent.content or "")
    assert _said(_stored(memory))[1:] == [
        ("user", "Which seat for me?"),
        ("assistant", "Window seat it is."),
    ]


def test_only_the_new_messages_of_each_call_are_captured(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    llm, _ = scripted_llm("First answer.", "Second answer.")
    engine = SimpleChatEngine.from_defaults(llm=llm)
    engine.chat("First question?")
    engine.chat("Second question?")
    assert _said(_stored(memory)) == [
        ("user", "First question?"),
        ("assistant", "First answer."),
        ("user", "Second question?"),
        ("assistant", "Second answer."),
    ]


def test_streaming_turns_are_captured_when_the_stream_ends(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    # MockLLM streams the text so far in each chunk, the scripted LLM the new piece only.
    pieces = [ChatMessage(role="assistant", content=p) for p in ("Lis", "bon ", "it is.")]
    llm, _ = scripted_llm(lambda messages: "unused")
    llm.response_generator = lambda messages, **kw: iter(pieces)
    chunks = list(llm.stream_chat([ChatMessage(role="user", content="Where to?")]))
    assert [c.delta for c in chunks] == ["Lis", "bon ", "it is."]

    streamed = list(MockLLM().stream_chat([ChatMessage(role="user", content="Echo me")]))
    assert len(streamed) > 1

    texts = [text for _, text in _said(_stored(memory))]
    assert texts[:2] == ["Where to?", "Lisbon it is."]
    assert texts[2] == "Echo me" and texts[3] == (streamed[-1].message.content or "").strip()


def test_an_abandoned_stream_is_not_captured(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    stream = MockLLM(max_tokens=5).stream_chat([ChatMessage(role="user", content="Tell me")])
    next(stream)
    stream.close()
    assert _stored(memory) == []
    assert handler._calls == {}


async def test_an_agent_turn_with_tool_calls_is_captured_once(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    def lookup_weather() -> str:
        """The weather in Porto."""
        return "sunny, 24 degrees"

    llm, script = scripted_llm(TOOL, "It is sunny in Porto.")
    agent = FunctionAgent(llm=llm, tools=[FunctionTool.from_defaults(lookup_weather)])
    assert str(await agent.run("What is the weather in Porto?")) == "It is sunny in Porto."

    assert len(script.calls) == 2  # the tool call, then the answer
    # each call is captured as it ends: the question and the call, then the answer with
    # the call and the tool's result it came from as its sources
    stored = _stored(memory)
    assert _said(stored) == [
        ("user", "What is the weather in Porto?"),
        ("assistant", "[tool call] lookup_weather({})"),
        ("assistant", "It is sunny in Porto."),
    ]
    assert tool_trail(stored[2].sources) == ["lookup_weather({}) → sunny, 24 degrees"]


def test_instrument_tags_override_the_scope(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    llm, _ = scripted_llm("Hi Carol.")
    with instrument_tags({ENTITY_TAG: "carol", SESSION_TAG: "c-9"}):
        llm.chat([ChatMessage(role="user", content="I am Carol.")])
    [said, answer] = _stored(memory, entity_id="carol")
    assert (said.text, said.scope.session_id, answer.text) == ("I am Carol.", "c-9", "Hi Carol.")
    assert memory.list(entity_id="bob") == []


def test_calls_through_the_wrapper_are_captured_once(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    inner, _ = scripted_llm("Noted, green tea.")
    wrapped = MemtrellisLLM(llm=inner, memory=memory, entity_id="bob", mode="fast")
    wrapped.chat([ChatMessage(role="user", content="I drink green tea.")])
    assert _said(_stored(memory)) == [
        ("user", "I drink green tea."),
        ("assistant", "Noted, green tea."),
    ]
    assert handler.captured == 0  # the wrapper captured the turn, the handler skipped it


def test_a_failing_memory_never_breaks_the_call(closed_memory: Memory) -> None:
    handler = MemtrellisEventHandler(memory=closed_memory).attach()
    llm, _ = scripted_llm("Fine.")
    assert llm.chat([ChatMessage(role="user", content="hello")]).message.content == "Fine."
    assert (handler.failures, handler.captured) == (1, 0)


def test_attach_and_detach(memory: Memory) -> None:
    handler = MemtrellisEventHandler(memory=memory, mode="fast")
    llm, _ = scripted_llm("ok")
    handler.attach().attach()  # attaching twice adds it once
    llm.chat([ChatMessage(role="user", content="one")])
    handler.detach()
    llm.chat([ChatMessage(role="user", content="two")])
    assert handler.captured == 1


def test_calls_inside_skip_capture_are_not_captured(
    memory: Memory, handler: MemtrellisEventHandler
) -> None:
    memory.add("Bob's locker is number 12", entity_id="bob")
    llm, script = scripted_llm("Locker 12.")
    engine = RetrieverQueryEngine.from_args(MemoryRetriever(memory, entity_id="bob"), llm=llm)
    with skip_capture():
        assert str(engine.query("Which locker is Bob's?")) == "Locker 12."
    assert "Context information" in (script.calls[0][-1].content or "")  # a templated prompt
    assert handler.captured == 0
    assert [i.text for i in _stored(memory)] == ["Bob's locker is number 12"]
