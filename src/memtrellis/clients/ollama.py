"""Ollama clients (``ollama.Client``, ``ollama.AsyncClient``): ``chat``.

* ``chat(model, messages, ...)``, with or without ``stream=True``; the model and messages
  may be given positionally, as the SDK allows.
* The memory context joins the leading ``system`` message, or comes in a system message
  of its own at the start (as for OpenAI's Chat Completions: Ollama's system field is
  that message); your list is not modified.
* A message's ``images`` (raw bytes, a path to an image file, base64 text or the SDK's
  ``Image``) are its attachments (`memtrellis.attachments`): a path gives the file's
  name, and its bytes are hashed as the SDK reads them to send them.
* The reply is the message's text and its ``tool_calls`` (`memtrellis.tool_calls`;
  Ollama gives calls no id, so a ``tool`` message's ``tool_name`` says which it
  answers); usage from ``prompt_eval_count`` and ``eval_count``. A streamed reply is
  gathered from its chunks and captured at the end.

``generate`` (a prompt and a ``system`` string, no conversation) is not patched, nor the
module-level ``ollama.chat`` (bound to a default client made at import): register a
client of your own. The SDK is never imported.

Examples:
    >>> reply = ollama_reply({"model": "llama3.2", "done": True, "prompt_eval_count": 9,
    ...                       "eval_count": 3, "message": {"role": "assistant", "content": "Hi"}})
    >>> reply.text, reply.model, reply.usage
    ('Hi', 'llama3.2', {'input_tokens': 9, 'output_tokens': 3})
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memtrellis.clients.calls import Api
from memtrellis.clients.endpoints import endpoint_provider
from memtrellis.clients.openai import place_chat
from memtrellis.clients.payload import (
    Reply,
    TextCollector,
    arguments_text,
    field_of,
    given,
    message_of,
)

__all__ = ["CHAT", "OLLAMA_APIS", "ollama_conversation", "ollama_reply"]

# A string with one of these endings is a path to the SDK, never base64 (it refuses a
# missing file by that ending).
_IMAGE_ENDINGS = ("png", "jpg", "jpeg", "webp")


def ollama_conversation(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``messages`` as text dicts; the ``images`` of each message after the
    last assistant message (the new turn, what is captured) as its attachments.

    Examples:
        >>> [message] = ollama_conversation({"messages": [
        ...     {"role": "user", "content": "What is this?", "images": [b"PNG..."]}]})
        >>> message["content"], message["attachments"]
        ('What is this?', [{'type': 'image', 'data': b'PNG...'}])
    """
    sent = list(given(kwargs.get("messages")) or ())
    roles = [field_of(message, "role") for message in sent]
    last = max((i for i, role in enumerate(roles) if role == "assistant"), default=-1)
    found: list[dict[str, Any]] = []
    for index, message in enumerate(sent):
        read = message_of(message)
        if read is None:
            continue
        images = field_of(message, "images") if index > last else None
        if images:
            read["attachments"] = [*read.get("attachments", ()), *map(_image_part, images)]
        found.append(read)
    return found


def _image_part(image: Any) -> dict[str, Any]:
    """One of a message's ``images`` as an image part: raw bytes, a path (its file's
    name, and its bytes when it can be read, as the SDK reads them), or base64 text."""
    if type(image).__name__ == "Image":  # the SDK's own wrapper
        image = getattr(image, "value", None)
    if isinstance(image, (bytes, bytearray)):
        return {"type": "image", "data": bytes(image)}
    path = _path_of(image)
    if path is not None:
        part: dict[str, Any] = {"type": "image", "name": path.name}
        with contextlib.suppress(OSError):  # else the SDK refuses the call: no capture
            part["data"] = path.read_bytes()
        return part
    return {"type": "image", "base64": image} if isinstance(image, str) else {"type": "image"}


def _path_of(image: Any) -> Path | None:
    """``image`` as a path when the SDK would read it as one."""
    if isinstance(image, Path):
        return image
    if not isinstance(image, str):
        return None
    try:
        if Path(image).is_file():
            return Path(image)
    except (OSError, ValueError):  # base64 too long for a file name, or a NUL in it
        return None
    return Path(image) if image.rsplit(".", 1)[-1].lower() in _IMAGE_ENDINGS else None


def _usage(response: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ours, theirs in (("input_tokens", "prompt_eval_count"), ("output_tokens", "eval_count")):
        value = field_of(response, theirs)
        if isinstance(value, int) and not isinstance(value, bool):
            counts[ours] = value
    return counts


def ollama_reply(response: Any) -> Reply | None:
    """A ``ChatResponse``: its message's text and tool calls, the model and usage."""
    message = field_of(response, "message")
    if message is None:
        return None
    read = message_of({"role": "assistant", **_message_fields(message)}) or {}
    return Reply(
        text=read.get("content", ""),
        tool_calls=list(read.get("tool_calls", ())),
        model=field_of(response, "model"),
        usage=_usage(response),
        complete=field_of(response, "done") is True,
    )


def _message_fields(message: Any) -> dict[str, Any]:
    return {"content": field_of(message, "content"), "tool_calls": field_of(message, "tool_calls")}


class OllamaCollector(TextCollector):
    """Gathers text, tool calls, the model and usage from streamed ``ChatResponse``s."""

    def feed(self, chunk: Any) -> None:
        """Take one chunk."""
        message = field_of(chunk, "message")
        text = field_of(message, "content")
        if isinstance(text, str):
            self.parts.append(text)
        for call in field_of(message, "tool_calls") or ():
            function = field_of(call, "function")  # a call arrives whole, in one chunk
            arguments = arguments_text(field_of(function, "arguments") or {})
            self.call_part(None, field_of(function, "name"), arguments)
        self.gathered.model = field_of(chunk, "model") or self.gathered.model
        self.gathered.usage.update(_usage(chunk))


def ollama_endpoint(client: Any) -> tuple[str, str | None]:
    """``("ollama", endpoint)``: the host the client was made for, scheme, host and port
    only (read from its HTTP client's ``base_url``)."""
    try:
        base_url = getattr(getattr(client, "_client", None), "base_url", None)
    except Exception:  # a property that fails: attribute nothing
        base_url = None
    return "ollama", endpoint_provider("ollama", None if base_url is None else str(base_url))[1]


CHAT = Api(
    provider="ollama",
    name="chat",
    path=(),
    methods={"chat": "call"},
    conversation=ollama_conversation,
    place=place_chat,
    reply=ollama_reply,
    collector=OllamaCollector,
    positional=("model", "messages"),
    endpoint=ollama_endpoint,
)

#: The Ollama APIs a registration patches.
OLLAMA_APIS = (CHAT,)
