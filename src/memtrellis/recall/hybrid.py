"""Hybrid recall: dense and keyword search fused by reciprocal rank, then one graph hop.

1. Dense candidates from the entity's Chroma collection (process/session as filters).
2. Keyword candidates from the entity's BM25 shard.
3. Reciprocal-rank fusion (k = 60): a memory both searches rank well beats one that only
   one of them likes, and neither score scale needs calibrating against the other.
4. One hop over shared entities: each of the top seeds lends half its score to the
   memories that share an entity with it, which brings in memories neither search found
   and lifts related ones that a search ranked low.
5. Expired and superseded memories are left out unless asked for; a token budget cuts
   the list before it is exceeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memtrellis.store import Store
from memtrellis.tokens import count_tokens
from memtrellis.types import MemoryItem, RecalledMemory, RecallExplanation

__all__ = ["RRF_K", "RecallRequest", "hybrid_recall", "memory_line"]

RRF_K = 60
#: A memory reached through a shared entity scores this share of its seed's score.
GRAPH_HOP_DISCOUNT = 0.5
_FETCH_FACTOR = 4


def memory_line(item: MemoryItem) -> str:
    """The one-line form a memory takes in a budgeted list (and is counted in)."""
    when = item.valid_from or item.created_at
    return f"- {item.text.strip()} ({item.memory_type.value}, {when.date().isoformat()})"


@dataclass(slots=True)
class _Score:
    # Plain accumulator while ranking; a validated RecallExplanation is built per result.
    dense: float | None = None
    dense_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    fused: float = 0.0
    path: list[str] = field(default_factory=list)

    def explain(self) -> RecallExplanation:
        fused = round(self.fused, 8)
        return RecallExplanation(
            dense_score=None if self.dense is None else round(self.dense, 6),
            dense_rank=self.dense_rank,
            keyword_score=None if self.keyword is None else round(self.keyword, 6),
            keyword_rank=self.keyword_rank,
            graph_path=self.path,
            fused_score=fused,
            final_score=fused,
        )


@dataclass(frozen=True)
class RecallRequest:
    """One recall, with its scope already resolved."""

    query: str
    embedding: Sequence[float]
    entity_id: str
    process_id: str | None
    session_id: str | None
    k: int
    token_budget: int | None
    include_superseded: bool
    include_expired: bool
    now: datetime


def _visible(item: MemoryItem | None, req: RecallRequest) -> bool:
    if item is None or item.scope.entity_id != req.entity_id:
        return False
    if req.process_id is not None and item.scope.process_id != req.process_id:
        return False
    if req.session_id is not None and item.scope.session_id != req.session_id:
        return False
    if not req.include_superseded and item.superseded_by is not None:
        return False
    if req.include_expired:
        return True
    # Valid from its stated start (or, lacking one, from when it was stored) until its end:
    # with ``as_of`` in the past this is what was known and true then.
    if (item.valid_from or item.created_at) > req.now:
        return False
    return item.valid_until is None or item.valid_until > req.now


def hybrid_recall(store: Store, req: RecallRequest) -> tuple[list[RecalledMemory], int, bool]:
    """Rank memories for ``req``; returns ``(items, tokens used, cut by the budget)``."""
    fetch = max(req.k * _FETCH_FACTOR, 20)
    dense = store.vectors.query(
        req.entity_id,
        req.embedding,
        fetch,
        process_id=req.process_id,
        session_id=req.session_id,
    )
    with store.reading():
        keyword = store.keywords.search(req.entity_id, req.query, fetch * 2)
        graph = store.graph
        scores: dict[str, _Score] = {}
        for rank, (memory_id, similarity) in enumerate(
            (d for d in dense if _visible(graph.item(d[0]), req)), start=1
        ):
            scores[memory_id] = _Score(dense=similarity, dense_rank=rank, fused=1 / (RRF_K + rank))
        for rank, (memory_id, score) in enumerate(
            (kw for kw in keyword if _visible(graph.item(kw[0]), req)), start=1
        ):
            entry = scores.setdefault(memory_id, _Score())
            entry.keyword, entry.keyword_rank = score, rank
            entry.fused += 1.0 / (RRF_K + rank)

        # One hop: each top seed lends a share of its score to the memories that share
        # an entity with it, whether or not a search found them (the best lender wins).
        seeds = sorted(scores, key=lambda i: (-scores[i].fused, i))[: req.k]
        lent: dict[str, tuple[float, list[str]]] = {}
        for seed in seeds:
            bonus = scores[seed].fused * GRAPH_HOP_DISCOUNT
            for entity, other in graph.neighbours_by_entity(seed):
                if bonus > lent.get(other, (0.0, []))[0] and _visible(graph.item(other), req):
                    lent[other] = (bonus, [seed, entity, other])
        for other, (bonus, path) in lent.items():
            entry = scores.setdefault(other, _Score())
            entry.fused += bonus
            entry.path = path

        ranked = sorted(scores, key=lambda i: (-scores[i].fused, -(scores[i].dense or 0.0), i))
        ranked = ranked[: req.k]
        results: list[RecalledMemory] = []
        used = 0
        truncated = False
        for memory_id in ranked:
            item = graph.item(memory_id)
            assert item is not None
            explanation = scores[memory_id].explain()
            if req.token_budget is not None:
                cost = count_tokens(memory_line(item)) + 1
                if used + cost > req.token_budget:
                    truncated = True
                    break
                used += cost
            results.append(
                RecalledMemory(
                    memory=item.detached(),
                    score=explanation.final_score,
                    explanation=explanation,
                )
            )
        if req.token_budget is None:
            used = sum(count_tokens(memory_line(r.memory)) + 1 for r in results)
    return results, used, truncated
