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
from dataclasses import dataclass
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
        explanations: dict[str, RecallExplanation] = {}
        for rank, (memory_id, similarity) in enumerate(
            (d for d in dense if _visible(graph.item(d[0]), req)), start=1
        ):
            explanations[memory_id] = RecallExplanation(
                dense_score=round(similarity, 6),
                dense_rank=rank,
                fused_score=1.0 / (RRF_K + rank),
            )
        for rank, (memory_id, score) in enumerate(
            (kw for kw in keyword if _visible(graph.item(kw[0]), req)), start=1
        ):
            entry = explanations.setdefault(memory_id, RecallExplanation())
            entry.keyword_score = round(score, 6)
            entry.keyword_rank = rank
            entry.fused_score += 1.0 / (RRF_K + rank)

        # One hop: each top seed lends a share of its score to the memories that share
        # an entity with it, whether or not a search found them (the best lender wins).
        base_scores = {i: e.fused_score for i, e in explanations.items()}
        seeds = sorted(base_scores, key=lambda i: (-base_scores[i], i))[: req.k]
        lent: dict[str, tuple[float, list[str]]] = {}
        for seed in seeds:
            bonus = base_scores[seed] * GRAPH_HOP_DISCOUNT
            for entity, other in graph.neighbours_by_entity(seed):
                if bonus > lent.get(other, (0.0, []))[0] and _visible(graph.item(other), req):
                    lent[other] = (bonus, [seed, entity, other])
        for other, (bonus, path) in lent.items():
            entry = explanations.setdefault(other, RecallExplanation())
            entry.fused_score += bonus
            entry.graph_path = path

        ranked = sorted(
            explanations,
            key=lambda i: (-explanations[i].fused_score, -(explanations[i].dense_score or 0.0)),
        )[: req.k]
        results: list[RecalledMemory] = []
        used = 0
        truncated = False
        for memory_id in ranked:
            item = graph.item(memory_id)
            assert item is not None
            explanation = explanations[memory_id]
            explanation.final_score = round(explanation.fused_score, 8)
            explanation.fused_score = round(explanation.fused_score, 8)
            if req.token_budget is not None:
                cost = count_tokens(memory_line(item)) + 1
                if used + cost > req.token_budget:
                    truncated = True
                    break
                used += cost
            results.append(
                RecalledMemory(
                    memory=item.model_copy(deep=True),
                    score=explanation.final_score,
                    explanation=explanation,
                )
            )
        if req.token_budget is None:
            used = sum(count_tokens(memory_line(r.memory)) + 1 for r in results)
    return results, used, truncated
