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

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import Any, Protocol

from memtrellis.attachments import content_text, is_attachment_part
from memtrellis.clients.endpoints import client_endpoint

__all__ = [
    "USAGE_FIELDS",
    "Collector",
    "Reply",
    "TextCollector",
    "arguments_text",
    "capture_metadata",
    "field_of",
    "given",
    "message_of",
    "reply_from",
    "request_messages",
    "sdk_version",
    "text_of",
    "tool_call_text",
    "tool_use_calls",
    "usage_of",
    "with_calls",
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
    """The text of message content: a string, or the text of its text parts/blocks
    (`memtrellis.attachments.content_text`); an SDK's omit sentinel has none."""
    return content_text(given(content))


def tool_call_text(name: Any, arguments: Any) -> str:
    """A tool call as the text a captured turn keeps: ``[tool call] name({...})``.

    The arguments are often the answer itself (a tool-forced structured answer), so they
    are kept whole: a JSON string as given, anything else as JSON.

    Examples:
        >>> tool_call_text("get_weather", '{"city": "Porto"}')
        '[tool call] get_weather({"city": "Porto"})'
        >>> tool_call_text("book", {"day": "Friday", "seats": 2})
        '[tool call] book({"day": "Friday", "seats": 2})'
    """
    shown = name if isinstance(name, str) and name else "tool"
    return f"[tool call] {shown}({arguments_text(arguments)})"


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as text: a JSON string as given, anything else as JSON.

    Examples:
        >>> arguments_text({"city": "Porto"}), arguments_text('{"a": 1}')
        ('{"city": "Porto"}', '{"a": 1}')
    """
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(arguments)


def with_calls(text: str, calls: Sequence[str]) -> str:
    """A reply's text followed by its tool calls, one a line."""
    return "\n".join(part for part in (text, *calls) if part)


def _calls_in(message: Any) -> list[str]:
    """The tool calls of an assistant message: OpenAI ``tool_calls`` or Anthropic
    ``tool_use`` blocks."""
    calls = [
        tool_call_text(field_of(function, "name"), field_of(function, "arguments"))
        for call in field_of(message, "tool_calls") or ()
        if (function := field_of(call, "function")) is not None
    ]
    return calls + tool_use_calls(given(field_of(message, "content")))


def tool_use_calls(content: Any) -> list[str]:
    """The Anthropic ``tool_use`` blocks of a message's content, as `tool_call_text`."""
    if not isinstance(content, Sequence) or isinstance(content, (str, bytes, bytearray)):
        return []
    return [
        tool_call_text(field_of(block, "name"), field_of(block, "input"))
        for block in content
        if field_of(block, "type") == "tool_use"
    ]


def _only_tool_results(content: Any) -> bool:
    if isinstance(content, (str, bytes, bytearray)) or not isinstance(content, Sequence):
        return False
    return bool(content) and all(field_of(b, "type") == "tool_result" for b in content)


def message_of(message: Any) -> dict[str, Any] | None:
    """A request message (dict or SDK object) as ``{"role", "content", "name"?}`` with text
    (an assistant's tool calls included, as `tool_call_text`)."""
    role = field_of(message, "role")
    if not isinstance(role, str):
        return None
    content = given(field_of(message, "content"))
    text = text_of(content)
    if _only_tool_results(content):
        role = "tool"  # Anthropic sends a tool's output as a user message of result blocks
    out: dict[str, Any] = {"role": role, "content": with_calls(text, _calls_in(message))}
    if isinstance(content, Sequence) and not isinstance(content, (str, bytes, bytearray)):
        parts = [p if isinstance(p, Mapping) else _as_dict(p) for p in content]
        attached = [p for p in parts if is_attachment_part(p)]
        if attached:  # images, files, audio: read by the core (memtrellis.attachments)
            out["attachments"] = attached
    name = field_of(message, "name")
    if isinstance(name, str) and name:
        out["name"] = name
    return out


def _as_dict(part: Any) -> Any:
    """An SDK's content block object as a plain dict (pydantic models), else as it is."""
    dump = getattr(part, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else part


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
        text: The reply's text, then each tool call it made (`tool_call_text`), one a line.
        model: The model that answered, as the response names it.
        usage: Token counts (`usage_of`).
        response_id: The provider's id of the response.
        complete: The reply ended normally (False for a stream closed early).
        provider: The provider the reply says served it (LiteLLM's routing), if any.
    """

    text: str = ""
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    response_id: str | None = None
    complete: bool = True
    provider: str | None = None


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
        #: Streamed tool calls by index: the name and the argument fragments so far.
        self.calls: dict[int, tuple[str, list[str]]] = {}
        self.gathered = Reply(complete=False)

    def call_part(self, index: Any, name: Any = None, arguments: Any = None) -> None:
        """Take a piece of a streamed tool call (its name, or a fragment of arguments)."""
        key = index if isinstance(index, int) else len(self.calls)
        known, parts = self.calls.get(key, ("", []))
        if isinstance(arguments, str):
            parts.append(arguments)
        self.calls[key] = (name if isinstance(name, str) and name else known, parts)

    def feed(self, chunk: Any) -> None:
        """Take one chunk (overridden by each API's collector)."""

    def note(self, source: Any) -> None:
        """Take the model, id and usage of a chunk, response or message when it has them."""
        self.gathered.model = field_of(source, "model") or self.gathered.model
        self.gathered.response_id = field_of(source, "id") or self.gathered.response_id
        self.gathered.usage.update(usage_of(field_of(source, "usage")))

    def reply(self, complete: bool) -> Reply:
        """The reply gathered so far (its tool calls after its text)."""
        calls = [tool_call_text(n, "".join(a)) for _, (n, a) in sorted(self.calls.items())]
        self.gathered.text = with_calls("".join(self.parts), calls)
        self.gathered.complete = complete
        return self.gathered


def sdk_version(client: Any) -> str | None:
    """``__version__`` of the SDK a client object (or module, such as ``litellm``) comes
    from: its module's or the nearest enclosing package's (``google.genai``, not
    ``google``), found in ``sys.modules``, never imported; else the installed
    distribution's version (``ollama`` and ``litellm`` have no ``__version__``).

    Examples:
        >>> import json
        >>> sdk_version(json.JSONDecoder()) == json.__version__
        True
    """
    name = client.__name__ if isinstance(client, ModuleType) else type(client).__module__
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        version = getattr(sys.modules.get(".".join(parts[:end])), "__version__", None)
        if isinstance(version, str):
            return version
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed
    except ImportError:  # pragma: no cover - in the standard library since 3.8
        return None
    try:
        return installed(parts[0])
    except (PackageNotFoundError, ValueError):
        return None


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
    endpoint: Callable[[Any], tuple[str, str | None]] | None = None,
    routed: str | None = None,
) -> dict[str, Any]:
    """Metadata of a captured turn: provider (the server the client talks to, see
    `memtrellis.clients.endpoints`, or as ``endpoint`` reads it from the client), SDK,
    endpoint, API, model, SDK version, timing, usage."""
    model = reply.model or given(requested_model)
    served_by, where = (endpoint or (lambda c: client_endpoint(provider, c)))(client)
    served_by = reply.provider or routed or served_by
    return {
        "capture": "sdk_client",
        "provider": served_by,
        "sdk": provider,
        "endpoint": where,
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
