"""A recall candidate's score as it is built, and the final weighing of the candidates.

`Score` accumulates what each step of hybrid recall (`memtrellis.recall.hybrid`) gives a
candidate: its fused dense and keyword score, what its neighbours and graph hops lend
it, the cues' boost. Its *relevance* is the sum times the boost; its *final* score is the
relevance weighed by effective confidence and heat (`memtrellis.lifecycle.confidence`).

`rank` weighs only the candidates that can still reach the top k. A candidate's weight is
at most ``min(1, confidence + support_cap) * decay * (1 + heat_cap)``: its supports
bonus never exceeds ``support_cap`` and its heat never exceeds ``1 + heat_cap``; its own
stored confidence and decay (both read from the item alone, the decay's evidence time
memoised on its node) bound it. (Bounding every weight by ``1 + heat_cap`` left nearly
every candidate to be weighed: a fast-mode turn carries 0.7, and decay halves a memory
every two years down to 0.5.) The candidates are weighed in the order of that bound, and
once the next bound is below the k-th final score found, no candidate left can enter the
top k: the top k are those of weighing every candidate. Only the edge count
(``supports``) and the heat are left to the weighing.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from memtrellis.lifecycle.confidence import (
    decay_factor,
    effective_confidence,
    heat,
    weight_basis,
)
from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.recall.cues import Voice, voice_of
from memtrellis.store import MemoryGraph
from memtrellis.types import EdgeKind, MemoryItem, RecallExplanation

__all__ = ["Score", "Step", "Traits", "rank", "traits"]

#: One step of a hop's route: (node, kind of the edge to the next step, its direction).
Step = tuple[str, str | None, bool | None]
#: Room for rounding: a bound computed in another order than the final score must not
#: fall below it when the two are equal.
_ROUNDING = 1.0 + 1e-9


@dataclass(frozen=True, slots=True)
class Traits:
    """What recall reads of a stored item alone, kept on its node until the item changes
    (`MemoryGraph.memo`): what weighing needs besides the edges (`weight_basis`: latest
    evidence, merged duplicates) and who said it when (the cues' `Voice`)."""

    basis: tuple[float, int]
    voice: Voice


def _traits_of(item: MemoryItem) -> Traits:
    return Traits(weight_basis(item), voice_of(item))


def traits(graph: MemoryGraph, memory_id: str) -> tuple[MemoryItem, Traits] | None:
    """The stored item and its `Traits`, or ``None`` when the memory is not stored."""
    return graph.memo(memory_id, "recall", _traits_of)


@dataclass(slots=True)
class Score:
    """One candidate's score while ranking; a validated `RecallExplanation` is built per
    result (`explain`)."""

    dense: float | None = None
    dense_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    fused: float = 0.0
    context: float = 0.0
    best_lend: float = 0.0
    path: list[str] = field(default_factory=list)
    route: list[Step] = field(default_factory=list)
    confidence: float = 1.0
    decay: float = 1.0
    supports: int = 0
    heat: float = 1.0
    boost: float = 0.0  # share of relevance lent by speaker and time cues (recall.cues)
    boosts: list[str] = field(default_factory=list)
    rerank: float | None = None

    @property
    def relevance(self) -> float:
        return (self.fused + self.context) * (1.0 + self.boost)

    @property
    def final(self) -> float:
        return self.relevance * self.confidence * self.heat

    def lend(self, amount: float, path: list[str], route: list[Step] | None = None) -> None:
        self.context += amount
        if amount > self.best_lend:
            self.best_lend, self.path = amount, path
            self.route = route or []

    def explain(self) -> RecallExplanation:
        return RecallExplanation(
            dense_score=None if self.dense is None else round(self.dense, 6),
            dense_rank=self.dense_rank,
            keyword_score=None if self.keyword is None else round(self.keyword, 6),
            keyword_rank=self.keyword_rank,
            graph_path=self.path,
            fused_score=round(self.fused, 8),
            relevance=round(self.relevance, 8),
            confidence=round(self.confidence, 6),
            decay=round(self.decay, 6),
            supports=self.supports,
            heat=round(self.heat, 6),
            final_score=round(self.final, 8),
            boosts=list(self.boosts),
            rerank_score=None if self.rerank is None else round(self.rerank, 6),
        )


def rank(
    graph: MemoryGraph,
    scores: dict[str, Score],
    k: int,
    now: datetime,
    config: LifecycleConfig,
    read: Mapping[str, tuple[MemoryItem, Traits] | None] | None = None,
) -> list[str]:
    """Weigh the candidates by effective confidence and heat at ``now``; the top k ids,
    best first (ties: the higher cosine, then the id). Only those that can reach the top
    k are weighed (see the module notes). ``read`` holds what `traits` gave for the
    candidates when the caller looked them up already.
    """
    at = now.timestamp()
    cap = config.support_cap
    hottest = 1.0 + config.heat_cap
    bounds: list[tuple[float, str, MemoryItem, tuple[float, int]]] = []
    for memory_id, entry in scores.items():
        found = read[memory_id] if read is not None and memory_id in read else None
        if found is None:
            found = traits(graph, memory_id)
        if found is None:
            continue  # forgotten: never weighed, never ranked
        item, basis = found[0], found[1].basis
        relevance = entry.relevance
        most = 0.0
        if relevance > 0:
            most = relevance * min(1.0, item.confidence + cap) * hottest
            most *= decay_factor(basis[0], at, config) * _ROUNDING
        bounds.append((most, memory_id, item, basis))
    bounds.sort(key=_bound, reverse=True)
    weighed: list[str] = []
    finals: list[float] = []  # min-heap of the best k final scores so far
    for most, memory_id, item, basis in bounds:
        if len(finals) >= k and most < finals[0]:
            break
        entry = scores[memory_id]
        entry.supports = graph.count_into(memory_id, EdgeKind.SUPPORTS)
        entry.confidence, entry.decay = effective_confidence(
            item, entry.supports, now, config, basis
        )
        entry.heat = heat(item, config)
        weighed.append(memory_id)
        final = entry.final
        if len(finals) < k:
            heapq.heappush(finals, final)
        elif final > finals[0]:
            heapq.heapreplace(finals, final)
    weighed.sort(key=lambda i: (-scores[i].final, -(scores[i].dense or 0.0), i))
    return weighed[:k]


def _bound(row: tuple[float, str, MemoryItem, tuple[float, int]]) -> float:
    return row[0]
