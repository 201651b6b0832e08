"""OpenAI clients (``OpenAI``, ``AsyncOpenAI``): Chat Completions and Responses.

* ``chat.completions.create`` and ``.parse``: memory context joins the leading system
  (or developer) message, or comes in a system message of its own; the request's other
  messages are passed on as they were given.
* ``responses.create`` and ``.parse``: memory context is added after the
  ``instructions``; ``function_call`` and ``function_call_output`` input items are the
  assistant's tool calls and the tools' results.

The SDK is never imported: requests are read as the dicts (or SDK objects) users pass,
responses and stream chunks by attribute. ``chat.completions.stream`` calls ``create``
and so gets memory through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memtrellis.clients.calls import Api
from memtrellis.clients.payload import (
    Reply,
    TextCollector,
    field_of,
    given,
    message_of,
    reply_from,
    request_messages,
    text_of,
    tool_result,
)
from memtrellis.context import MemoryContext, place_in_instructions, place_in_messages
from memtrellis.tool_calls import neutral_call

__all__ = ["CHAT", "OPENAI_APIS", "RESPONSES"]


# -- Chat Completions ---------------------------------------------------------------------
def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    return dict(message.model_dump(exclude_none=True))


def place_chat(kwargs: dict[str, Any], context: MemoryContext) -> dict[str, Any]:
    """``messages`` with the block in the leading system message or a new one."""
    messages = list(given(kwargs.get("messages")) or ())
    views = [{"role": field_of(m, "role"), "content": field_of(m, "content")} for m in messages]
    placed = place_in_messages(views, context)
    if placed.index is None:
        return kwargs
    content = placed.messages[placed.index]["content"]
    if placed.inserted:
        messages.insert(placed.index, {"role": "system", "content": content})
    else:
        messages[placed.index] = {**_as_dict(messages[placed.index]), "content": content}
    return {**kwargs, "messages": messages}


def chat_reply(response: Any) -> Reply | None:
    """A ``ChatCompletion`` (or ``ParsedChatCompletion``): the first choice's text."""
    choices = field_of(response, "choices")
    if not choices:
        return None
    choice = choices[0]
    read = message_of(field_of(choice, "message")) or {}
    complete = field_of(choice, "finish_reason") is not None
    return reply_from(
        response, read.get("content") or "", complete=complete, calls=read.get("tool_calls", ())
    )


class ChatCollector(TextCollector):
    """Gathers the first choice's text, the model and usage from ``ChatCompletionChunk``s."""

    def feed(self, chunk: Any) -> None:
        """Take one chunk."""
        self.note(chunk)
        for choice in field_of(chunk, "choices") or ():
            if field_of(choice, "index") not in (0, None):
                continue
            delta = field_of(choice, "delta")
            text = field_of(delta, "content")
            if isinstance(text, str):
                self.parts.append(text)
            for call in field_of(delta, "tool_calls") or ():
                function = field_of(call, "function")
                self.call_part(
                    field_of(call, "index"), field_of(function, "name"),
                    field_of(function, "arguments"), field_of(call, "id"),
                )  # fmt: skip


CHAT = Api(
    provider="openai",
    name="chat.completions",
    path=("chat", "completions"),
    methods={"create": "call", "parse": "call"},
    conversation=request_messages,
    place=place_chat,
    reply=chat_reply,
    collector=ChatCollector,
)


# -- Responses ----------------------------------------------------------------------------
def _input_item(item: Any) -> dict[str, Any] | None:
    """One Responses input item: a message, a ``function_call`` (the assistant's call)
    or a ``function_call_output`` (the tool's result)."""
    kind = field_of(item, "type")
    if kind == "function_call":
        call = neutral_call(
            field_of(item, "name"), field_of(item, "arguments"), field_of(item, "call_id")
        )
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    if kind == "function_call_output":
        return tool_result(field_of(item, "output"), field_of(item, "call_id"))
    return message_of(item)


def responses_conversation(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input``: a string is one user message; items with a role, tool
    calls and their outputs are kept (consecutive calls as one assistant message)."""
    given_input = given(kwargs.get("input"))
    if isinstance(given_input, str):
        return [{"role": "user", "content": given_input}]
    out: list[dict[str, Any]] = []
    for item in given_input or ():
        found = _input_item(item)
        if found is None:
            continue
        previous = out[-1] if out else None
        if (  # parallel calls arrive as items of their own: one message of them
            previous is not None
            and found.get("tool_calls")
            and previous.get("tool_calls")
            and not previous.get("content")
        ):
            previous["tool_calls"] = [*previous["tool_calls"], *found["tool_calls"]]
            continue
        out.append(found)
    return out


def place_responses(kwargs: dict[str, Any], context: MemoryContext) -> dict[str, Any]:
    """``instructions`` with the block after them."""
    instructions = given(kwargs.get("instructions"))
    return {**kwargs, "instructions": place_in_instructions(instructions, context)}


def _output_calls(response: Any) -> list[dict[str, Any]]:
    return [
        neutral_call(field_of(item, "name"), field_of(item, "arguments"), field_of(item, "call_id"))
        for item in field_of(response, "output") or ()
        if field_of(item, "type") == "function_call"
    ]


def _output_text(response: Any) -> str:
    text = field_of(response, "output_text")
    if not isinstance(text, str):
        parts = [
            text_of(field_of(item, "content"))
            for item in field_of(response, "output") or ()
            if field_of(item, "type") == "message"
        ]
        text = "".join(parts)
    return text


def responses_reply(response: Any) -> Reply | None:
    """A ``Response``: its output text and tool calls, model, usage and status."""
    if field_of(response, "output") is None:
        return None
    complete = field_of(response, "status") == "completed"
    return reply_from(
        response, _output_text(response), complete=complete, calls=_output_calls(response)
    )


class ResponsesCollector(TextCollector):
    """Gathers output text deltas and the final response's model and usage."""

    def feed(self, event: Any) -> None:
        """Take one stream event."""
        kind = field_of(event, "type")
        if kind == "response.output_text.delta":
            delta = field_of(event, "delta")
            if isinstance(delta, str):
                self.parts.append(delta)
            return
        if kind == "response.output_item.done":
            item = field_of(event, "item")
            if field_of(item, "type") == "function_call":
                self.call_part(
                    field_of(event, "output_index"), field_of(item, "name"),
                    field_of(item, "arguments"), field_of(item, "call_id"),
                )  # fmt: skip
            return
        response = field_of(event, "response")
        if response is not None:
            self.note(response)


RESPONSES = Api(
    provider="openai",
    name="responses",
    path=("responses",),
    methods={"create": "call", "parse": "call"},
    conversation=responses_conversation,
    place=place_responses,
    reply=responses_reply,
    collector=ResponsesCollector,
)

#: The OpenAI APIs a registration patches.
OPENAI_APIS = (CHAT, RESPONSES)
