"""The model behind the real OpenAI and Anthropic SDKs, faked at the HTTP boundary.

:class:`ScriptedModel` is an ``httpx2.MockTransport`` handler (the SDKs' own HTTP
library) that answers each request with the next scripted reply, in the JSON or
server-sent-event shapes the APIs send, and keeps every request it saw. Everything
between the test and the transport is the real SDK.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

import httpx2
from pydantic import BaseModel

from memtrellis import Memory, MemoryItem

OPENAI_KEY = "sk-test-4f1d9c0a7be2SECRET"
ANTHROPIC_KEY = "sk-ant-test-9e8d7c6bSECRET"
CHAT_MODEL = "gpt-4o-mini-2024-07-18"
RESPONSES_MODEL = "gpt-4.1-mini-2025-04-14"
CLAUDE_MODEL = "claude-sonnet-5-5-20261015"
CREATED = 1764460800


class Snack(BaseModel):
    """A structured-output schema for ``parse`` (a pydantic response format)."""

    name: str
    safe: bool


def _sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append(f"{head}data: {payload}\n\n")
    return "".join(out).encode()


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


# -- OpenAI Chat Completions ----------------------------------------------------------------
def chat_completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-Bx1",
        "object": "chat.completion",
        "created": CREATED,
        "model": CHAT_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text,
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 42,
            "completion_tokens": 7,
            "total_tokens": 49,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": "fp_560af6e559",
    }


def chat_chunks(text: str, include_usage: bool) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-Bx2",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": CHAT_MODEL,
            "system_fingerprint": "fp_560af6e559",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    events: list[tuple[str | None, Any]] = [
        (None, chunk({"role": "assistant", "content": "", "refusal": None}, None))
    ]
    events += [(None, chunk({"content": word}, None)) for word in _words(text)]
    events.append((None, chunk({}, "stop")))
    if include_usage:
        usage = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
        events.append((None, {**chunk({}, None), "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return _sse(events)


# -- OpenAI Responses -----------------------------------------------------------------------
def response(text: str, status: str = "completed") -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": "resp_68b1",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "model": RESPONSES_MODEL,
        "output": [
            {
                "type": "message",
                "id": "msg_68b1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        if done
        else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 30,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 6,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 36,
        }
        if done
        else None,
    }


def response_events(text: str) -> bytes:
    item = response(text)["output"][0]
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response("", "in_progress")},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **where, "part": part},
    ]
    events += [
        {"type": "response.output_text.delta", **where, "delta": word, "logprobs": []}
        for word in _words(text)
    ]
    events += [
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response(text)},
    ]
    return _sse((e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events))


# -- Anthropic Messages ---------------------------------------------------------------------
def message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE_MODEL,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 25,
            "output_tokens": 8,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def message_events(text: str) -> bytes:
    start = {**message(""), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 25, "output_tokens": 1}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
        )
        for w in _words(text)
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 8},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


class ScriptedModel:
    """Answers each request with the next scripted text; keeps every request.

    Args:
        replies: Texts answered in turn; the last one is repeated when they run out.
    """

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies) or ["OK."]
        self.requests: list[httpx2.Request] = []
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _next(self, request: httpx2.Request) -> tuple[str, dict[str, Any]]:
        body = json.loads(request.content)
        with self._lock:
            self.requests.append(request)
            self.bodies.append(body)
            text = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return text, body

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        text, body = self._next(request)
        path = request.url.path
        stream = body.get("stream") is True
        sse = {"content-type": "text/event-stream"}
        if path.endswith("/chat/completions"):
            if stream:
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                return httpx2.Response(200, headers=sse, content=chat_chunks(text, usage))
            return httpx2.Response(200, json=chat_completion(text))
        if path.endswith("/responses"):
            if stream:
                return httpx2.Response(200, headers=sse, content=response_events(text))
            return httpx2.Response(200, json=response(text))
        if path.endswith("/messages"):
            if stream:
                return httpx2.Response(200, headers=sse, content=message_events(text))
            return httpx2.Response(200, json=message(text))
        return httpx2.Response(404, json={"error": {"message": f"no route {path}"}})

    @property
    def last(self) -> dict[str, Any]:
        """The body of the last request."""
        return self.bodies[-1]


def openai_client(model: ScriptedModel, *, asynchronous: bool = False) -> Any:
    import openai

    if asynchronous:
        transport = httpx2.MockTransport(model)
        return openai.AsyncOpenAI(
            api_key=OPENAI_KEY, http_client=httpx2.AsyncClient(transport=transport), max_retries=0
        )
    return openai.OpenAI(
        api_key=OPENAI_KEY,
        http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
        max_retries=0,
    )


def anthropic_client(model: ScriptedModel, *, asynchronous: bool = False) -> Any:
    import anthropic

    if asynchronous:
        transport = httpx2.MockTransport(model)
        return anthropic.AsyncAnthropic(
            api_key=ANTHROPIC_KEY,
            http_client=httpx2.AsyncClient(transport=transport),
            max_retries=0,
        )
    return anthropic.Anthropic(
        api_key=ANTHROPIC_KEY,
        http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
        max_retries=0,
    )


def captured(memory: Memory, **scope: str) -> list[MemoryItem]:
    """What the background worker stored from captured client turns, in capture order."""
    assert memory.flush(30)
    return [m for m in memory.list(**scope) if m.metadata.get("capture") == "sdk_client"]
