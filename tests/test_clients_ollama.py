"""memory.register(ollama.Client): the real ollama client over httpx.MockTransport."""

from __future__ import annotations

import pytest

ollama = pytest.importorskip("ollama")

from memtrellis import Memory  # noqa: E402
from memtrellis.context import OPEN_TAG  # noqa: E402
from provider_fakes import OllamaWire, ollama_client  # noqa: E402
from sdk_fakes import captured  # noqa: E402

QUESTION = "Which snack is safe with my peanut allergy?"
MODEL = "llama3.2:3b"


def test_chat_places_context_in_the_system_message(seeded: Memory) -> None:
    wire = OllamaWire("Try hummus with carrots.")
    client = seeded.register(ollama_client(wire))
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
    ]

    response = client.chat(MODEL, messages, options={"temperature": 0})  # positional

    assert isinstance(response, ollama.ChatResponse)
    assert response.message.content == "Try hummus with carrots."
    sent = wire.last
    assert wire.urls[-1] == "http://localhost:11434/api/chat"
    assert sent["model"] == MODEL and sent["options"] == {"temperature": 0}
    system, question = sent["messages"]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n")
    assert OPEN_TAG in system["content"] and "allergic to peanuts" in system["content"]
    assert question == {"role": "user", "content": QUESTION}
    assert messages[0] == {"role": "system", "content": "Be brief."}  # not modified
    items = captured(seeded)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[1].metadata
    assert (meta["provider"], meta["sdk"], meta["api"]) == ("ollama", "ollama", "chat")
    assert meta["endpoint"] == "http://localhost:11434" and meta["model"] == MODEL
    assert meta["usage"] == {"input_tokens": 26, "output_tokens": 4}
    assert meta["sdk_version"]  # from the installed distribution (no __version__)


def test_no_system_message_gets_one_of_its_own(seeded: Memory) -> None:
    wire = OllamaWire("OK")
    client = seeded.register(ollama_client(wire))

    client.chat(model=MODEL, messages=[ollama.Message(role="user", content=QUESTION)])

    system, question = wire.last["messages"]
    assert system["role"] == "system" and "allergic to peanuts" in system["content"]
    assert question == {"role": "user", "content": QUESTION}


def test_chat_stream_is_passed_through_and_captured(seeded: Memory) -> None:
    wire = OllamaWire("Apple slices are safe")
    client = seeded.register(ollama_client(wire))

    chunks = list(
        client.chat(model=MODEL, messages=[{"role": "user", "content": QUESTION}], stream=True)
    )

    assert all(isinstance(c, ollama.ChatResponse) for c in chunks)
    assert "".join(c.message.content for c in chunks) == "Apple slices are safe"
    assert wire.last["stream"] is True
    assert "allergic to peanuts" in wire.last["messages"][0]["content"]
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are safe"]
    meta = items[1].metadata
    assert meta["stream"] is True and meta["complete"] is True
    assert meta["usage"] == {"input_tokens": 26, "output_tokens": 4}


def test_a_stream_left_early_is_captured_with_what_arrived(memory: Memory) -> None:
    wire = OllamaWire("one two three four")
    client = memory.register(ollama_client(wire))

    stream = client.chat(model=MODEL, messages=[{"role": "user", "content": "Count"}], stream=True)
    for chunk in stream:
        if chunk.message.content == " two":
            break
    stream.close()

    items = captured(memory)
    assert [i.text for i in items] == ["Count", "one two"]
    assert items[1].metadata["complete"] is False


def test_tool_calls_streamed_or_not(memory: Memory) -> None:
    call = {"call": "get_weather", "args": {"city": "Porto"}}
    wire = OllamaWire(call, call)
    client = memory.register(ollama_client(wire))

    response = client.chat(model=MODEL, messages=[{"role": "user", "content": "Weather?"}])
    assert response.message.tool_calls[0].function.name == "get_weather"
    list(client.chat(model=MODEL, messages=[{"role": "user", "content": "Rain?"}], stream=True))

    assert [i.text for i in captured(memory)] == [
        "Weather?",
        '[tool call] get_weather({"city": "Porto"})',
        "Rain?",
        '[tool call] get_weather({"city": "Porto"})',
    ]


async def test_async_client_with_and_without_stream(seeded: Memory) -> None:
    wire = OllamaWire("Rice cakes.", "async words here")
    client = seeded.register(ollama_client(wire, asynchronous=True))

    response = await client.chat(model=MODEL, messages=[{"role": "user", "content": QUESTION}])
    assert response.message.content == "Rice cakes."
    assert "allergic to peanuts" in wire.requests[0]["messages"][0]["content"]
    stream = await client.chat(
        model=MODEL, messages=[{"role": "user", "content": "Talk"}], stream=True
    )
    text = "".join([chunk.message.content async for chunk in stream])

    assert text == "async words here"
    assert [i.text for i in captured(seeded)] == [
        QUESTION,
        "Rice cakes.",
        "Talk",
        "async words here",
    ]


async def test_an_async_stream_closed_early_is_captured_at_once(memory: Memory) -> None:
    wire = OllamaWire("one two three four")
    client = memory.register(ollama_client(wire, asynchronous=True))

    stream = await client.chat(
        model=MODEL, messages=[{"role": "user", "content": "Count"}], stream=True
    )
    async for chunk in stream:
        if chunk.message.content == " two":
            break
    await stream.aclose()  # an async generator's own close

    items = captured(memory)
    assert [i.text for i in items] == ["Count", "one two"]
    assert items[1].metadata["complete"] is False


def test_per_call_scope_and_unregister(memory: Memory) -> None:
    wire = OllamaWire("Noted.")
    client = memory.register(ollama_client(wire), entity_id="alice")

    with memory.scope(entity_id="bob"):
        client.chat(model=MODEL, messages=[{"role": "user", "content": "I like jazz."}])
    assert [i.text for i in captured(memory, entity_id="bob")] == ["I like jazz.", "Noted."]
    assert captured(memory, entity_id="alice") == []

    assert memory.unregister(client) is True
    assert "chat" not in vars(client)
    client.chat(model=MODEL, messages=[{"role": "user", "content": "I like jazz."}])
    assert wire.last["messages"] == [{"role": "user", "content": "I like jazz."}]
    assert len(captured(memory, entity_id="bob")) == 2


def test_named_registration(seeded: Memory) -> None:
    wire = OllamaWire("OK")
    client = seeded.register(ollama=ollama_client(wire))

    client.chat(model=MODEL, messages=[{"role": "user", "content": QUESTION}])

    assert "allergic to peanuts" in wire.last["messages"][0]["content"]
