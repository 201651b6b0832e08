"""What a patched client captures: the new messages' text, the reply, and safe metadata.

Everything captured is built here from a fixed list of fields, never by copying the
request: message roles, names and text; the reply's text; provider, API, model, SDK
version, timing and token counts. Headers, API keys, ``extra_*`` arguments, client
options and environment variables are never read, so they can never reach the store,
the spool or the logs.

Examples:
    >>> text_of([{"type": "text", "text": "Hi"}, {"type": "image_url", "image_url": {}}])
    'Hi'
    >>> usage_of({"prompt_tokens": 3, "completion_tokens": 2, "secret": "x"})
    {'prompt_tokens': 3, 'completion_tokens': 2}
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from memtrellis.clients.endpoints import client_endpoint

__all__ = [
    "USAGE_FIELDS",
    "Collector",
    "Reply",
    "TextCollector",
    "capture_metadata",
    "field_of",
    "given",
    "message_of",
    "reply_from",
    "request_messages",
    "sdk_version",
    "text_of",
    "usage_of",
]

#: Token counts read from a response's ``usage`` (OpenAI chat, Responses, Anthropic).
USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
# The SDKs' "argument not given" sentinels, recognised by type name.
_SENTINELS = frozenset({"Omit", "NotGiven"})


def given(value: Any) -> Any:
    """``value``, or None when it is an SDK's omit/not-given sentinel."""
    return None if type(value).__name__ in _SENTINELS else value


def field_of(obj: Any, name: str) -> Any:
    """``obj[name]`` for a mapping, ``obj.name`` for an SDK model object, else None."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def text_of(content: Any) -> str:
    """The text of message content: a string, or the text of its text parts/blocks."""
    content = given(content)
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = []
        for part in content:
            text = part if isinstance(part, str) else field_of(part, "text")
            if isinstance(text, str) and text:
                texts.append(text)
        return "\n".join(texts)
    return ""


def message_of(message: Any) -> dict[str, Any] | None:
    """A request message (dict or SDK object) as ``{"role", "content", "name"?}`` with text."""
    role = field_of(message, "role")
    if not isinstance(role, str):
        return None
    out: dict[str, Any] = {"role": role, "content": text_of(field_of(message, "content"))}
    name = field_of(message, "name")
    if isinstance(name, str) and name:
        out["name"] = name
    return out


def request_messages(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A request's ``messages`` (Chat Completions, Anthropic Messages) as text dicts."""
    found = (message_of(m) for m in given(kwargs.get("messages")) or ())
    return [m for m in found if m is not None]


def usage_of(usage: Any) -> dict[str, int]:
    """The token counts of a ``usage`` object or dict (only `USAGE_FIELDS`)."""
    counts: dict[str, int] = {}
    for name in USAGE_FIELDS:
        value = field_of(usage, name) if usage is not None else None
        if isinstance(value, int) and not isinstance(value, bool):
            counts[name] = value
    return counts


@dataclass
class Reply:
    """The model's answer as capture needs it.

    Attributes:
        text: The reply's text (empty for a tool call alone).
        model: The model that answered, as the response names it.
        usage: Token counts (`usage_of`).
        response_id: The provider's id of the response.
        complete: The reply ended normally (False for a stream closed early).
    """

    text: str = ""
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    response_id: str | None = None
    complete: bool = True


def reply_from(source: Any, text: str, *, complete: bool) -> Reply:
    """A `Reply` with ``text`` and the model, usage and id of ``source``."""
    return Reply(
        text=text,
        model=field_of(source, "model"),
        usage=usage_of(field_of(source, "usage")),
        response_id=field_of(source, "id"),
        complete=complete,
    )


class TextCollector:
    """Base of the stream collectors: text parts and a `Reply` filled as chunks come.

    Subclasses read one chunk in `feed`, appending text to ``parts`` and setting
    the model, id and usage on ``gathered``.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.gathered = Reply(complete=False)

    def feed(self, chunk: Any) -> None:
        """Take one chunk (overridden by each API's collector)."""

    def note(self, source: Any) -> None:
        """Take the model, id and usage of a chunk, response or message when it has them."""
        self.gathered.model = field_of(source, "model") or self.gathered.model
        self.gathered.response_id = field_of(source, "id") or self.gathered.response_id
        self.gathered.usage.update(usage_of(field_of(source, "usage")))

    def reply(self, complete: bool) -> Reply:
        """The reply gathered so far."""
        self.gathered.text = "".join(self.parts)
        self.gathered.complete = complete
        return self.gathered


def sdk_version(client: Any) -> str | None:
    """``__version__`` of the SDK a client object comes from (found, never imported)."""
    package = type(client).__module__.split(".")[0]
    version = getattr(sys.modules.get(package), "__version__", None)
    return version if isinstance(version, str) else None


def capture_metadata(
    *,
    provider: str,
    api: str,
    client: Any,
    requested_model: Any,
    reply: Reply,
    started_at: datetime,
    latency_ms: float,
    stream: bool,
) -> dict[str, Any]:
    """Metadata of a captured turn: provider (the server the client talks to, see
    `memtrellis.clients.endpoints`), SDK, endpoint, API, model, SDK version, timing, usage."""
    model = reply.model or given(requested_model)
    served_by, endpoint = client_endpoint(provider, client)
    return {
        "capture": "sdk_client",
        "provider": served_by,
        "sdk": provider,
        "endpoint": endpoint,
        "api": api,
        "model": model if isinstance(model, str) else None,
        "sdk_version": sdk_version(client),
        "started_at": started_at.isoformat(),
        "latency_ms": round(latency_ms, 3),
        "stream": stream,
        "complete": reply.complete,
        "usage": dict(reply.usage),
        "response_id": reply.response_id,
    }


class Collector(Protocol):
    """Gathers a streamed reply chunk by chunk."""

    def feed(self, chunk: Any) -> None:
        """Take one chunk (it is passed on to the user unchanged)."""

    def reply(self, complete: bool) -> Reply:
        """The reply gathered so far; ``complete`` is False for a stream closed early."""
