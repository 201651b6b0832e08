"""ChatMemoryWrapper around runnable chat models: ``.bind``, ``.with_retry()``,
``.with_fallbacks()`` and a configurable ``init_chat_model``; structured answers captured."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.chat_models import base as chat_models_base
from langchain.chat_models import init_chat_model
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from memtrellis import InvalidInputError, Memory
from pydantic import BaseModel

from fakes import FakeChat, StreamingChat, reply, texts
from langchain_memtrellis import ChatMemoryWrapper


@pytest.fixture
def remembered(memory: Memory) -> Memory:
    memory.add("Alice's sister Clara lives in Lisbon")
    return memory


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


class City(BaseModel):
    """A city."""

    name: str
    country: str


def test_a_bound_model_keeps_its_arguments(remembered: Memory) -> None:
    inner = FakeChat(messages=iter(["Clara is in Lisbon.", "Sunny."]))
    chat = ChatMemoryWrapper(inner.bind(stop=["END"], temperature=0.3), memory=remembered)

    assert chat.invoke("Where does my sister Clara live?").content == "Clara is in Lisbon."
    sent, kwargs = inner.calls[-1]
    assert kwargs == {"temperature": 0.3}  # stop reaches _generate as its own argument
    assert "Clara lives in Lisbon" in sent[0].content

    answer = chat.bind_tools([weather]).invoke("Weather where Clara lives?")
    assert answer.content == "Sunny."
    assert inner.calls[-1][1]["tools"][0]["function"]["name"] == "weather"
    assert inner.calls[-1][1]["temperature"] == 0.3  # the binding is kept around the tools
    assert {"Clara is in Lisbon.", "Weather where Clara lives?", "Sunny."} <= set(texts(remembered))


def test_a_model_with_retry_is_retried_with_memory_in_each_attempt(remembered: Memory) -> None:
    inner = FakeChat(messages=iter(["Lisbon."]), fail_first=2)
    chat = ChatMemoryWrapper(inner.with_retry(stop_after_attempt=3), memory=remembered)

    assert chat.invoke("Where does Clara live?").content == "Lisbon."

    assert len(inner.calls) == 3
    assert all("Clara lives in Lisbon" in sent[0].content for sent, _ in inner.calls)
    assert chat.stats.captured == 1


def test_fallbacks_answer_with_memory_in_the_prompt(remembered: Memory) -> None:
    down = FakeChat(messages=iter([]), fail_first=5)
    backup = StreamingChat(messages=iter(["From the backup: Lisbon.", "Backup streams."]))
    chat = ChatMemoryWrapper(down.with_fallbacks([backup]), memory=remembered)

    assert chat.invoke("Where does Clara live?").content == "From the backup: Lisbon."
    assert "Clara lives in Lisbon" in backup.sent()[0].content
    assert "".join(c.content for c in chat.stream("Stream where Clara lives")) == (
        "Backup streams."
    )
    assert {"From the backup: Lisbon.", "Backup streams."} <= set(texts(remembered))


def test_fallbacks_get_the_tools_each(remembered: Memory) -> None:
    down = FakeChat(messages=iter([]), fail_first=5)
    backup = FakeChat(messages=iter([reply(name="weather", args={"city": "Lisbon"})]))
    chat = ChatMemoryWrapper(down.with_fallbacks([backup]), memory=remembered)

    answer = chat.bind_tools([weather]).invoke("Weather where Clara lives?")

    assert answer.tool_calls[0]["args"] == {"city": "Lisbon"}
    assert down.calls[0][1]["tools"] == backup.calls[0][1]["tools"]
    assert "Clara lives in Lisbon" in backup.sent()[0].content


@pytest.fixture
def scripted_provider(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeChat]:
    """``init_chat_model`` builds scripted models by name instead of a provider's."""
    models = {
        "scripted-a": FakeChat(messages=iter(["from a"])),
        "scripted-b": StreamingChat(messages=iter(["from b", "b streams", "b again"])),
    }

    def creator(provider: str) -> Any:
        return lambda model, **kwargs: models[model]

    monkeypatch.setattr(chat_models_base, "_get_chat_model_creator", creator)
    return models


def test_a_configurable_model_is_chosen_per_call(
    remembered: Memory, scripted_provider: dict[str, FakeChat]
) -> None:
    configurable = init_chat_model(
        "scripted-a", model_provider="openai", configurable_fields=("model",)
    )
    chat = ChatMemoryWrapper(configurable, memory=remembered)
    pick_b = {"configurable": {"model": "scripted-b"}}

    assert chat.invoke("Where does Clara live?").content == "from a"
    assert chat.invoke("Where does Clara live, b?", config=pick_b).content == "from b"
    streamed = "".join(c.content for c in chat.stream("Stream where Clara lives", config=pick_b))

    assert streamed == "b streams"
    b = scripted_provider["scripted-b"]
    assert all("Clara lives in Lisbon" in sent[0].content for sent, _ in b.calls)
    answer = chat.bind_tools([weather]).invoke("Where does Clara live, again?", config=pick_b)
    assert answer.content == "b again"
    assert b.calls[-1][1]["tools"][0]["function"]["name"] == "weather"
    assert {"from a", "from b", "b streams", "b again"} <= set(texts(remembered))


def test_structured_output_of_a_configurable_model_says_what_to_do(
    memory: Memory, scripted_provider: dict[str, FakeChat]
) -> None:
    configurable = init_chat_model(
        "scripted-a", model_provider="openai", configurable_fields=("model",)
    )

    with pytest.raises(InvalidInputError, match="choose the model first"):
        ChatMemoryWrapper(configurable, memory=memory).with_structured_output(City)


def test_something_that_is_not_a_runnable_is_refused(memory: Memory) -> None:
    with pytest.raises(ValueError, match="chat model or a runnable around one"):
        ChatMemoryWrapper("gpt-4o", memory=memory)  # type: ignore[arg-type]


# -- structured answers are captured -----------------------------------------------------


def test_a_structured_answer_is_captured_as_readable_text(remembered: Memory) -> None:
    call = reply(name="City", args={"name": "Lisbon", "country": "Portugal"})
    inner = FakeChat(messages=iter([call, call]))
    chat = ChatMemoryWrapper(inner, memory=remembered)

    answer = chat.with_structured_output(City).invoke("Which city does Clara live in?")
    raw = chat.with_structured_output(City, include_raw=True).invoke("And Clara's city now?")

    assert answer == City(name="Lisbon", country="Portugal")
    assert raw["parsed"] == answer and isinstance(raw["raw"], AIMessage)
    stored = texts(remembered)
    assert stored.count("City (name: Lisbon; country: Portugal)") == 2
    assert {"Which city does Clara live in?", "And Clara's city now?"} <= set(stored)
    assert chat.invoke is not None and chat._structured is False  # the wrapper itself is plain


def test_a_streamed_structured_answer_is_captured(memory: Memory) -> None:
    call = reply(name="City", args={"name": "Faro", "country": "Portugal"})
    chat = ChatMemoryWrapper(StreamingChat(messages=iter([call])), memory=memory)

    parts = list(chat.with_structured_output(City).stream("A city in the south?"))

    assert parts[-1] == City(name="Faro", country="Portugal")
    assert sorted(texts(memory)) == ["A city in the south?", "City (name: Faro; country: Portugal)"]
