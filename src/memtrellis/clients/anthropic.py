"""Anthropic clients (``Anthropic``, ``AsyncAnthropic``): the Messages API.

``messages.create``, ``messages.parse`` and ``messages.stream``: memory context is added
to ``system`` (a string, or a list of text blocks). ``messages.stream`` returns a stream
manager; the recall runs when its ``with`` block is entered, the user gets the SDK's own
``MessageStream``, and the turn is captured from its message snapshot when the block
ends (used up or left early). ``create(stream=True)`` streams are captured from their
events. The SDK is never imported.
"""

from __future__ import annotations

from typing import Any

from memtrellis.clients.calls import Api
from memtrellis.clients.payload import (
    Reply,
    TextCollector,
    field_of,
    given,
    reply_from,
    request_messages,
    text_of,
    usage_of,
)
from memtrellis.context import MemoryContext, place_in_anthropic_system
from memtrellis.tool_calls import calls_of, neutral_call

__all__ = ["ANTHROPIC_APIS", "MESSAGES"]


def place_system(kwargs: dict[str, Any], context: MemoryContext) -> dict[str, Any]:
    """``system`` with the block added (as text, or as one more text block)."""
    return {**kwargs, "system": place_in_anthropic_system(given(kwargs.get("system")), context)}


def message_reply(message: Any) -> Reply | None:
    """A ``Message`` (or a stream's message snapshot): its text blocks, its ``tool_use``
    blocks (tool calls), model and usage."""
    content = field_of(message, "content")
    if content is None:
        return None
    text = text_of([b for b in content if field_of(b, "type") == "text"])
    calls = [neutral_call(c.name, c.arguments, c.call_id) for c in calls_of({"content": content})]
    complete = field_of(message, "stop_reason") is not None
    return reply_from(message, text, complete=complete, calls=calls)


class EventCollector(TextCollector):
    """Gathers text deltas, the model and usage from raw Messages stream events."""

    def feed(self, event: Any) -> None:
        """Take one stream event."""
        kind = field_of(event, "type")
        if kind == "message_start":
            self.note(field_of(event, "message"))
        elif kind == "content_block_start":
            block = field_of(event, "content_block")
            if field_of(block, "type") == "tool_use":
                index, name, call_id = (field_of(event, "index"), field_of(block, "name"),
                                        field_of(block, "id"))  # fmt: skip
                self.call_part(index, name, None, call_id)
        elif kind == "content_block_delta":
            delta = field_of(event, "delta")
            if field_of(delta, "type") == "text_delta":
                self.parts.append(str(field_of(delta, "text") or ""))
            elif field_of(delta, "type") == "input_json_delta":
                partial = field_of(delta, "partial_json")
                self.call_part(field_of(event, "index"), None, partial)
        elif kind == "message_delta":
            self.gathered.usage.update(usage_of(field_of(event, "usage")))


MESSAGES = Api(
    provider="anthropic",
    name="messages",
    path=("messages",),
    methods={"create": "call", "parse": "call", "stream": "manager"},
    conversation=request_messages,
    place=place_system,
    reply=message_reply,
    collector=EventCollector,
)

#: The Anthropic APIs a registration patches.
ANTHROPIC_APIS = (MESSAGES,)
