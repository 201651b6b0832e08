"""ChatMemoryWrapper: memory context before the inner model, capture after, on every path."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from memtrellis import Memory, StoreClosedError
from memtrellis.context import OPEN_TAG
from pydantic import BaseModel

from fakes import BrokenStreamChat, FakeChat, reply, texts
from langchain_memtrellis import (
    AsyncMemoryCallbackHandler,
    ChatMemoryWrapper,
    MemoryCallbackHandler,
)


@pytest.fixture
def remembered(memory: Memory) -> Memory:
    memory.add("Alice is allergic to peanuts")
    memory.add("Alice's sister Clara lives in Lisbon")
    return memory


def test_invoke_places_context_and_captures_the_turn(remembered: Memory) -> None:
    inner = FakeChat(messages=iter(["Try apple slices."]))
    chat = ChatMemoryWrapper(inner, memory=remembered)
    sent = [SystemMessage("Be brief."), HumanMessage("Which snack is safe for my peanuts allergy?")]

    answer = chat.invoke(sent)

    assert answer.content == "Try apple slices."
    system = inner.sent()[0]
    assert system.content.startswith("Be brief.\n\n" + OPEN_TAG)
    assert "Alice is allergic to peanuts" in system.content
    assert inner.sent()[1:] == sent[1:]
    assert sent[0].content == "Be brief."  # the caller's messages are left alone
    stored = texts(remembered)
    assert "Which snack is safe for my peanuts allergy?" in stored
    assert "Try apple slices." in stored
    assert not any(OPEN_TAG in text or text == "Be brief." for text in stored)
    assert chat.stats.as_dict() == {
        "recalls": 1,
        "placed": 1,
        "captured": 1,
        "recall_failures": 0,
        "capture_failures": 0,
    }


def test_only_the_new_part_of_a_conversation_is_captured(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["second answer"]))
    chat = ChatMemoryWrapper(inner, memory=memory, position="insert")
    history = [HumanMessage("first question"), AIMessage("first answer")]

    chat.invoke([*history, HumanMessage("second question")])

    assert sorted(texts(memory)) == ["second answer", "second question"]


async def test_ainvoke_places_and_captures(remembered: Memory) -> None:
    inner = FakeChat(messages=iter(["Clara is in Lisbon."]))
    chat = ChatMemoryWrapper(inner, memory=remembered)

    answer = await chat.ainvoke("Where does my sister Clara live?")

    assert answer.content == "Clara is in Lisbon."
    assert "Clara lives in Lisbon" in inner.sent()[0].content
    assert "Clara is in Lisbon." in texts(remembered)


def test_stream_yields_the_inner_chunks_and_captures_the_whole_answer(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["one two three"]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    chunks = [chunk.content for chunk in chat.stream("count to three")]

    assert "".join(chunks) == "one two three"
    assert "one two three" in texts(memory)


async def test_astream_captures_the_whole_answer(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["four five"]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    chunks = [chunk.content async for chunk in chat.astream("count on")]

    assert "".join(chunks) == "four five"
    assert "four five" in texts(memory)


def test_early_break_of_a_stream_captures_what_was_received(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["alpha beta gamma"]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    for chunk in chat.stream("say three words"):
        assert chunk.content == "alpha"
        break

    stored = texts(memory)
    assert "say three words" in stored
    assert "alpha" in stored
    assert not any("gamma" in text for text in stored)


async def test_early_break_of_an_async_stream_captures_what_was_received(
    memory: Memory,
) -> None:
    inner = FakeChat(messages=iter(["delta epsilon zeta"]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    async with contextlib.aclosing(chat.astream("say three more")) as stream:
        async for _ in stream:
            break
    # The inner generator is closed by the loop's async-generator finaliser.
    for _ in range(200):
        if chat.stats.captured:
            break
        await asyncio.sleep(0.01)

    stored = texts(memory)
    assert "delta" in stored
    assert not any("zeta" in text for text in stored)


def test_an_error_mid_stream_reaches_the_caller_and_the_partial_turn_is_kept(
    memory: Memory,
) -> None:
    chat = ChatMemoryWrapper(BrokenStreamChat(messages=iter(["partial answer"])), memory=memory)

    received = []
    with pytest.raises(ConnectionError):
        for chunk in chat.stream("tell me something"):
            received.append(chunk.content)

    assert received == ["partial"]
    assert {"tell me something", "partial"} <= set(texts(memory))


def test_bound_tools_reach_the_inner_model_with_memory_in_the_path(remembered: Memory) -> None:
    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    inner = FakeChat(messages=iter([reply(name="weather", args={"city": "Lisbon"})]))
    chat = ChatMemoryWrapper(inner, memory=remembered)

    answer = chat.bind_tools([weather], tool_choice="any").invoke("Weather where Clara lives?")

    assert answer.tool_calls[0]["args"] == {"city": "Lisbon"}
    sent, kwargs = inner.calls[-1]
    assert kwargs["tools"][0]["function"]["name"] == "weather"
    assert kwargs["tool_choice"] == "any"
    assert "Clara lives in Lisbon" in sent[0].content
    assert "Weather where Clara lives?" in texts(remembered)


class City(BaseModel):
    """A city."""

    name: str


def test_structured_output_goes_through_memory(remembered: Memory) -> None:
    inner = FakeChat(messages=iter([reply(name="City", args={"name": "Lisbon"})] * 2))
    chat = ChatMemoryWrapper(inner, memory=remembered)

    assert chat.with_structured_output(City).invoke("Where is Clara?") == City(name="Lisbon")
    raw = chat.with_structured_output(City, include_raw=True).invoke("Where is Clara now?")

    assert raw["parsed"] == City(name="Lisbon")
    assert isinstance(raw["raw"], AIMessage)
    assert all("Clara lives in Lisbon" in sent[0].content for sent, _ in inner.calls)
    assert {"Where is Clara?", "Where is Clara now?"} <= set(texts(remembered))


def test_batch_runs_each_input_through_memory(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["a1", "a2", "a3"]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    answers = chat.batch(["q1", "q2", "q3"])

    assert sorted(a.content for a in answers) == ["a1", "a2", "a3"]
    assert chat.stats.captured == 3
    assert {"q1", "q2", "q3", "a1", "a2", "a3"} <= set(texts(memory))


async def test_fifty_parallel_calls_lose_no_capture(memory: Memory) -> None:
    inner = FakeChat(messages=iter([f"answer {i}" for i in range(50)]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    answers = await asyncio.gather(*(chat.ainvoke(f"question {i}") for i in range(50)))

    assert len({a.content for a in answers}) == 50
    assert memory.flush(60)
    stored = set(texts(memory))
    assert {f"question {i}" for i in range(50)} <= stored
    assert {f"answer {i}" for i in range(50)} <= stored


def test_scope_comes_from_run_metadata(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["hi bob", "hi bob again", "hi carol"]))
    chat = ChatMemoryWrapper(inner, memory=memory, session_id="s-default")
    for_bob = {"metadata": {"memtrellis_entity_id": "bob", "memtrellis_session_id": "s-9"}}

    chat.invoke("hello, I am bob", config=for_bob)
    list(chat.stream("bob streams", config=for_bob))
    chat.invoke("hello, I am carol", config={"metadata": {"memtrellis_entity_id": "carol"}})

    assert memory.flush(30)
    bob = memory.list(entity_id="bob")
    assert sorted(i.text for i in bob) == [
        "bob streams",
        "hello, I am bob",
        "hi bob",
        "hi bob again",
    ]
    assert {i.scope.session_id for i in bob} == {"s-9"}
    carol = memory.list(entity_id="carol")
    assert {i.scope.session_id for i in carol} == {"s-default"}
    assert memory.list(entity_id="alice") == []


def test_memory_failures_never_break_the_call(tmp_path: Path) -> None:
    from memtrellis.testing import HashingEmbedder

    memory = Memory(tmp_path / "s", embedder=HashingEmbedder())
    memory.close()  # every recall and capture now fails
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["still here"])), memory=memory)

    assert chat.invoke("are you there?").content == "still here"
    assert chat.stats.recall_failures == 1
    assert chat.stats.capture_failures == 1


def _broken(*args: object, **kwargs: object) -> None:
    raise RuntimeError("memory is down")


@pytest.mark.parametrize("what", ["recall", "capture"])
def test_a_failed_recall_or_capture_shows_in_memory_health(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    monkeypatch.setattr(memory, what, _broken)
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["still here"])), memory=memory)

    assert chat.invoke("are you there?").content == "still here"

    health = memory.health()
    assert health.adapter_failures == {f"langchain.{what}": 1}
    assert (health.adapter_recall_failures, health.adapter_capture_failures) == (
        (1, 0) if what == "recall" else (0, 1)
    )
    assert chat.stats.as_dict()[f"{what}_failures"] == 1  # the adapter's own count is kept


def test_a_failed_context_rendering_shows_in_memory_health(
    remembered: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memtrellis.binding.build_context", _broken)  # the one renderer
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["still here"])), memory=remembered)

    assert chat.invoke("Any allergies?").content == "still here"

    assert remembered.health().adapter_failures == {"langchain.context": 1}
    assert chat.stats.recall_failures == 1  # for the adapter, the call went without recall


def test_strict_failures_are_counted_before_they_are_raised(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "recall", _broken)
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["x"])), memory=memory, strict=True)

    with pytest.raises(RuntimeError, match="memory is down"):
        chat.invoke("are you there?")
    assert memory.health().adapter_recall_failures == 1


async def test_a_callback_handlers_failed_capture_shows_in_memory_health(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "acapture", _abroken)
    handler = AsyncMemoryCallbackHandler(memory)
    chat = FakeChat(messages=iter(["Noted."]))

    reply = await chat.ainvoke("I drink oat milk", config={"callbacks": [handler]})

    assert reply.content == "Noted."
    assert memory.health().adapter_failures == {"langchain.capture": 1}
    assert handler.stats.capture_failures == 1


async def _abroken(*args: object, **kwargs: object) -> None:
    raise RuntimeError("memory is down")


def test_strict_raises_memory_failures(tmp_path: Path) -> None:
    from memtrellis.testing import HashingEmbedder

    memory = Memory(tmp_path / "s", embedder=HashingEmbedder())
    memory.close()
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["x"])), memory=memory, strict=True)

    with pytest.raises(StoreClosedError):
        chat.invoke("are you there?")


def test_standard_params_reach_the_inner_model(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["ok"]), fail_first=2)
    chat = ChatMemoryWrapper(
        llm=inner,
        memory=memory,
        temperature=0.2,
        max_tokens=50,
        timeout=9.0,
        stop=["END"],
        max_retries=2,
    )

    assert chat.invoke("hi").content == "ok"

    assert len(inner.calls) == 3  # two failures retried
    assert inner.calls[-1][1] == {"temperature": 0.2, "max_tokens": 50, "timeout": 9.0}
    params = chat._get_ls_params()
    assert (params["ls_temperature"], params["ls_max_tokens"], params["ls_stop"]) == (
        0.2,
        50,
        ["END"],
    )


def test_a_callback_handler_does_not_capture_the_wrappers_turns_twice(memory: Memory) -> None:
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["once"])), memory=memory)
    handler = MemoryCallbackHandler(memory)

    chat.invoke("only once please", config={"callbacks": [handler]})

    assert sorted(texts(memory)) == ["once", "only once please"]
    assert handler.stats.captured == 0


def test_without_memory_argument_the_default_store_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_memtrellis import _defaults

    monkeypatch.setenv("MEMTRELLIS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(_defaults, "_memory", None)
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["stored by default"])))
    try:
        chat.invoke("remember this by default")
        assert chat.memory.path == tmp_path / "home"
        assert "stored by default" in texts(chat.memory)
        assert ChatMemoryWrapper(FakeChat(messages=iter([]))).memory is chat.memory
    finally:
        chat.memory.close()
