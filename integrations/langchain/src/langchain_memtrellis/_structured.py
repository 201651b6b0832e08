"""A structured answer (``with_structured_output``, ``response_format``) as readable text.

A structured answer reaches the wrapper as a tool call (or JSON text) and the agent
middleware as the parsed object; capture stores neither as is, but this rendering:
``City (name: Lisbon; country: Portugal)``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

__all__ = ["render_structured", "structured_reply"]


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _render(value: Any) -> str:
    value = _plain(value)
    if isinstance(value, Mapping):
        parts = [
            f"{str(key).replace('_', ' ')}: {_render(item)}"
            for key, item in value.items()
            if item not in (None, "", [], {})
        ]
        return "; ".join(parts)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        items = [_render(item) for item in value]
        nested = any(isinstance(_plain(item), Mapping) for item in value)
        return ", ".join(f"({item})" for item in items) if nested else ", ".join(items)
    return str(value)


def render_structured(value: Any, name: str | None = None) -> str:
    """``value`` (a pydantic model, dataclass, dict, list...) as one readable line.

    Args:
        value: The structured answer.
        name: The schema's name, shown before the fields (default: a model's class name).

    Examples:
        >>> render_structured({"name": "Lisbon", "sights": ["Alfama", "Belém"]}, "City")
        'City (name: Lisbon; sights: Alfama, Belém)'
    """
    if name is None and isinstance(value, BaseModel):
        name = type(value).__name__
    body = _render(value)
    if isinstance(_plain(value), Mapping) and name:
        return f"{name} ({body})"
    return f"{name}: {body}" if name else body


def structured_reply(message: BaseMessage | None) -> BaseMessage | None:
    """A structured-output reply with its answer rendered as its text content.

    The answer is the first tool call's arguments (the tool-calling method), else the
    text parsed as JSON (the JSON modes); a reply that is neither is returned as it is.

    Examples:
        >>> call = {"name": "City", "args": {"name": "Faro"}, "id": "c1"}
        >>> structured_reply(AIMessage(content="", tool_calls=[call])).content
        'City (name: Faro)'
        >>> structured_reply(AIMessage(content='{"name": "Porto", "country": "PT"}')).content
        'name: Porto; country: PT'
        >>> structured_reply(AIMessage(content="plain words")).content
        'plain words'
    """
    if not isinstance(message, AIMessage):
        return message
    if message.tool_calls:
        call = message.tool_calls[0]
        text = render_structured(call.get("args") or {}, call.get("name") or None)
    else:
        try:
            parsed = json.loads(message.text)
        except ValueError:
            return message
        if not isinstance(parsed, dict | list):
            return message
        text = render_structured(parsed)
    return AIMessage(content=text, id=message.id)
