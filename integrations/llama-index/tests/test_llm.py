"""MemtrellisLLM: memory context placed, turns captured, everything else delegated."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes import TOOL, GatedEmbedder, scripted_llm
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.tools import FunctionTool
from memtrellis import InvalidInputError, Memory, MemoryItem, StoreClosedError

from llama_index.memory.memtrellis import MemtrellisLLM


def _stored(memory: Memory) -> list[tuple[str | None, str]]:
    assert memory.flush(timeout=60)
    items: list[MemoryItem] = memory.list(limit=1000)
    return [(i.sources[0].role if i.sources else None, i.text) for i in items]


def _question() -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="Which snack should I bring for Alice?"),
    ]


def test_chat_places_memory_context_and_captures_the_turn(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts", memory_type="fact")
    inner, script = scripted_llm("Apple slices.")
    llm = MemtrellisLLM(llm=inner, memory=memory, mode="fast")
    messages = _question()

    assert llm.chat(messages).message.content == "Apple slices."

    sent = script.system_text()
    assert sent.startswith("Be brief.") and "<memory_context>" in sent
    assert "Alice is allergic to peanuts" in sent
    assert messages[0].content == "Be brief."  # the caller's messages are left alone
    stored = _stored(memory)
    assert stored[1:] == [
        ("user", "Which snack should I bring for Alice?"),
        ("assistant", "Apple slices."),
    ]
    assert not any("memory_context" in text for _, text in stored)


def test_a_system_message_is_inserted_when_there_is_none(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    inner, script = scripted_llm("ok")
    MemtrellisLLM(llm=inner, memory=memory).chat([_question()[1]])
    assert script.calls[0][0].role == "system"
    assert script.calls[0][0].content.startswith("<memory_context>")  # type: ignore[union-attr]
    assert script.calls[0][1].content == "Which snack should I bring for Alice?"


async def test_achat_recalls_off_the_event_loop(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    with Memory(tmp_path / "s", embedder=embedder) as memory:
        memory.add("Alice is allergic to peanuts")
        inner, script = scripted_llm("Apple slices.")
        llm = MemtrellisLLM(llm=inner, memory=memory, strict=True, mode="fast")
        embedder.close_gate()
        response, _ = await asyncio.gather(llm.achat(_question()), embedder.open_gate())
        assert response.message.content == "Apple slices."
        assert "allergic to peanuts" in script.system_text()
        assert ("assistant", "Apple slices.") in _stored(memory)


def test_stream_chat_relays_chunks_and_captures_at_the_end(memory: Memory) -> None:
    inner, _ = scripted_llm()
    pieces = [ChatMessage(role="assistant", content=p) for p in ("Apple ", "slices.")]
    inner.response_generator = lambda messages, **kw: iter(pieces)
    llm = MemtrellisLLM(llm=inner, memory=memory, mode="fast")

    stream = llm.stream_chat(_question())
    assert next(stream).delta == "Apple "
    assert _stored(memory) == []  # nothing before the stream ends
    assert [c.delta for c in stream] == ["slices."]
    assert _stored(memory) == [
        ("user", "Which snack should I bring for Alice?"),
        ("assistant", "Apple slices."),
    ]


async def test_astream_chat_relays_chunks_and_captures_at_the_end(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    llm = MemtrellisLLM(llm=MockLLM(), memory=memory, mode="fast")
    chunks = [c async for c in await llm.astream_chat(_question())]
    reply = chunks[-1].message.content or ""
    assert "allergic to peanuts" in reply  # MockLLM streams its prompt back
    stored = _stored(memory)
    assert stored[-2] == ("user", "Which snack should I bring for Alice?")
    # The echoed memory context is taken out of the captured reply.
    assert "memory_context" not in stored[-1][1] and stored[-1][0] == "assistant"


async def test_an_abandoned_stream_is_not_captured(memory: Memory) -> None:
    llm = MemtrellisLLM(llm=MockLLM(), memory=memory, mode="fast")
    stream = llm.stream_chat(_question())
    next(stream)
    stream.close()
    astream = await llm.astream_chat(_question())
    await astream.__anext__()
    await astream.aclose()
    assert _stored(memory) == []


async def test_tool_calling_agent_through_the_wrapper(memory: Memory) -> None:
    memory.add("Alice lives in Porto", memory_type="fact")
    calls: list[str] = []

    def lookup_weather() -> str:
        """Today's weather where the user lives."""
        calls.append("weather")
        return "sunny"

    inner, script = scripted_llm(TOOL, "Sunny in Porto today.")
    llm = MemtrellisLLM(llm=inner, memory=memory, mode="fast")
    agent = FunctionAgent(llm=llm, tools=[FunctionTool.from_defaults(lookup_weather)])
    answer = await agent.run("What's the weather where Alice lives?")

    assert str(answer) == "Sunny in Porto today." and calls == ["weather"]
    assert all("Alice lives in Porto" in script.system_text(i) for i in range(2))
    assert _stored(memory)[1:] == [
        ("user", "What's the weather where Alice lives?"),
        ("assistant", "[tool call] lookup_weather({})"),  # captured with its call
        ("assistant", "Sunny in Porto today."),
    ]
    answer = memory.list(limit=10)[-1]
    assert [s.kind.value for s in answer.sources] == ["chat", "tool_call", "tool_result"]
    assert answer.sources[2].content == "sunny"


def test_predict_and_call_uses_the_wrapped_llms_tools(memory: Memory) -> None:
    def add(a: int = 2, b: int = 3) -> int:
        """Add two numbers."""
        return a + b

    inner, _ = scripted_llm(TOOL)
    llm = MemtrellisLLM(llm=inner, memory=memory)
    assert llm.metadata.is_function_calling_model
    result = llm.predict_and_call([FunctionTool.from_defaults(add)], user_msg="2+3?")
    assert result.response == "5"


def test_tool_calling_needs_a_function_calling_llm(memory: Memory) -> None:
    llm = MemtrellisLLM(llm=MockLLM(), memory=memory)
    with pytest.raises(InvalidInputError, match="tool calling"):
        llm.chat_with_tools([], user_msg="hi")


def test_completions_pass_through_without_memory(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    llm = MemtrellisLLM(llm=MockLLM(), memory=memory)
    assert llm.complete("peanuts").text == "peanuts"
    assert _stored(memory) == [(None, "Alice is allergic to peanuts")]


def test_memory_failures_never_break_the_call(closed_memory: Memory) -> None:
    inner, script = scripted_llm("Still answering.")
    llm = MemtrellisLLM(llm=inner, memory=closed_memory)
    assert llm.chat(_question()).message.content == "Still answering."
    assert script.calls[0][0].content == "Be brief."  # no memory context, nothing else lost
    assert llm.failures == 2  # recall and capture


def test_strict_raises_memory_failures_before_calling_the_model(closed_memory: Memory) -> None:
    inner, script = scripted_llm("unused")
    llm = MemtrellisLLM(llm=inner, memory=closed_memory, strict=True)
    with pytest.raises(StoreClosedError):
        llm.chat(_question())
    assert script.calls == []


def test_recall_and_capture_can_be_turned_off(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    inner, script = scripted_llm("ok")
    MemtrellisLLM(llm=inner, memory=memory, recall=False, capture=False).chat(_question())
    assert script.system_text() == "Be brief."
    assert len(_stored(memory)) == 1
