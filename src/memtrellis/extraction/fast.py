"""Fast mode: no LLM. Each message becomes one memory; each text or document chunk one.

Messages keep their exact provenance (message id, role, speaker, timestamp): a fast
memory is the message itself, which is what a later ``Memory.refine`` distils.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memtrellis.extraction.model import Normalized, Window
from memtrellis.extraction.normalize import extractable
from memtrellis.types import MemoryItem, MemoryType, Scope, SourceKind

__all__ = ["FAST_TAG", "fast_items"]

#: Tag on every memory fast mode made; ``Memory.refine`` looks for it.
FAST_TAG = "mode:fast"


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
) -> list[MemoryItem]:
    """One item per extractable message, then one per document window."""
    base_tags = [*tags, FAST_TAG]
    items: list[MemoryItem] = []
    for conversation in normalized.conversations:
        for turn in conversation:
            if not extractable(turn, extract_tools=extract_tools):
                continue
            items.append(
                MemoryItem(
                    text=turn.content,
                    memory_type=memory_type or MemoryType.EPISODE,
                    tags=base_tags,
                    entities=list(entities),
                    sources=[turn.source()],
                    scope=scope,
                    created_at=now,
                    valid_from=turn.timestamp,
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
