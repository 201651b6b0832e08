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
from memtrellis.tool_calls import neutral_call
from memtrellis.types import TOOL_KINDS, MemoryItem, SourceKind, SourceRef, one_voice, voice_sources

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
    candidates.sort(  # messages said at one time keep their order in the conversation
        key=lambda i: (
            i.sources[0].timestamp or i.created_at,
            i.created_at,
            i.sources[0].index or 0,
            i.id,
        )
    )
    if limit is not None:
        candidates = candidates[:limit]
    groups: dict[tuple[str | None, str | None], RefineGroup] = {}
    for item in candidates:
        key = (item.scope.process_id, item.scope.session_id)
        group = groups.setdefault(key, RefineGroup(key[0], key[1], [], {}))
        said = voice_sources(item.sources)
        single = len(said) == 1  # its text is whole; a source keeps an excerpt
        # The tools an answer rests on come before it, as the messages they were.
        own = {s.message_id for s in said}
        tools = [s for s in item.sources if s.kind in TOOL_KINDS and s.message_id not in own]
        group.messages.extend(_tool_messages(tools, group.messages, item))
        for source in said:
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


def _tool_messages(
    sources: list[SourceRef], known: list[dict[str, Any]], item: MemoryItem
) -> list[dict[str, Any]]:
    """Tool sources as the messages they came from: an assistant message of its calls,
    a tool message of its result (those the conversation already has left out)."""
    seen = {(m["role"], m["id"]) for m in known}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for source in sources:
        use, role = source.tool, "assistant" if source.kind is SourceKind.TOOL_CALL else "tool"
        key = (role, source.message_id or f"{item.id}:{role}:{len(out)}")
        if key in seen or use is None:
            continue
        when = (source.timestamp or item.created_at).isoformat()
        if role == "assistant":
            message = out.setdefault(
                key,
                {"role": role, "content": "", "tool_calls": [], "id": key[1], "timestamp": when},
            )
            message["tool_calls"].append(neutral_call(use.name, use.arguments, use.call_id))
        else:
            out[key] = {"role": role, "content": source.content, "id": key[1], "timestamp": when,
                        "name": use.name, "tool_call_id": use.call_id}  # fmt: skip
    return list(out.values())
