"""memory.register(google.genai.Client): the real google-genai SDK over httpx.MockTransport."""

from __future__ import annotations

import pytest

genai = pytest.importorskip("google.genai")

from google.genai import types  # noqa: E402

from memtrellis import Memory  # noqa: E402
from memtrellis.clients import registration_of  # noqa: E402
from memtrellis.context import OPEN_TAG  # noqa: E402
from provider_fakes import GEMINI_MODEL, GOOGLE_KEY, GoogleWire, google_client, store_bytes  # noqa: E402
from sdk_fakes import captured  # noqa: E402

QUESTION = "Which snack is safe with my peanut allergy?"
MODEL = "gemini-2.5-flash"


def _system_text(sent: dict) -> str:
    return "\n".join(p["text"] for p in sent["systemInstruction"]["parts"])


def test_generate_content_places_context_in_system_instruction(seeded: Memory) -> None:
    wire = GoogleWire("Try hummus with carrots.")
    client = seeded.register(google_client(wire))

    response = client.models.generate_content(
        model=MODEL, contents=QUESTION, config={"system_instruction": "Be brief.", "seed": 7}
    )

    assert isinstance(response, types.GenerateContentResponse)
    assert response.text == "Try hummus with carrots."
    sent = wire.last
    assert wire.urls[-1].endswith(f"/models/{MODEL}:generateContent")
    assert sent["contents"] == [{"role": "user", "parts": [{"text": QUESTION}]}]
    system = _system_text(sent)
    assert system.startswith("Be brief.\n\n") and OPEN_TAG in system
    assert "allergic to peanuts" in system
    assert sent["generationConfig"] == {"seed": 7}
    items = captured(seeded)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[1].metadata
    assert (meta["provider"], meta["sdk"], meta["api"]) == ("google", "google", "models")
    assert meta["model"] == GEMINI_MODEL and meta["sdk_version"] == genai.__version__
    assert meta["usage"] == {"input_tokens": 31, "output_tokens": 6, "total_tokens": 37}
    assert meta["response_id"] == "gresp-1" and meta["stream"] is False
    assert GOOGLE_KEY.encode() not in store_bytes(seeded)
    assert GOOGLE_KEY not in str([i.metadata for i in items])


def test_a_config_object_with_a_content_instruction_gets_one_more_part(seeded: Memory) -> None:
    wire = GoogleWire("OK")
    client = seeded.register(google_client(wire))
    config = types.GenerateContentConfig(
        system_instruction=types.Content(parts=[types.Part(text="Be brief.")]), temperature=0.1
    )

    client.models.generate_content(model=MODEL, contents=[QUESTION], config=config)

    parts = wire.last["systemInstruction"]["parts"]
    assert parts[0] == {"text": "Be brief."} and len(parts) == 2
    assert "allergic to peanuts" in parts[1]["text"]
    assert wire.last["generationConfig"] == {"temperature": 0.1}
    assert [p.text for p in config.system_instruction.parts] == ["Be brief."]  # not modified


def test_no_config_gets_a_system_instruction_of_its_own(seeded: Memory) -> None:
    wire = GoogleWire("OK")
    client = seeded.register(google_client(wire))

    client.models.generate_content(model=MODEL, contents=QUESTION)

    assert "allergic to peanuts" in _system_text(wire.last)


def test_history_with_model_turns_captures_only_the_new_turn(memory: Memory) -> None:
    wire = GoogleWire("Saturday at ten.")
    client = memory.register(google_client(wire))
    history = [
        types.Content(role="user", parts=[types.Part(text="Book a court")]),
        types.Content(role="model", parts=[types.Part(text="Which day?")]),
        {"role": "user", "parts": [{"text": "Saturday, the earliest slot"}]},
    ]

    client.models.generate_content(model=MODEL, contents=history)

    assert [c["role"] for c in wire.last["contents"]] == ["user", "model", "user"]
    assert [(i.sources[0].role, i.text) for i in captured(memory)] == [
        ("user", "Saturday, the earliest slot"),
        ("assistant", "Saturday at ten."),
    ]


def test_a_function_call_reply_is_captured_as_a_tool_call(memory: Memory) -> None:
    wire = GoogleWire({"call": "get_weather", "args": {"city": "Porto"}})
    client = memory.register(google_client(wire))

    response = client.models.generate_content(model=MODEL, contents="Weather in Porto?")

    assert response.function_calls[0].name == "get_weather"
    assert [i.text for i in captured(memory)] == [
        "Weather in Porto?",
        '[tool call] get_weather({"city": "Porto"})',
    ]


def test_generate_content_stream_is_passed_through_and_captured(seeded: Memory) -> None:
    wire = GoogleWire("Apple slices are safe")
    client = seeded.register(google_client(wire))

    chunks = list(client.models.generate_content_stream(model=MODEL, contents=QUESTION))

    assert all(isinstance(c, types.GenerateContentResponse) for c in chunks)
    assert "".join(c.text for c in chunks) == "Apple slices are safe"
    assert wire.urls[-1].endswith(":streamGenerateContent?alt=sse")
    assert "allergic to peanuts" in _system_text(wire.last)
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are safe"]
    meta = items[1].metadata
    assert meta["stream"] is True and meta["complete"] is True
    assert meta["usage"]["output_tokens"] == 6


def test_a_stream_left_early_is_captured_with_what_arrived(memory: Memory) -> None:
    wire = GoogleWire("one two three four")
    client = memory.register(google_client(wire))

    for chunk in client.models.generate_content_stream(model=MODEL, contents="Count"):
        if chunk.text == " two":
            break

    items = captured(memory)
    assert [i.text for i in items] == ["Count", "one two"]
    assert items[1].metadata["complete"] is False


async def test_async_generate_content_and_stream(seeded: Memory) -> None:
    wire = GoogleWire("Rice cakes.", "async words here")
    client = seeded.register(google_client(wire))

    response = await client.aio.models.generate_content(model=MODEL, contents=QUESTION)
    assert response.text == "Rice cakes."
    assert "allergic to peanuts" in _system_text(wire.requests[0])
    stream = await client.aio.models.generate_content_stream(model=MODEL, contents="Talk")
    text = "".join([chunk.text async for chunk in stream])

    assert text == "async words here"
    assert wire.urls[1].endswith(":streamGenerateContent?alt=sse")
    assert [i.text for i in captured(seeded)] == [
        QUESTION,
        "Rice cakes.",
        "Talk",
        "async words here",
    ]


def test_chat_sessions_get_memory_through_generate_content(seeded: Memory) -> None:
    wire = GoogleWire("Hummus.", "Carrots too.")
    client = seeded.register(google_client(wire))
    chat = client.chats.create(model=MODEL)

    chat.send_message(QUESTION)
    chat.send_message("And a vegetable?")

    assert "allergic to peanuts" in _system_text(wire.requests[0])
    assert [c["role"] for c in wire.last["contents"]] == ["user", "model", "user"]
    assert [i.text for i in captured(seeded)] == [
        QUESTION,
        "Hummus.",
        "And a vegetable?",
        "Carrots too.",
    ]


def test_per_call_scope_stores_under_that_entity(memory: Memory) -> None:
    wire = GoogleWire("Noted.")
    client = memory.register(google_client(wire), entity_id="alice")

    with memory.scope(entity_id="bob"):
        client.models.generate_content(model=MODEL, contents="I like jazz.")

    assert [i.text for i in captured(memory, entity_id="bob")] == ["I like jazz.", "Noted."]
    assert captured(memory, entity_id="alice") == []


def test_unregister_restores_the_client(seeded: Memory) -> None:
    wire = GoogleWire("OK")
    client = seeded.register(google_client(wire))
    assert registration_of(client) is not None

    assert seeded.unregister(client) is True
    assert "generate_content" not in vars(client.models)
    assert "generate_content_stream" not in vars(client.aio.models)
    client.models.generate_content(model=MODEL, contents=QUESTION)

    assert "systemInstruction" not in wire.last
    assert captured(seeded) == []


def test_named_registration(seeded: Memory) -> None:
    wire = GoogleWire("OK")
    client = seeded.register(google_genai=google_client(wire))

    client.models.generate_content(model=MODEL, contents=QUESTION)

    assert "allergic to peanuts" in _system_text(wire.last)
