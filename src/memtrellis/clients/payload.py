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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import Any, Protocol

from memtrellis.attachments import content_text, is_attachment_part
from memtrellis.clients.endpoints import client_endpoint
from memtrellis.tool_calls import (
    arguments_text,
    calls_of,
    neutral_call,
    only_tool_results,
    result_of,
)

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
    "tool_result",
    "usage_of",
    "with_results",
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


def tool_result(
    content: Any,
    call_id: Any,
    *,
    name: Any = None,
    failed: bool = False,
    attachments: Sequence[Any] = (),
) -> dict[str, Any]:
    """A tool's output in the core's message shape (`memtrellis.tool_calls`), with the
    images and files it returned: ``attachments`` and the attachment parts of a list
    ``content`` (an Anthropic ``tool_result``'s blocks).

    Examples:
        >>> tool_result("18 °C", "call_1", name="get_weather")
        {'role': 'tool', 'content': '18 °C', 'tool_call_id': 'call_1', 'name': 'get_weather'}
    """
    out: dict[str, Any] = {"role": "tool", "content": text_of(content) or arguments_text(content)}
    if isinstance(call_id, str) and call_id:
        out["tool_call_id"] = call_id
    if isinstance(name, str) and name:
        out["name"] = name
    if failed:
        out["status"] = "error"
    listed = content if isinstance(content, Sequence) and not isinstance(content, str) else ()
    attached = [*(p for p in listed if is_attachment_part(p)), *attachments]
    if attached:  # read by the core (memtrellis.attachments) with the result
        out["attachments"] = attached
    return out


def with_results(results: list[dict[str, Any]], message: dict[str, Any]) -> list[dict[str, Any]]:
    """A request message holding tools' results (Google's ``function_response`` parts,
    Bedrock's ``toolResult`` blocks): one tool message per result (`tool_result`), then
    ``message``, what else it says, when it has text or tool calls; else its attachments
    (an image sent beside the results) go with the last result.

    Examples:
        >>> image = {"image": {"format": "png", "source": {"bytes": b"PNG"}}}
        >>> [result] = with_results([tool_result("18 °C", "t1")],
        ...                         {"role": "user", "content": "", "attachments": [image]})
        >>> result["content"], result["attachments"] == [image]
        ('18 °C', True)
    """
    if not results:
        return [message]
    if message.get("content") or message.get("tool_calls"):
        return [*results, message]
    beside = message.get("attachments") or []
    if not beside:
        return results
    last = results[-1]
    return [*results[:-1], {**last, "attachments": [*last.get("attachments", ()), *beside]}]


def message_of(message: Any) -> dict[str, Any] | None:
    """A request message (dict or SDK object) as ``{"role", "content", "name"?}`` with its
    text, its tool calls (``tool_calls``, `memtrellis.tool_calls.neutral_call`) and, for a
    tool's output, the call it answers (``tool_call_id``)."""
    role = field_of(message, "role")
    if not isinstance(role, str):
        return None
    content = given(field_of(message, "content"))
    out: dict[str, Any] = {"role": role, "content": text_of(content)}
    if role == "tool" or only_tool_results(content):  # Anthropic: a user message of them
        found = {
            "role": "tool",
            "content": content,
            "tool_call_id": field_of(message, "tool_call_id"),
        }
        result = result_of(found)
        assert result is not None
        out["role"] = "tool"
        if result.call_id:
            out["tool_call_id"] = result.call_id
        if result.failed:
            out["status"] = "error"
    calls = [neutral_call(c.name, c.arguments, c.call_id) for c in calls_of(message)]
    if calls:
        out["tool_calls"] = calls
    if isinstance(content, Sequence) and not isinstance(content, (str, bytes, bytearray)):
        parts = [p if isinstance(p, Mapping) else _as_dict(p) for p in content]
        attached = [p for p in parts if is_attachment_part(p)]
        if attached:  # images, files, audio: read by the core (memtrellis.attachments)
            out["attachments"] = attached
    name = field_of(message, "name") or field_of(message, "tool_name")  # Ollama: tool_name
    if isinstance(name, str) and name:
        out["name"] = name
    return out


def messages_of(message: Any) -> list[dict[str, Any]]:
    """`message_of`, with an Anthropic user message of ``tool_result`` blocks as one tool
    message per result (with the images and documents it returned)."""
    content = given(field_of(message, "content"))
    if field_of(message, "role") == "user" and only_tool_results(content):
        return [
            tool_result(
                field_of(block, "content"),
                field_of(block, "tool_use_id"),
                failed=field_of(block, "is_error") is True,
            )
            for block in content
        ]
    found = message_of(message)
    return [found] if found is not None else []


def _as_dict(part: Any) -> Any:
    """An SDK's content block object as a plain dict (pydantic models), else as it is."""
    dump = getattr(part, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else part


def request_messages(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A request's ``messages`` (Chat Completions, Anthropic Messages) as text dicts."""
    return [found for m in given(kwargs.get("messages")) or () for found in messages_of(m)]


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
        text: The reply's text.
        tool_calls: The tool calls it made, as ``{"id", "name", "arguments"}``
            (`memtrellis.tool_calls`); the core writes a line of its text for each.
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
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def message(self) -> dict[str, Any] | None:
        """The reply as the assistant's message of the turn; None when it says nothing.

        Examples:
            >>> Reply(text="", tool_calls=[{"name": "w", "arguments": "{}"}]).message()
            {'role': 'assistant', 'content': '', 'tool_calls': [{'name': 'w', 'arguments': '{}'}]}
        """
        if not self.text and not self.tool_calls:
            return None
        out: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            out["tool_calls"] = list(self.tool_calls)
        return out


def reply_from(
    source: Any, text: str, *, complete: bool, calls: Sequence[dict[str, Any]] = ()
) -> Reply:
    """A `Reply` with ``text``, ``calls`` and the model, usage and id of ``source``."""
    return Reply(
        text=text,
        model=field_of(source, "model"),
        usage=usage_of(field_of(source, "usage")),
        response_id=field_of(source, "id"),
        complete=complete,
        tool_calls=list(calls),
    )


class TextCollector:
    """Base of the stream collectors: text parts and a `Reply` filled as chunks come.

    Subclasses read one chunk in `feed`, appending text to ``parts`` and setting
    the model, id and usage on ``gathered``.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        #: Streamed tool calls by index: the name, the argument fragments so far, the id.
        self.calls: dict[int, tuple[str, list[str], str | None]] = {}
        self.gathered = Reply(complete=False)

    def call_part(
        self, index: Any, name: Any = None, arguments: Any = None, call_id: Any = None
    ) -> None:
        """Take a piece of a streamed tool call (its name and id, or a fragment of
        arguments)."""
        key = index if isinstance(index, int) else len(self.calls)
        known, parts, known_id = self.calls.get(key, ("", [], None))
        if isinstance(arguments, str):
            parts.append(arguments)
        elif arguments is not None:
            parts.append(arguments_text(arguments))
        self.calls[key] = (
            name if isinstance(name, str) and name else known,
            parts,
            call_id if isinstance(call_id, str) and call_id else known_id,
        )

    def feed(self, chunk: Any) -> None:
        """Take one chunk (overridden by each API's collector)."""

    def note(self, source: Any) -> None:
        """Take the model, id and usage of a chunk, response or message when it has them."""
        self.gathered.model = field_of(source, "model") or self.gathered.model
        self.gathered.response_id = field_of(source, "id") or self.gathered.response_id
        self.gathered.usage.update(usage_of(field_of(source, "usage")))

    def reply(self, complete: bool) -> Reply:
        """The reply gathered so far (its text and its tool calls)."""
        self.gathered.text = "".join(self.parts)
        self.gathered.tool_calls = [
            neutral_call(name, "".join(parts), call_id)
            for _, (name, parts, call_id) in sorted(self.calls.items())
        ]
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
