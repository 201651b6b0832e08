"""memory.register(AnthropicBedrock / AnthropicVertex): the real anthropic SDK's cloud
clients over an httpx2.MockTransport (Bedrock's ``invoke`` signed with botocore, Vertex's
``rawPredict`` with a given access token)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import pytest

from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from provider_fakes import AWS_KEY_ID, AWS_SECRET, store_bytes
from sdk_fakes import message, message_events

pytest.importorskip("botocore")  # AnthropicBedrock signs its requests with botocore

QUESTION = "Which snack is safe with my peanut allergy?"
VERTEX_TOKEN = "ya29.vertex-token-5e4dSECRET"


class CloudModel:
    """Answers Bedrock ``invoke`` and Vertex ``rawPredict`` / ``streamRawPredict``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if request.url.path.endswith(":streamRawPredict"):
            sse = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=sse, content=message_events(self.text))
        return httpx2.Response(200, json=message(self.text))

    @property
    def last(self) -> dict[str, Any]:
        return json.loads(self.requests[-1].content)


def bedrock(model: CloudModel) -> Any:
    return anthropic.AnthropicBedrock(
        aws_access_key=AWS_KEY_ID,
        aws_secret_key=AWS_SECRET,
        aws_region="us-west-2",
        http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
        max_retries=0,
    )


def vertex(model: CloudModel, *, asynchronous: bool = False) -> Any:
    if asynchronous:
        return anthropic.AsyncAnthropicVertex(
            region="us-east5",
            project_id="demo-project",
            access_token=VERTEX_TOKEN,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(model)),
            max_retries=0,
        )
    return anthropic.AnthropicVertex(
        region="us-east5",
        project_id="demo-project",
        access_token=VERTEX_TOKEN,
        http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
        max_retries=0,
    )


def _captured(memory: Memory) -> list[Any]:
    assert memory.flush(30)
    return [m for m in memory.list() if m.metadata.get("capture") == "sdk_client"]


def test_anthropic_bedrock_is_registered_and_places_context_in_system(seeded: Memory) -> None:
    model = CloudModel("Try hummus with carrots.")
    client = seeded.register(bedrock(model))

    reply = client.messages.create(
        model="anthropic.claude-sonnet-5-5-v1:0",
        max_tokens=64,
        system="Be brief.",
        messages=[{"role": "user", "content": QUESTION}],
    )

    assert reply.content[0].text == "Try hummus with carrots."
    request = model.requests[-1]
    assert request.url.host == "bedrock-runtime.us-west-2.amazonaws.com"
    assert request.url.path.endswith("/invoke")
    system = model.last["system"]
    assert system.startswith("Be brief.\n\n") and OPEN_TAG in system
    assert "allergic to peanuts" in system
    items = _captured(seeded)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", QUESTION),
        ("assistant", "Try hummus with carrots."),
    ]
    meta = items[1].metadata
    assert (meta["provider"], meta["sdk"]) == ("bedrock", "anthropic")
    assert meta["endpoint"] == "https://bedrock-runtime.us-west-2.amazonaws.com"
    assert AWS_KEY_ID in request.headers["authorization"]
    stored = store_bytes(seeded)
    assert AWS_KEY_ID.encode() not in stored and AWS_SECRET.encode() not in stored


def test_anthropic_vertex_stream_manager(seeded: Memory) -> None:
    model = CloudModel("Apple slices are safe")
    client = seeded.register(vertex(model))

    with client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
    ) as stream:
        text = "".join(stream.text_stream)

    assert text == "Apple slices are safe"
    assert model.requests[-1].url.host == "us-east5-aiplatform.googleapis.com"
    assert "allergic to peanuts" in model.last["system"]
    items = _captured(seeded)
    assert [i.text for i in items] == [QUESTION, "Apple slices are safe"]
    assert (items[1].metadata["provider"], items[1].metadata["stream"]) == ("vertex", True)
    assert VERTEX_TOKEN.encode() not in store_bytes(seeded)


async def test_async_anthropic_vertex_and_unregister(seeded: Memory) -> None:
    model = CloudModel("Rice cakes.")
    client = seeded.register(vertex(model, asynchronous=True))

    await client.messages.create(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
    )
    assert "allergic to peanuts" in model.last["system"]
    assert seeded.unregister(client) is True
    await client.messages.create(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
    )

    assert "system" not in model.last
    assert [i.text for i in _captured(seeded)] == [QUESTION, "Rice cakes."]
