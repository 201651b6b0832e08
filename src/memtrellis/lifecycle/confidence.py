"""Confidence: where a memory came from, how often it was confirmed, how old it is.

``effective = min(1, base + support) * decay``, where ``base`` is the stored confidence
(the extractor's, else the source prior), ``support`` is ``support_bonus`` per
``supports`` edge or merged duplicate up to ``support_cap``, and ``decay`` halves every
``half_life_days`` since the latest evidence, never below ``decay_floor``. Recall ranks by
``relevance * effective * heat``; ``heat`` is ``1 + min(heat_cap, heat_per_recall *
log2(1 + recall_count))``.

Examples:
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
from memtrellis.store.storage import merged_count
from memtrellis.types import MemoryItem, SourceKind, voice_sources

__all__ = [
    "decay",
    "decay_factor",
    "effective_confidence",
    "evidence_time",
    "heat",
    "source_prior",
    "weight_basis",
]


def source_prior(item: MemoryItem, config: LifecycleConfig) -> float:
    """Base confidence by provenance: structured, the user's words, or the model's (the
    tools an answer rests on do not count; a tool's output alone is structured)."""
    said = voice_sources(item.sources)
    roles = {s.role for s in said if s.kind is SourceKind.CHAT}
    if not said or any(s.kind is not SourceKind.CHAT for s in said):
        kind = "structured"
    elif "user" in roles:
        kind = "user"
    elif roles & {"assistant", "ai", "model"}:
        kind = "model"
    else:
        kind = "user"
    return float(config.source_confidence[kind])


def evidence_time(item: MemoryItem) -> datetime:
    """When the latest evidence for a memory was given."""
    latest = item.valid_from or item.created_at
    for source in item.sources:
        if source.timestamp is not None and source.timestamp > latest:
            latest = source.timestamp
    return latest


def decay(item: MemoryItem, now: datetime, config: LifecycleConfig) -> float:
    """Time decay factor in ``[decay_floor, 1]`` (1 for evidence newer than ``now``)."""
    return effective_confidence(item, 0, now, config)[1]


def weight_basis(item: MemoryItem) -> tuple[float, int]:
    """What ranking needs of an item besides its edges: latest evidence (POSIX seconds)
    and merged duplicates. Derived from the item alone, so recall can cache it."""
    return evidence_time(item).timestamp(), merged_count(item)


def effective_confidence(
    item: MemoryItem,
    supports: int,
    now: datetime,
    config: LifecycleConfig,
    basis: tuple[float, int] | None = None,
) -> tuple[float, float]:
    """``(effective confidence, decay)`` of a memory with ``supports`` supporting edges.

    ``basis`` is `weight_basis` of the item when the caller has it cached.
    """
    latest, merged = basis if basis is not None else weight_basis(item)
    bonus = min(config.support_cap, config.support_bonus * (supports + merged))
    factor = decay_factor(latest, now.timestamp(), config)
    return min(1.0, item.confidence + bonus) * factor, factor


def decay_factor(latest: float, now: float, config: LifecycleConfig) -> float:
    """The decay of evidence last given at ``latest`` at ``now`` (both POSIX seconds)."""
    if config.half_life_days is None:
        return 1.0
    age_days = (now - latest) / 86400.0
    if age_days <= 0:
        return 1.0
    halved: float = 0.5 ** (age_days / config.half_life_days)
    return max(config.decay_floor, halved)


def heat(item: MemoryItem, config: LifecycleConfig) -> float:
    """Small, capped ranking prior for memories recalled before."""
    return 1.0 + min(config.heat_cap, config.heat_per_recall * math.log2(1 + item.recall_count))
