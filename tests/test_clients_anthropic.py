"""memory.register(Anthropic client): the real anthropic SDK over a mock transport."""

from __future__ import annotations

import anthropic

from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from sdk_fakes import CLAUDE_MODEL, ScriptedModel, Snack, anthropic_client, captured

QUESTION = "Which snack is safe with my peanut allergy?"


def test_messages_create_places_context_in_system(seeded: Memory) -> None:
    model = ScriptedModel("Try hummus with carrots.")
    client = seeded.register(anthropic_client(model))
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
    ]

    message = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=256, system="Be brief.", messages=history
    )

    assert isinstance(message, anthropic.types.Message)
    assert message.content[0].text == "Try hummus with carrots."
    sent = model.last
    assert set(sent) == {"model", "max_tokens", "system", "messages"}
    assert sent["system"].startswith("Be brief.\n\n") and OPEN_TAG in sent["system"]
    assert "allergic to peanuts" in sent["system"]
    assert sent["messages"] == history
    items = captured(seeded)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[1].metadata
    assert (meta["provider"], meta["api"], meta["model"]) == ("anthropic", "messages", CLAUDE_MODEL)
    assert meta["sdk_version"] == anthropic.__version__
    assert meta["usage"]["input_tokens"] == 25 and meta["usage"]["output_tokens"] == 8


def test_a_system_given_as_blocks_gets_one_more_block(seeded: Memory) -> None:
    model = ScriptedModel("OK")
    client = seeded.register(anthropic_client(model))
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]

    client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=64,
        system=system,
        messages=[{"role": "user", "content": QUESTION}],
    )

    sent = model.last["system"]
    assert sent[0] == system[0] and len(sent) == 2
    assert sent[1]["type"] == "text" and "allergic to peanuts" in sent[1]["text"]


async def test_async_messages_create(seeded: Memory) -> None:
    model = ScriptedModel("Rice cakes.")
    client = seeded.register(anthropic_client(model, asynchronous=True))

    message = await client.messages.create(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
    )

    assert message.content[0].text == "Rice cakes."
    assert "allergic to peanuts" in model.last["system"]
    assert [i.text for i in captured(seeded)] == [QUESTION, "Rice cakes."]


def test_messages_stream_manager_is_passed_through_and_captured(seeded: Memory) -> None:
    model = ScriptedModel("Apple slices are safe")
    client = seeded.register(anthropic_client(model))

    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
    ) as stream:
        assert isinstance(stream, anthropic.MessageStream)  # the SDK's own stream
        text = "".join(stream.text_stream)
        final = stream.get_final_message()

    assert text == "Apple slices are safe" and final.content[0].text == text
    assert set(model.last) == {"model", "max_tokens", "messages", "system", "stream"}
    assert "allergic to peanuts" in model.last["system"]
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are safe"]
    assert items[1].metadata["stream"] is True and items[1].metadata["complete"] is True
    assert items[1].metadata["usage"]["output_tokens"] == 8


def test_messages_stream_left_early_is_captured_with_what_arrived(memory: Memory) -> None:
    model = ScriptedModel("one two three four")
    client = memory.register(anthropic_client(model))

    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": "Count"}]
    ) as stream:
        for text in stream.text_stream:
            if text == " two":
                break

    items = captured(memory)
    assert [i.text for i in items] == ["Count", "one two"]
    assert items[1].metadata["complete"] is False


async def test_async_messages_stream(memory: Memory) -> None:
    model = ScriptedModel("async words here")
    client = memory.register(anthropic_client(model, asynchronous=True))

    async with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": "Talk"}]
    ) as stream:
        assert isinstance(stream, anthropic.AsyncMessageStream)
        text = "".join([t async for t in stream.text_stream])

    assert text == "async words here"
    assert [i.text for i in captured(memory)] == ["Talk", "async words here"]


def test_create_with_stream_true_events(memory: Memory) -> None:
    model = ScriptedModel("raw events work")
    client = memory.register(anthropic_client(model))

    events = list(
        client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "Stream raw"}],
            stream=True,
        )
    )

    assert [e.type for e in events][:2] == ["message_start", "content_block_start"]
    assert events[-1].type == "message_stop"
    items = captured(memory)
    assert [i.text for i in items] == ["Stream raw", "raw events work"]
    assert items[1].metadata["usage"] == {"input_tokens": 25, "output_tokens": 8}


def test_messages_parse_with_a_pydantic_output_format(seeded: Memory) -> None:
    model = ScriptedModel('{"name": "rice cakes", "safe": true}')
    client = seeded.register(anthropic_client(model))

    message = client.messages.parse(
        model="claude-sonnet-5-5",
        max_tokens=64,
        messages=[{"role": "user", "content": QUESTION}],
        output_format=Snack,
    )

    assert message.parsed_output == Snack(name="rice cakes", safe=True)
    assert set(model.last) == {"model", "max_tokens", "messages", "output_config", "system"}
    assert "allergic to peanuts" in model.last["system"]
    assert [i.text for i in captured(seeded)] == [QUESTION, '{"name": "rice cakes", "safe": true}']
