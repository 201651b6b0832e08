"""The model behind Google Gen AI, boto3 Bedrock, Ollama and LiteLLM, faked at the wire.

Each fake answers the real SDK's HTTP request in the shapes the API sends, and keeps
every request body it saw; everything between the test and the wire is the real SDK:

* Google Gen AI and Ollama take an ``httpx`` client: an ``httpx.MockTransport``.
* boto3 sends through botocore's ``before-send`` event, the hook botocore gives for
  answering a request without the network (the same point as an HTTP mock): the request
  is signed and serialised by botocore, and the response is parsed by botocore, the
  ``converse_stream`` event stream included, from its binary frames.
* LiteLLM routes ``openai/...`` models through the real ``openai`` SDK, given as
  ``client=``, over an ``httpx2.MockTransport`` (`sdk_fakes.ScriptedModel`).
"""

from __future__ import annotations

import binascii
import json
import struct
from collections.abc import Iterator
from typing import Any

import httpx

GOOGLE_KEY = "AIza-test-7c1e5fSECRET"
AWS_KEY_ID = "AKIATESTKEY7SECRET"
AWS_SECRET = "aws-secret-9b8a7cSECRET"
OLLAMA_HOST = "http://localhost:11434"
GEMINI_MODEL = "gemini-2.5-flash-001"


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


class Wire:
    """Scripted replies, one per request, and the bodies of the requests seen."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.urls: list[str] = []

    def take(self, url: str, body: bytes) -> Any:
        self.urls.append(url)
        self.requests.append(json.loads(body or b"{}"))
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]


# -- Google Gen AI -----------------------------------------------------------------------
def _gemini(parts: list[dict[str, Any]], finish: str | None, usage: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": GEMINI_MODEL,
        "responseId": "gresp-1",
    }
    if usage:
        body["usageMetadata"] = {
            "promptTokenCount": 31,
            "candidatesTokenCount": 6,
            "totalTokenCount": 37,
        }
    return body


def gemini_parts(reply: Any) -> list[dict[str, Any]]:
    """A scripted reply: text, or ``{"call": name, "args": {...}}`` for a function call."""
    if isinstance(reply, dict):
        return [{"functionCall": {"name": reply["call"], "args": reply["args"]}}]
    return [{"text": reply}]


class GoogleWire(Wire):
    """``generateContent`` and ``streamGenerateContent`` (server-sent events)."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        reply = self.take(str(request.url), request.content)
        if ":streamGenerateContent" in str(request.url):
            if isinstance(reply, dict):
                chunks = [_gemini(gemini_parts(reply), "STOP", True)]
            else:
                words = _words(reply)
                chunks = [_gemini([{"text": w}], None, False) for w in words[:-1]]
                chunks.append(_gemini([{"text": words[-1]}], "STOP", True))
            body = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
            return httpx.Response(
                200, content=body.encode(), headers={"content-type": "text/event-stream"}
            )
        return httpx.Response(200, json=_gemini(gemini_parts(reply), "STOP", True))


def google_client(wire: GoogleWire) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        httpx_client=httpx.Client(transport=httpx.MockTransport(wire)),
        httpx_async_client=httpx.AsyncClient(transport=httpx.MockTransport(wire)),
    )
    return genai.Client(api_key=GOOGLE_KEY, http_options=options)


# -- AWS Bedrock (boto3) -----------------------------------------------------------------
def _header(name: str, value: str) -> bytes:
    key, text = name.encode(), value.encode()
    return struct.pack("B", len(key)) + key + b"\x07" + struct.pack(">H", len(text)) + text


def event_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One frame of the AWS event-stream encoding (prelude, headers, payload, CRCs)."""
    headers = (
        _header(":event-type", event_type)
        + _header(":content-type", "application/json")
        + _header(":message-type", "event")
    )
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 16 + len(headers) + len(body), len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    frame = prelude + headers + body
    return frame + struct.pack(">I", binascii.crc32(frame) & 0xFFFFFFFF)


class _Raw:
    """The raw body botocore reads (``stream()`` for event streams, ``read()`` else)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.closed = False

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield from (self.data[i : i + 64] for i in range(0, len(self.data), 64))

    def read(self, *_: Any) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        self.closed = True


BEDROCK_USAGE = {"inputTokens": 27, "outputTokens": 5, "totalTokens": 32}


def _bedrock_content(reply: Any) -> list[dict[str, Any]]:
    if isinstance(reply, dict):
        use = {"toolUseId": "tooluse_1", "name": reply["call"], "input": reply["args"]}
        return [{"toolUse": use}]
    return [{"text": reply}]


def converse_frames(reply: Any) -> bytes:
    frames = [event_frame("messageStart", {"role": "assistant"})]
    if isinstance(reply, dict):
        start = {"toolUse": {"toolUseId": "tooluse_1", "name": reply["call"]}}
        frames.append(event_frame("contentBlockStart", {"start": start, "contentBlockIndex": 0}))
        arguments = json.dumps(reply["args"])
        for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
            delta = {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": 0}
            frames.append(event_frame("contentBlockDelta", delta))
        stop = "tool_use"
    else:
        for word in _words(reply):
            delta = {"delta": {"text": word}, "contentBlockIndex": 0}
            frames.append(event_frame("contentBlockDelta", delta))
        stop = "end_turn"
    frames.append(event_frame("contentBlockStop", {"contentBlockIndex": 0}))
    frames.append(event_frame("messageStop", {"stopReason": stop}))
    metadata = {"usage": BEDROCK_USAGE, "metrics": {"latencyMs": 120}}
    frames.append(event_frame("metadata", metadata))
    return b"".join(frames)


class BedrockWire(Wire):
    """Answers botocore's ``before-send``: ``/converse`` and ``/converse-stream``."""

    def __init__(self, *replies: Any) -> None:
        super().__init__(*replies)
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        self.headers.append({k: str(v) for k, v in request.headers.items()})
        reply = self.take(request.url, request.body)
        headers = {"x-amzn-RequestId": "req-6f1e"}
        if request.url.endswith("/converse-stream"):
            headers["content-type"] = "application/vnd.amazon.eventstream"
            return AWSResponse(request.url, 200, headers, _Raw(converse_frames(reply)))
        stop = "tool_use" if isinstance(reply, dict) else "end_turn"
        body = {
            "output": {"message": {"role": "assistant", "content": _bedrock_content(reply)}},
            "stopReason": stop,
            "usage": BEDROCK_USAGE,
            "metrics": {"latencyMs": 95},
        }
        headers["content-type"] = "application/json"
        return AWSResponse(request.url, 200, headers, _Raw(json.dumps(body).encode()))


def bedrock_client(wire: BedrockWire | None = None) -> Any:
    import boto3

    client = boto3.client(
        "bedrock-runtime",
        region_name="eu-west-1",
        aws_access_key_id=AWS_KEY_ID,
        aws_secret_access_key=AWS_SECRET,
    )
    if wire is not None:
        client.meta.events.register("before-send.bedrock-runtime.*", wire)
    return client


# -- Ollama ------------------------------------------------------------------------------
def _ollama(content: str, done: bool, calls: list[Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "model": "llama3.2:3b",
        "created_at": "2026-12-01T20:00:00Z",
        "message": message,
        "done": done,
    }
    if done:
        body |= {"done_reason": "stop", "prompt_eval_count": 26, "eval_count": 4}
    return body


class OllamaWire(Wire):
    """``/api/chat``: one JSON object, or newline-delimited JSON chunks when streaming."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        reply = self.take(str(request.url), request.content)
        calls = None
        if isinstance(reply, dict):
            calls = [{"function": {"name": reply["call"], "arguments": reply["args"]}}]
            reply = ""
        if not self.last.get("stream"):
            return httpx.Response(200, json=_ollama(reply, True, calls))
        chunks = [_ollama(w, False) for w in _words(reply)] if reply else []
        if calls:
            chunks.append(_ollama("", False, calls))
        chunks.append(_ollama("", True))
        body = "".join(json.dumps(c) + "\n" for c in chunks)
        return httpx.Response(
            200, content=body.encode(), headers={"content-type": "application/x-ndjson"}
        )


def ollama_client(wire: OllamaWire, *, asynchronous: bool = False) -> Any:
    import ollama

    if asynchronous:
        return ollama.AsyncClient(host=OLLAMA_HOST, transport=httpx.MockTransport(wire))
    return ollama.Client(host=OLLAMA_HOST, transport=httpx.MockTransport(wire))


def store_bytes(memory: Any) -> bytes:
    """Every file of an open store (spool included), to search for secrets."""
    from pathlib import Path

    root = Path(memory.path)
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())
