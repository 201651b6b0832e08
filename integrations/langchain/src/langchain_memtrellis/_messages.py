"""LangChain messages to the core's message dicts and back, and memory context in them.

Placement and stripping reuse [`memtrellis.context`][memtrellis.context] on light dict views of the
messages, so the rules (append to the leading system message or insert one; take
blocks back out) are written once for every adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from memtrellis.context import MemoryContext, place_in_messages, strip_content, turn

__all__ = ["last_user_text", "new_turn", "place", "role_of", "strip", "to_dict"]

Position = Literal["append", "insert"]

_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"),
    (AIMessage, "assistant"),
    (SystemMessage, "system"),
    (ToolMessage, "tool"),
    (FunctionMessage, "tool"),
)


def role_of(message: BaseMessage) -> str:
    """The core's role for a LangChain message (human -> ``user``, ai -> ``assistant``...).

    Chunks are subclasses of their messages, so they map the same way.
    """
    if isinstance(message, ChatMessage):
        return message.role
    for kind, role in _ROLES:
        if isinstance(message, kind):
            return role
    return message.type


def to_dict(message: BaseMessage) -> dict[str, Any]:
    """A message as ``{"role", "content", "id"?, "name"?}`` with its text content."""
    out: dict[str, Any] = {"role": role_of(message), "content": message.text}
    if message.id:
        out["id"] = message.id
    if message.name:
        out["name"] = message.name
    return out


def last_user_text(messages: Sequence[BaseMessage]) -> str | None:
    """Text of the last user message (what recall searches with), None if there is none."""
    return turn.last_user_text([to_dict(m) for m in messages])


def new_turn(messages: Sequence[BaseMessage], reply: BaseMessage | None) -> list[dict[str, Any]]:
    """The messages this call added, and the reply, as dicts for ``Memory.capture``.

    A chat model is sent the whole conversation every call; only what follows the last
    assistant message is new. System messages (instructions, placed memory context) and
    messages without text (a tool call alone) are left out
    ([`new_turn`][memtrellis.context.new_turn]).
    """
    return turn.new_turn(
        [to_dict(m) for m in messages], to_dict(reply) if reply is not None else None
    )


def place(
    messages: Sequence[BaseMessage], context: MemoryContext, position: Position = "append"
) -> list[BaseMessage]:
    """``messages`` with the block placed as
    [`place_in_messages`][memtrellis.context.place_in_messages] does."""
    out = list(messages)
    if context.empty:
        return out
    views = [
        {"role": "system" if isinstance(m, SystemMessage) else "other", "content": m.content}
        for m in messages
    ]
    placed = place_in_messages(views, context, position=position)
    if placed.index is None:
        return out
    content = placed.messages[placed.index]["content"]
    if placed.inserted:
        out.insert(placed.index, SystemMessage(content=content))
    else:
        out[placed.index] = out[placed.index].model_copy(update={"content": content})
    return out


def strip(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` without memory-context blocks; a message holding only a block is dropped."""
    out: list[BaseMessage] = []
    for message in messages:
        content = strip_content(message.content)
        if content == message.content:
            out.append(message)
        elif content:
            out.append(message.model_copy(update={"content": content}))
    return out
