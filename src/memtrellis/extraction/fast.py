"""Fast mode: no LLM. Each burst of messages becomes one memory; each text or document
chunk one.

A *burst* is consecutive messages of one speaker said close together
(`memtrellis.extraction.windows.bursts`): "omg" + "I got the job!!" is one thought, and
one memory, its text the messages joined by line breaks. Another speaker, a pause
longer than ``burst_gap`` seconds or a full burst (``burst_max_tokens``) starts the next
one; ``unit="message"`` keeps one memory per message. Every message keeps
its exact provenance (message id, role, speaker, timestamp) as one source of the memory:
a fast memory is what was said, which is what a later ``Memory.refine`` distils.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from datetime import datetime
from typing import Any

from memtrellis.errors import InvalidInputError
from memtrellis.extraction.model import Normalized, Turn, Window
from memtrellis.extraction.normalize import extractable
from memtrellis.extraction.windows import BURST_GAP, BURST_MAX_TOKENS, bursts
from memtrellis.types import MemoryItem, MemoryType, Scope, SourceKind

__all__ = ["FAST_TAG", "FAST_UNITS", "fast_items", "fast_units"]

#: Tag on every memory fast mode made; ``Memory.refine`` looks for it.
FAST_TAG = "mode:fast"
#: How fast mode can cut a conversation into memories.
FAST_UNITS = ("burst", "message")


def fast_units(
    conversation: Sequence[Turn],
    *,
    unit: str = "burst",
    extract_tools: bool = False,
    burst_gap: float = BURST_GAP,
    burst_max_tokens: int = BURST_MAX_TOKENS,
    undated: bool = False,
    skip: Container[str] = (),
) -> list[list[Turn]]:
    """The turns of each fast memory of one conversation, in order.

    Turns that are not extracted (system prompts, tool output unless asked for, context
    turns, and the message ids in ``skip``: call-only messages an answer follows, see
    `memtrellis.extraction.exchanges`) are left out and end a burst. ``undated``: see
    `memtrellis.extraction.windows.bursts`.

    Examples:
        >>> from datetime import datetime, timezone
        >>> at = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
        >>> chat = [Turn(0, 0, "user", "omg", "m0", at), Turn(0, 1, "user", "yes!!", "m1", at),
        ...         Turn(0, 2, "assistant", "Congrats!", "m2", at)]
        >>> [[t.message_id for t in u] for u in fast_units(chat)]
        [['m0', 'm1'], ['m2']]
        >>> [[t.message_id for t in u] for u in fast_units(chat, unit="message")]
        [['m0'], ['m1'], ['m2']]
    """
    if unit not in FAST_UNITS:
        raise InvalidInputError(f"fast_unit must be one of {FAST_UNITS}, not {unit!r}")
    runs: list[list[Turn]] = [[]]
    for turn in conversation:
        if extractable(turn, extract_tools=extract_tools) and turn.message_id not in skip:
            runs[-1].append(turn)
        elif runs[-1]:
            runs.append([])
    if unit == "message":
        return [[turn] for run in runs for turn in run]
    return [
        burst
        for run in runs
        if run
        for burst in bursts(run, max_gap=burst_gap, max_tokens=burst_max_tokens, undated=undated)
    ]


def fast_items(
    normalized: Normalized,
    document_windows: Sequence[Window],
    scope: Scope,
    *,
    now: datetime,
    memory_type: MemoryType | None = None,
    tags: Sequence[str] = (),
    entities: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    extract_tools: bool = False,
    unit: str = "burst",
    burst_gap: float = BURST_GAP,
    burst_max_tokens: int = BURST_MAX_TOKENS,
    one_turn: bool = False,
    skip: Container[str] = (),
) -> list[MemoryItem]:
    """One item per burst (or message, see `fast_units`), then one per document window.

    Bursts are episodes: with another ``memory_type`` (a fact the caller vouches for)
    every message is one memory. ``one_turn``: the messages are one captured turn, so
    undated ones may form bursts. ``skip``: message ids that make no memory (see
    `fast_units`).
    """
    base_tags = [*tags, FAST_TAG]
    items: list[MemoryItem] = []
    if memory_type not in (None, MemoryType.EPISODE):
        unit = "message"
    for conversation in normalized.conversations:
        for said in fast_units(
            conversation,
            unit=unit,
            extract_tools=extract_tools,
            burst_gap=burst_gap,
            burst_max_tokens=burst_max_tokens,
            undated=one_turn,
            skip=skip,
        ):
            items.append(
                MemoryItem(
                    text="\n".join(turn.content for turn in said),
                    memory_type=memory_type or MemoryType.EPISODE,
                    tags=base_tags,
                    entities=list(entities),
                    sources=[turn.source() for turn in said],
                    scope=scope,
                    created_at=now,
                    valid_from=said[0].timestamp,
                    metadata=dict(metadata or {}),
                )
            )
    for window in document_windows:
        kind_tag = "document" if window.kind is SourceKind.DOC else None
        items.append(
            MemoryItem(
                text=window.text,
                memory_type=memory_type or MemoryType.FACT,
                tags=[*base_tags, kind_tag] if kind_tag else base_tags,
                entities=list(entities),
                sources=list(window.sources),
                scope=scope,
                created_at=now,
                metadata=dict(metadata or {}),
            )
        )
    return items
