"""memory.register(OpenAI client): the real openai SDK over a mock transport, real Chroma."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from sdk_fakes import (
    CHAT_MODEL,
    OPENAI_KEY,
    RESPONSES_MODEL,
    ScriptedModel,
    Snack,
    captured,
    openai_client,
)

QUESTION = "Which snack is safe with my peanut allergy?"


def test_chat_completion_places_context_and_captures_the_turn(seeded: Memory) -> None:
    model = ScriptedModel("Try hummus with carrots.")
    client = openai_client(model)
    assert seeded.register(client) is client

    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": QUESTION},
    ]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=history)

    assert isinstance(reply, openai.types.chat.ChatCompletion)
    assert reply.choices[0].message.content == "Try hummus with carrots."
    sent = model.last
    assert set(sent) == {"model", "messages"}  # nothing the API would reject
    system = sent["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n")
    assert OPEN_TAG in system["content"] and "allergic to peanuts" in system["content"]
    assert sent["messages"][1:] == history[1:]
    assert history[0] == {"role": "system", "content": "Be brief."}  # the caller's list untouched

    items = captured(seeded)
    # only what is new: the last user message and the reply, no history, no memory context
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[0].metadata
    assert meta["provider"] == "openai" and meta["api"] == "chat.completions"
    assert meta["model"] == CHAT_MODEL and meta["sdk_version"] == openai.__version__
    assert meta["usage"] == {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    assert meta["stream"] is False and meta["complete"] is True and meta["latency_ms"] >= 0
    assert not any(OPEN_TAG in i.text for i in seeded.list())
    health = seeded.health()
    assert (health.client_calls, health.client_captures) == (1, 1)


def test_without_a_system_message_one_is_inserted(seeded: Memory) -> None:
    model = ScriptedModel("Hummus.")
    client = seeded.register(openai_client(model))

    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}]
    )

    roles = [m["role"] for m in model.last["messages"]]
    assert roles == ["system", "user"]
    assert "allergic to peanuts" in model.last["messages"][0]["content"]


async def test_async_chat_completion(seeded: Memory) -> None:
    model = ScriptedModel("Rice cakes are fine.")
    client = seeded.register(openai_client(model, asynchronous=True))

    reply = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}]
    )

    assert reply.choices[0].message.content == "Rice cakes are fine."
    assert "allergic to peanuts" in model.last["messages"][0]["content"]
    assert [i.text for i in captured(seeded)] == [QUESTION, "Rice cakes are fine."]


def test_stream_is_passed_through_and_captured_at_its_end(seeded: Memory) -> None:
    model = ScriptedModel("Apple slices are a safe snack")
    client = seeded.register(openai_client(model))

    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    assert isinstance(stream, openai.Stream)
    chunks = list(stream)

    assert all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Apple slices are a safe snack"
    assert set(model.last) == {"model", "messages", "stream", "stream_options"}
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are a safe snack"]
    meta = items[1].metadata
    assert meta["stream"] is True and meta["complete"] is True
    assert meta["usage"]["total_tokens"] == 49


@pytest.mark.parametrize("how", ["break", "close", "with"])
def test_a_stream_left_early_is_captured_with_what_arrived(memory: Memory, how: str) -> None:
    model = ScriptedModel("one two three four five")
    client = memory.register(openai_client(model))
    args: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Count to five"}],
        "stream": True,
    }

    stream = client.chat.completions.create(**args)
    received = []
    if how == "with":
        with stream:
            for chunk in stream:
                received.append(chunk)
                if len(received) == 3:
                    break
    else:
        for chunk in stream:
            received.append(chunk)
            if len(received) == 3:
                break
        if how == "close":
            stream.close()

    items = captured(memory)
    assert [i.text for i in items] == ["Count to five", "one two"]
    assert items[1].metadata["complete"] is False


async def test_async_stream_full_and_closed_early(memory: Memory) -> None:
    model = ScriptedModel("alpha beta gamma", "delta epsilon zeta")
    client = memory.register(openai_client(model, asynchronous=True))

    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Say three words"}], stream=True
    )
    assert isinstance(stream, openai.AsyncStream)
    texts = [c.choices[0].delta.content async for c in stream if c.choices]
    assert "".join(t or "" for t in texts) == "alpha beta gamma"

    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Three more"}], stream=True
    )
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content == "delta":
            break
    await stream.close()

    items = captured(memory)
    assert [i.text for i in items] == [
        "Say three words",
        "alpha beta gamma",
        "Three more",
        "delta",
    ]
    assert [items[1].metadata["complete"], items[3].metadata["complete"]] == [True, False]


def test_parse_with_a_pydantic_response_format(seeded: Memory) -> None:
    model = ScriptedModel('{"name": "hummus", "safe": true}')
    client = seeded.register(openai_client(model))

    completion = client.chat.completions.parse(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": QUESTION}],
        response_format=Snack,
    )

    assert completion.choices[0].message.parsed == Snack(name="hummus", safe=True)
    # parse() itself sends "stream": false; memtrellis adds no field
    assert set(model.last) == {"model", "messages", "response_format", "stream"}
    assert model.last["response_format"]["type"] == "json_schema"
    assert "allergic to peanuts" in model.last["messages"][0]["content"]
    assert [i.text for i in captured(seeded)] == [QUESTION, '{"name": "hummus", "safe": true}']


def test_responses_api_places_context_in_instructions(seeded: Memory) -> None:
    model = ScriptedModel("Pretzels are peanut-free.")
    client = seeded.register(openai_client(model))

    response = client.responses.create(
        model="gpt-4.1-mini", instructions="Answer in one line.", input=QUESTION
    )

    assert response.output_text == "Pretzels are peanut-free."
    sent = model.last
    assert set(sent) == {"model", "instructions", "input"}
    assert sent["input"] == QUESTION
    assert sent["instructions"].startswith("Answer in one line.\n\n")
    assert "allergic to peanuts" in sent["instructions"]
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Pretzels are peanut-free."]
    assert items[0].metadata["api"] == "responses"
    assert items[0].metadata["model"] == RESPONSES_MODEL
    assert items[0].metadata["usage"] == {
        "input_tokens": 30,
        "output_tokens": 6,
        "total_tokens": 36,
    }


def test_responses_api_stream_and_message_list_input(memory: Memory) -> None:
    model = ScriptedModel("Noted, Lisbon it is")
    client = memory.register(openai_client(model))
    given = [
        {"role": "user", "content": "Where should I go?"},
        {"role": "assistant", "content": "Anywhere warm?"},
        {"role": "user", "content": [{"type": "input_text", "text": "I moved to Lisbon"}]},
    ]

    events = list(client.responses.create(model="gpt-4.1-mini", input=given, stream=True))

    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "Noted, Lisbon it is"
    assert "instructions" not in model.last  # nothing recalled: nothing added
    items = captured(memory)
    assert [i.text for i in items] == ["I moved to Lisbon", "Noted, Lisbon it is"]
    assert items[1].metadata["usage"]["total_tokens"] == 36


def test_the_stream_helpers_get_memory_through_create(seeded: Memory) -> None:
    model = ScriptedModel("helper words", "more helper words")
    client = seeded.register(openai_client(model))

    with client.chat.completions.stream(
        model="gpt-4o-mini", messages=[{"role": "user", "content": QUESTION}]
    ) as stream:
        kinds = {event.type for event in stream}
        final = stream.get_final_completion()
    with client.responses.stream(model="gpt-4.1-mini", input="Tell me more") as events:
        response = events.get_final_response()

    assert "content.delta" in kinds and final.choices[0].message.content == "helper words"
    assert response.output_text == "more helper words"
    assert "allergic to peanuts" in model.bodies[0]["messages"][0]["content"]
    assert [i.text for i in captured(seeded)] == [
        QUESTION,
        "helper words",
        "Tell me more",
        "more helper words",
    ]


@pytest.mark.parametrize(
    ("base_url", "provider", "endpoint"),
    [
        ("https://api.deepseek.com/v1", "deepseek", "https://api.deepseek.com"),
        ("https://api.x.ai/v1", "xai", "https://api.x.ai"),
        ("https://api.groq.com/openai/v1", "groq", "https://api.groq.com"),
        ("http://localhost:11434/v1", "ollama", "http://localhost:11434"),
        ("http://127.0.0.1:8000/v1", "vllm", "http://127.0.0.1:8000"),
        ("http://localhost:8080/v1", "llama.cpp", "http://localhost:8080"),
        # credentials in the address never reach the store
        (
            f"https://bot:{OPENAI_KEY}@llm.internal.example:9443/v1",
            "openai-compatible",
            "https://llm.internal.example:9443",
        ),
    ],
)
def test_openai_compatible_servers_are_attributed_to_their_provider(
    seeded: Memory, base_url: str, provider: str, endpoint: str
) -> None:
    model = ScriptedModel("Hummus is safe.")
    client = seeded.register(
        openai.OpenAI(
            api_key=OPENAI_KEY,
            base_url=base_url,
            http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
            max_retries=0,
        )
    )
    reply = client.chat.completions.create(
        model="deepseek-chat", messages=[{"role": "user", "content": QUESTION}]
    )
    assert reply.choices[0].message.content == "Hummus is safe."
    [request] = model.requests
    assert request.url.host == base_url.split("@")[-1].split("//")[-1].split("/")[0].split(":")[0]
    assert "allergic to peanuts" in model.last["messages"][0]["content"]  # memory placed

    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Hummus is safe."]
    meta = items[0].metadata
    assert (meta["provider"], meta["sdk"], meta["endpoint"]) == (provider, "openai", endpoint)
    assert meta["api"] == "chat.completions"
    stored = json.dumps([i.model_dump(mode="json") for i in seeded.list()])
    assert OPENAI_KEY not in stored and "bot:" not in stored
