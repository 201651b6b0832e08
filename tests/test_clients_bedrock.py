"""memory.register(boto3 bedrock-runtime client): the real boto3 and botocore, answered at
botocore's ``before-send`` (the request signed and serialised, the response and its
event stream parsed by botocore) or by botocore's ``Stubber``."""

from __future__ import annotations

import json

import pytest

boto3 = pytest.importorskip("boto3")

import botocore  # noqa: E402
from botocore.eventstream import EventStream  # noqa: E402
from botocore.stub import ANY, Stubber  # noqa: E402

from memtrellis import Memory  # noqa: E402
from memtrellis.context import OPEN_TAG  # noqa: E402
from provider_fakes import (  # noqa: E402
    AWS_KEY_ID,
    AWS_SECRET,
    BedrockWire,
    bedrock_client,
    store_bytes,
)
from sdk_fakes import captured  # noqa: E402

QUESTION = "Which snack is safe with my peanut allergy?"
MODEL = "anthropic.claude-sonnet-5-5-v1:0"


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": [{"text": text}]}]


def test_converse_places_context_in_system(seeded: Memory) -> None:
    wire = BedrockWire("Try hummus with carrots.")
    client = seeded.register(bedrock_client(wire))

    response = client.converse(
        modelId=MODEL,
        messages=user(QUESTION),
        system=[{"text": "Be brief."}],
        inferenceConfig={"maxTokens": 128},
    )

    assert response["output"]["message"]["content"] == [{"text": "Try hummus with carrots."}]
    quoted = MODEL.replace(":", "%3A")
    assert (
        wire.urls[-1] == f"https://bedrock-runtime.eu-west-1.amazonaws.com/model/{quoted}/converse"
    )
    sent = wire.last
    assert sent["messages"] == user(QUESTION) and sent["inferenceConfig"] == {"maxTokens": 128}
    assert sent["system"][0] == {"text": "Be brief."} and len(sent["system"]) == 2
    assert OPEN_TAG in sent["system"][1]["text"]
    assert "allergic to peanuts" in sent["system"][1]["text"]
    items = captured(seeded)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[1].metadata
    assert (meta["provider"], meta["sdk"], meta["api"]) == ("bedrock", "bedrock", "converse")
    assert meta["endpoint"] == "https://bedrock-runtime.eu-west-1.amazonaws.com"
    assert meta["model"] == MODEL and meta["sdk_version"] == botocore.__version__
    assert meta["usage"] == {"input_tokens": 27, "output_tokens": 5, "total_tokens": 32}
    assert meta["response_id"] == "req-6f1e"
    # The request was signed with the key; none of it reached the store.
    assert AWS_KEY_ID in wire.headers[-1]["Authorization"]
    stored = store_bytes(seeded)
    assert AWS_KEY_ID.encode() not in stored and AWS_SECRET.encode() not in stored
    assert "Authorization" not in json.dumps([i.metadata for i in items])


def test_converse_without_system_gets_one(seeded: Memory) -> None:
    wire = BedrockWire("OK")
    client = seeded.register(bedrock_client(wire))

    client.converse(modelId=MODEL, messages=user(QUESTION))

    [block] = wire.last["system"]
    assert "allergic to peanuts" in block["text"]


def test_a_tool_use_turn_and_its_result(memory: Memory) -> None:
    wire = BedrockWire({"call": "get_weather", "args": {"city": "Porto"}}, "Sunny in Porto.")
    client = memory.register(bedrock_client(wire))
    messages = user("Weather in Porto?")

    first = client.converse(modelId=MODEL, messages=messages)
    messages += [
        first["output"]["message"],
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"json": {"sky": "sun"}}]}}
            ],
        },
    ]
    client.converse(modelId=MODEL, messages=messages)

    # The tool's result is a tool turn (never something the user said): as for OpenAI,
    # it makes no memory unless ExtractionConfig(extract_tools=True).
    assert [(i.sources[0].role, i.text) for i in captured(memory)] == [
        ("user", "Weather in Porto?"),
        ("assistant", '[tool call] get_weather({"city": "Porto"})'),
        ("assistant", "Sunny in Porto."),
    ]


def test_converse_stream_is_passed_through_and_captured(seeded: Memory) -> None:
    wire = BedrockWire("Apple slices are safe")
    client = seeded.register(bedrock_client(wire))

    response = client.converse_stream(modelId=MODEL, messages=user(QUESTION))

    assert isinstance(response["stream"], EventStream)  # botocore's own stream
    events = list(response["stream"])
    text = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e
    )
    assert text == "Apple slices are safe"
    assert list(events[0]) == ["messageStart"] and list(events[-1]) == ["metadata"]
    assert wire.urls[-1].endswith("/converse-stream")
    assert "allergic to peanuts" in wire.last["system"][0]["text"]
    items = captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are safe"]
    meta = items[1].metadata
    assert meta["stream"] is True and meta["complete"] is True
    assert meta["usage"]["output_tokens"] == 5


def test_a_streamed_tool_use_is_captured_whole(memory: Memory) -> None:
    wire = BedrockWire({"call": "book", "args": {"day": "Friday", "seats": 2}})
    client = memory.register(bedrock_client(wire))

    response = client.converse_stream(modelId=MODEL, messages=user("Book Friday for two"))
    for _ in response["stream"]:
        pass

    items = captured(memory)
    assert [i.text for i in items] == [
        "Book Friday for two",
        '[tool call] book({"day": "Friday", "seats": 2})',
    ]
    call = items[1].sources[1].tool  # its name and id from the block's start event
    assert call is not None and (call.name, call.call_id) == ("book", "tooluse_1")


def test_a_stream_closed_early_is_captured_with_what_arrived(memory: Memory) -> None:
    wire = BedrockWire("one two three four")
    client = memory.register(bedrock_client(wire))

    stream = client.converse_stream(modelId=MODEL, messages=user("Count"))["stream"]
    for event in stream:
        if event.get("contentBlockDelta", {}).get("delta", {}).get("text") == " two":
            break
    stream.close()

    items = captured(memory)
    assert [i.text for i in items] == ["Count", "one two"]
    assert items[1].metadata["complete"] is False


def test_converse_with_botocore_stubber(seeded: Memory) -> None:
    client = bedrock_client()
    answer = {
        "output": {"message": {"role": "assistant", "content": [{"text": "Rice cakes."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 20, "outputTokens": 3, "totalTokens": 23},
        "metrics": {"latencyMs": 80},
    }
    with Stubber(client) as stub:
        stub.add_response(
            "converse", answer, {"modelId": MODEL, "messages": user(QUESTION), "system": ANY}
        )
        seeded.register(client)
        response = client.converse(modelId=MODEL, messages=user(QUESTION))
        stub.assert_no_pending_responses()

    assert response["output"]["message"]["content"][0]["text"] == "Rice cakes."
    assert [i.text for i in captured(seeded)] == [QUESTION, "Rice cakes."]


def test_per_call_scope_and_unregister(memory: Memory) -> None:
    wire = BedrockWire("Noted.")
    client = memory.register(bedrock_client(wire), entity_id="alice")
    memory.add("Bob plays the cello", entity_id="bob")

    with memory.scope(entity_id="bob"):
        client.converse(modelId=MODEL, messages=user("Which instrument do I play?"))
    assert "cello" in wire.last["system"][0]["text"]
    assert [i.text for i in captured(memory, entity_id="bob")] == [
        "Which instrument do I play?",
        "Noted.",
    ]
    assert captured(memory, entity_id="alice") == []

    assert memory.unregister(client) is True
    assert not {"converse", "converse_stream"} & set(vars(client))
    client.converse(modelId=MODEL, messages=user("Which instrument do I play?"))
    assert "system" not in wire.last
    assert len(captured(memory, entity_id="bob")) == 2


def test_named_registration(seeded: Memory) -> None:
    wire = BedrockWire("OK")
    client = seeded.register(bedrock=bedrock_client(wire))

    client.converse(modelId=MODEL, messages=user(QUESTION))

    assert "allergic to peanuts" in wire.last["system"][0]["text"]
