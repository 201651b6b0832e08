"""Recall's final ranking: weighing only the candidates that can reach the top k is exact."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from memtrellis.lifecycle import LifecycleConfig
from memtrellis.lifecycle.confidence import effective_confidence, heat
from memtrellis.recall.scoring import Score, rank
from memtrellis.store import MemoryGraph
from memtrellis.types import EdgeKind, MemoryItem, Scope

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
candidate = st.tuples(
    st.floats(min_value=-0.3, max_value=2.0),  # relevance
    st.floats(min_value=0.0, max_value=1.0),  # confidence
    st.integers(min_value=0, max_value=3000),  # age in days
    st.integers(min_value=0, max_value=500),  # recall count
    st.booleans(),  # supported by the previous memory
)


@settings(max_examples=150, deadline=None)
@given(st.lists(candidate, min_size=1, max_size=40), st.integers(min_value=1, max_value=12))
def test_rank_equals_weighing_everything(rows: list[tuple], k: int) -> None:
    graph = MemoryGraph()
    scores: dict[str, Score] = {}
    scope = Scope(entity_id="u")
    for n, (relevance, confidence, age, recalls, supported) in enumerate(rows):
        item = MemoryItem(
            id=f"m{n:02d}",
            text=f"memory {n}",
            scope=scope,
            confidence=confidence,
            valid_from=NOW - timedelta(days=age),
            recall_count=recalls,
        )
        graph.put(item)
        if supported and n:
            graph.add_edge(f"m{n - 1:02d}", item.id, EdgeKind.SUPPORTS)
        scores[item.id] = Score(fused=relevance)
    config = LifecycleConfig()

    def final(memory_id: str) -> float:
        item = graph.item(memory_id)
        assert item is not None
        supports = graph.count_into(memory_id, EdgeKind.SUPPORTS)
        weight, _ = effective_confidence(item, supports, NOW, config)
        return scores[memory_id].relevance * weight * heat(item, config)

    expected = sorted(scores, key=lambda i: -final(i))[:k]
    got = rank(graph, scores, k, NOW, config)
    assert [round(final(i), 9) for i in got] == [round(final(i), 9) for i in expected]
