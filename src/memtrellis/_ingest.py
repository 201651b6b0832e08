"""Turn what users pass to ``Memory.add`` into memory items, one per message.

This is the raw capture path: every message becomes an ``episode`` memory with its
source. The extraction core replaces it with distilled memories without changing the
signature of ``Memory.add``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memtrellis.errors import InvalidInputError
from memtrellis.types import MemoryItem, MemoryType, Scope, SourceKind, SourceRef, utcnow

__all__ = ["KNOWN_ROLES", "RawBatch", "items_from_input"]

log = logging.getLogger("memtrellis.ingest")

KNOWN_ROLES = frozenset({"user", "assistant", "system", "tool"})


@dataclass
class RawBatch:
    """Items built from one ``add`` call and the number of inputs skipped."""

    items: list[MemoryItem]
    skipped: int


def _content_text(content: Any) -> str | None:
    """Text of a message's content: a string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return None


def _timestamp(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value).astimezone()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInputError(f"message timestamp {value!r} is not ISO 8601") from exc
    raise InvalidInputError(f"message timestamp must be ISO 8601 text, got {type(value).__name__}")


def _optional_str(message: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = message.get(key)
        if value is not None:
            return str(value)
    return None


def items_from_input(
    data: Any,
    scope: Scope,
    *,
    memory_type: MemoryType | None,
    tags: Sequence[str],
    entities: Sequence[str],
    metadata: Mapping[str, Any] | None,
) -> RawBatch:
    """Build one item per text or message; unknown roles and empty messages are skipped."""
    if isinstance(data, (str, Mapping)):
        entries: list[Any] = [data]
    elif isinstance(data, Sequence) and not isinstance(data, (bytes, bytearray)):
        entries = list(data)
    else:
        raise InvalidInputError(
            "add() takes text, a message dict ({'role': ..., 'content': ...}) or a list of "
            f"them, not {type(data).__name__}"
        )
    if not entries:
        raise InvalidInputError("add() was given nothing to remember")
    now = utcnow()
    items: list[MemoryItem] = []
    skipped = 0
    for index, entry in enumerate(entries):
        if isinstance(entry, str):
            if not entry.strip():
                raise InvalidInputError("add() was given empty text")
            source = SourceRef(kind=SourceKind.TEXT, content=entry, timestamp=now, index=index)
            kind = memory_type or MemoryType.FACT
            valid_from = None
        elif isinstance(entry, Mapping):
            role = entry.get("role")
            text = _content_text(entry.get("content"))
            if not isinstance(role, str) or role not in KNOWN_ROLES:
                log.warning(
                    "skipped a message with role %r (not one of %s)", role, sorted(KNOWN_ROLES)
                )
                skipped += 1
                continue
            if text is None or not text.strip():
                log.info("skipped a %s message without text", role)
                skipped += 1
                continue
            when = _timestamp(entry.get("timestamp")) or now
            source = SourceRef(
                kind=SourceKind.CHAT,
                message_id=_optional_str(entry, "id", "message_id"),
                role=role,
                speaker=_optional_str(entry, "speaker", "name"),
                content=text,
                timestamp=when,
                index=index,
            )
            entry_text = text
            kind = memory_type or MemoryType.EPISODE
            valid_from = when
        else:
            raise InvalidInputError(
                f"item {index} of add() is a {type(entry).__name__}; "
                "expected text or a message dict"
            )
        try:
            items.append(
                MemoryItem(
                    text=entry if isinstance(entry, str) else entry_text,
                    memory_type=kind,
                    tags=list(tags),
                    entities=list(entities),
                    sources=[source],
                    scope=scope,
                    created_at=now,
                    valid_from=valid_from,
                    metadata=dict(metadata or {}),
                )
            )
        except ValueError as exc:
            raise InvalidInputError(f"item {index} of add() is not valid: {exc}") from exc
    return RawBatch(items=items, skipped=skipped)
