"""Confidence: where a memory came from, how often it was confirmed, how old it is.

``effective = min(1, base + support) * decay``, where ``base`` is the stored confidence
(the extractor's, else the source prior), ``support`` is ``support_bonus`` per
``supports`` edge or merged duplicate up to ``support_cap``, and ``decay`` halves every
``half_life_days`` since the latest evidence, never below ``decay_floor``. Recall ranks by
``relevance * effective * heat``; ``heat`` is ``1 + min(heat_cap, heat_per_recall *
log2(1 + recall_count))``.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> from memtrellis.types import MemoryItem, Scope
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> item = MemoryItem(text="x", scope=Scope(entity_id="u"), confidence=0.8,
    ...                   valid_from=now - timedelta(days=730))
    >>> round(decay(item, now, LifecycleConfig()), 3)  # one half-life
    0.5
    >>> round(decay(item, now, LifecycleConfig(decay_floor=0.8)), 3)
    0.8
"""

from __future__ import annotations

import math
from datetime import datetime

from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.types import MemoryItem, SourceKind

__all__ = ["decay", "effective_confidence", "evidence_time", "heat", "source_prior"]

_MERGED = "merged"


def source_prior(item: MemoryItem, config: LifecycleConfig) -> float:
    """Base confidence by provenance: structured, the user's words, or the model's."""
    roles = {s.role for s in item.sources if s.kind is SourceKind.CHAT}
    if not item.sources or any(s.kind is not SourceKind.CHAT for s in item.sources):
        kind = "structured"
    elif "user" in roles:
        kind = "user"
    elif roles & {"assistant", "ai", "model"}:
        kind = "model"
    else:
        kind = "user"
    return float(config.source_confidence[kind])


def merged_count(item: MemoryItem) -> int:
    """How many duplicates were merged into this memory."""
    lifecycle = item.metadata.get("lifecycle")
    count = lifecycle.get(_MERGED, 0) if isinstance(lifecycle, dict) else 0
    return count if isinstance(count, int) and count > 0 else 0


def evidence_time(item: MemoryItem) -> datetime:
    """When the latest evidence for a memory was given."""
    stamps = [s.timestamp for s in item.sources if s.timestamp is not None]
    return max([*stamps, item.valid_from or item.created_at])


def decay(item: MemoryItem, now: datetime, config: LifecycleConfig) -> float:
    """Time decay factor in ``[decay_floor, 1]`` (1 for evidence newer than ``now``)."""
    if config.half_life_days is None:
        return 1.0
    age_days = (now - evidence_time(item)).total_seconds() / 86400.0
    if age_days <= 0:
        return 1.0
    factor: float = 0.5 ** (age_days / config.half_life_days)
    return max(config.decay_floor, factor)


def effective_confidence(
    item: MemoryItem, supports: int, now: datetime, config: LifecycleConfig
) -> tuple[float, float]:
    """``(effective confidence, decay)`` of a memory with ``supports`` supporting edges."""
    bonus = min(config.support_cap, config.support_bonus * (supports + merged_count(item)))
    factor = decay(item, now, config)
    return min(1.0, item.confidence + bonus) * factor, factor


def heat(item: MemoryItem, config: LifecycleConfig) -> float:
    """Small, capped ranking prior for memories recalled before."""
    return 1.0 + min(config.heat_cap, config.heat_per_recall * math.log2(1 + item.recall_count))
