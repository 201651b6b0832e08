"""Refine: turn fast-mode memories back into conversations for fine extraction.

A fast memory is one message (or a burst of one speaker's messages) with its sources, so
the conversation it came from can be rebuilt exactly: grouped by process and session,
ordered by time. ``Memory.refine`` feeds these to fine-mode extraction and links the new
memories to the old by ``supersedes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memtrellis.extraction.fast import FAST_TAG
from memtrellis.types import MemoryItem, one_voice

__all__ = ["RefineGroup", "RefineReport", "refine_groups"]


@dataclass
class RefineGroup:
    """One rebuilt conversation: its messages and which fast memory each came from."""

    process_id: str | None
    session_id: str | None
    messages: list[dict[str, Any]]
    memory_by_message: dict[str, str]


@dataclass
class RefineReport:
    """What ``Memory.refine`` did."""

    conversations: int = 0
    created: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    kept: int = 0  # fast memories no fine memory cited, left as they were


def refine_groups(items: Iterable[MemoryItem], *, limit: int | None = None) -> list[RefineGroup]:
    """Group active fast chat memories into conversations, oldest message first."""
    candidates = [
        item
        for item in items
        if FAST_TAG in item.tags
        and item.superseded_by is None
        and one_voice(item.sources, item.text) is not None
    ]
    candidates.sort(key=lambda i: (i.sources[0].timestamp or i.created_at, i.created_at, i.id))
    if limit is not None:
        candidates = candidates[:limit]
    groups: dict[tuple[str | None, str | None], RefineGroup] = {}
    for item in candidates:
        key = (item.scope.process_id, item.scope.session_id)
        group = groups.setdefault(key, RefineGroup(key[0], key[1], [], {}))
        single = len(item.sources) == 1  # its text is whole; a source keeps an excerpt
        for source in item.sources:
            message_id = source.message_id or item.id
            group.messages.append(
                {
                    "role": source.role or "user",
                    "content": item.text if single else source.content,
                    "id": message_id,
                    "timestamp": (source.timestamp or item.created_at).isoformat(),
                    "speaker": source.speaker,
                }
            )
            group.memory_by_message[message_id] = item.id
    return list(groups.values())
