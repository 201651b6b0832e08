"""Recall's fast paths give what checking and weighing every candidate gives.

Recall weighs only the candidates whose bound can still reach the top k
(`memtrellis.recall.scoring.rank`) and checks visibility through the graph's own dicts
(`memtrellis.recall.visibility.Visibility`). Here both are replaced by plain references
(every candidate weighed; each memory checked through the item's own validity rule and
the graph's edge lists), and the two recalls must agree to the last digit: the same
memories, order, scores, explanations, tokens and hits left out. The stores are random:
several processes, sessions and entities, memories forgotten, superseded, expired, not
yet valid, conversation turns replaced by newer ones, supports and extends edges,
speakers, dates and subjects, queried with random options.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memtrellis import Memory
from memtrellis.lifecycle.confidence import effective_confidence, heat
from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.recall import hybrid
from memtrellis.recall.hybrid import RecallRequest, hybrid_recall
from memtrellis.recall.scoring import Score
from memtrellis.store import MemoryGraph
from memtrellis.testing import HashingEmbedder, store_of, temp_memory
from memtrellis.types import EdgeKind, MemoryItem, MemoryType, Scope, SourceRef

NOW = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)
WORDS = [
    "tea",
    "coffee",
    "porto",
    "lisbon",
    "hiking",
    "guitar",
    "jazz",
    "dog",
    "cat",
    "garden",
    "bread",
    "sister",
    "brother",
    "moved",
    "bought",
    "painted",
    "trip",
    "summer",
    "winter",
    "school",
    "job",
    "bike",
    "boat",
]
NAMES = ["Ana", "Bo", "Kenji", "Clara"]
SUBJECTS = ["Porto", "Rex", "Lisbon", "Kenji", "Garden Club"]
TYPES = [MemoryType.EPISODE, MemoryType.EPISODE, MemoryType.FACT, MemoryType.PREFERENCE]


# -- the references ------------------------------------------------------------------------
def reference_rank(
    graph: MemoryGraph,
    scores: dict[str, Score],
    k: int,
    now: datetime,
    config: LifecycleConfig,
    read: object = None,
) -> list[str]:
    """Every candidate weighed, then sorted: what `rank` must equal (reading each item
    from the graph itself, whatever recall looked up before)."""
    weighed: list[str] = []
    for memory_id, entry in scores.items():
        item = graph.item(memory_id)
        if item is None:
            continue
        entry.supports = graph.count_into(memory_id, EdgeKind.SUPPORTS)
        entry.confidence, entry.decay = effective_confidence(item, entry.supports, now, config)
        entry.heat = heat(item, config)
        weighed.append(memory_id)
    weighed.sort(key=lambda i: (-scores[i].final, -(scores[i].dense or 0.0), i))
    return weighed[:k]


class ReferenceVisibility:
    """Each memory checked through `MemoryItem.invalid_reason` and `edges_of`."""

    def __init__(self, graph: MemoryGraph, req: RecallRequest) -> None:
        self.graph, self.req = graph, req
        self.seen: dict[str, str | None] = {}
        self.turns: dict[str, str] = {}

    def __call__(self, memory_id: str) -> bool:
        if memory_id not in self.seen:
            self.seen[memory_id] = self._reason(memory_id)
        return self.seen[memory_id] is None

    def _reason(self, memory_id: str) -> str | None:
        req, item = self.req, self.graph.item(memory_id)
        if item is None or item.scope.entity_id != req.entity_id:
            return "scope"
        if req.process_id is not None and item.scope.process_id != req.process_id:
            return "scope"
        if req.session_id is not None and item.scope.session_id != req.session_id:
            return "scope"
        if not req.wanted(item):
            return "scope"
        reason = item.invalid_reason(
            req.now, include_expired=req.include_expired, include_superseded=req.include_superseded
        )
        if reason is not None or req.include_superseded:
            return reason
        if item.memory_type is MemoryType.EPISODE:
            for newer_id in self.graph.edges_of(memory_id, EdgeKind.SUPERSEDES)[1]:
                newer = self.graph.item(newer_id)
                if newer is not None and (newer.valid_from or newer.created_at) <= req.now:
                    self.turns[memory_id] = newer_id
                    return "superseded"
        return None


# -- random stores -------------------------------------------------------------------------
def _when(rng: random.Random, low: int, high: int) -> datetime:
    return NOW + timedelta(days=rng.randint(low, high), minutes=rng.randint(0, 1440))


def _line(rng: random.Random, n: int, entity: str, ids: list[str]) -> dict[str, Any]:
    memory_id = f"{entity[0]}{n:03d}"
    said = rng.choice(NAMES) if rng.random() < 0.7 else None
    valid_from = _when(rng, -900, 40) if rng.random() < 0.8 else None
    ends = rng.random()
    valid_until = (
        None
        if ends < 0.6
        else (valid_from or NOW) + timedelta(days=rng.randint(1, 400))
        if ends < 0.9
        else _when(rng, -300, 300)
    )
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        valid_until = None
    item = MemoryItem(
        id=memory_id,
        text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
        + (f" with {rng.choice(NAMES)}" if rng.random() < 0.3 else ""),
        memory_type=rng.choice(TYPES),
        tags=rng.sample(["chat", "home", "work"], rng.randint(0, 2)),
        entities=rng.sample(SUBJECTS, rng.randint(0, 2)),
        sources=[
            SourceRef(
                kind="chat",
                message_id=f"msg-{memory_id}",
                role="user" if said else rng.choice(["assistant", "user"]),
                speaker=said,
                content="",
                timestamp=valid_from,
            )
        ],
        scope=Scope(
            entity_id=entity,
            process_id=rng.choice([None, "app", "other"]),
            session_id=rng.choice([None, "s1", "s2"]),
        ),
        confidence=round(rng.uniform(0.2, 1.0), 3),
        created_at=_when(rng, -1000, -1),
        valid_from=valid_from,
        valid_until=valid_until,
        superseded_by=rng.choice(ids) if ids and rng.random() < 0.1 else None,
        recall_count=rng.choice([0, 0, 1, 5, 40]),
        metadata={"lifecycle": {"merged": rng.choice([0, 0, 1, 3])}},
    )
    edges: list[dict[str, str]] = []
    if ids and rng.random() < 0.7:
        edges.append({"kind": "follows", "to": ids[-1]})
    for kind, share in (("supersedes", 0.12), ("supports", 0.12), ("extends", 0.08)):
        if ids and rng.random() < share:
            edges.append({"kind": kind, "to": rng.choice(ids)})
    return {"memory": item.model_dump(mode="json"), "edges": edges}


def _fill(memory: Memory, rng: random.Random) -> list[str]:
    lines: list[str] = []
    ids: dict[str, list[str]] = {"ana": [], "bo": []}
    for n in range(rng.randint(40, 90)):
        entity = "ana" if rng.random() < 0.85 else "bo"
        record = _line(rng, n, entity, ids[entity])
        ids[entity].append(record["memory"]["id"])
        lines.append(json.dumps(record))
    report = memory.import_(io.StringIO("\n".join(lines)))
    assert report.complete, report.skipped
    forgotten = rng.sample(ids["ana"], min(len(ids["ana"]), rng.randint(0, 6)))
    for memory_id in forgotten:
        memory.forget(memory_id, entity_id="ana")
    return [i for i in ids["ana"] if i not in forgotten]


def _requests(rng: random.Random, embedder: HashingEmbedder) -> Iterator[RecallRequest]:
    for _ in range(12):
        query = " ".join(rng.choice(WORDS + NAMES + SUBJECTS) for _ in range(rng.randint(1, 5)))
        if rng.random() < 0.3:
            query = f"What did {rng.choice(NAMES)} say about {query} last summer?"
        yield RecallRequest(
            query=query,
            embedding=embedder.embed_query(query),
            entity_id="ana",
            process_id=rng.choice([None, None, "app"]),
            session_id=rng.choice([None, None, "s1"]),
            k=rng.choice([1, 3, 5, 10, 30]),
            token_budget=rng.choice([None, None, 15, 60]),
            include_superseded=rng.random() < 0.2,
            include_expired=rng.random() < 0.2,
            now=NOW - timedelta(days=rng.choice([0, 0, 100, 400])),
            graph_context=rng.random() < 0.8,
            fetch=rng.choice([None, 5, 20]),
            memory_types=rng.choice([None, None, frozenset({MemoryType.EPISODE})]),
            tags=rng.choice([None, None, frozenset({"home"})]),
        )


def _outcome(store: Any, req: RecallRequest) -> Any:
    items, tokens, truncated, skipped = hybrid_recall(store, req)
    return (
        [(r.memory.id, r.score, r.explanation.model_dump()) for r in items],
        tokens,
        truncated,
        [s.model_dump() for s in skipped],
    )


@pytest.mark.parametrize("seed", range(8))
def test_fast_recall_equals_the_exhaustive_reference(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    embedder = HashingEmbedder()
    with temp_memory(embedder=embedder) as memory:
        kept = _fill(memory, rng)
        store = store_of(memory)
        compared = nonempty = 0
        for req in _requests(rng, embedder):
            fast = _outcome(store, req)
            with monkeypatch.context() as patch:
                patch.setattr(hybrid, "rank", reference_rank)
                patch.setattr(hybrid, "Visibility", ReferenceVisibility)
                slow = _outcome(store, req)
            assert fast == slow, req.query
            compared += 1
            nonempty += bool(fast[0])
            # A forgotten memory never comes back, whatever the path.
            assert {m for m, _, _ in fast[0]} <= set(kept)
        assert compared == 12 and nonempty >= 4


def test_a_replaced_turn_is_left_out_from_its_replacement_s_time_on() -> None:
    said = {"kind": "chat", "role": "user", "speaker": "Ana", "content": ""}
    old = MemoryItem(
        id="old",
        text="I live in Porto",
        memory_type=MemoryType.EPISODE,
        sources=[SourceRef(**said, message_id="m1")],
        scope=Scope(entity_id="ana"),
        valid_from=NOW - timedelta(days=30),
    )
    new = old.model_copy(
        update={"id": "new", "text": "I live in Lisbon now", "valid_from": NOW - timedelta(days=5)}
    )
    lines = [
        json.dumps({"memory": old.model_dump(mode="json"), "edges": []}),
        json.dumps(
            {"memory": new.model_dump(mode="json"), "edges": [{"kind": "supersedes", "to": "old"}]}
        ),
    ]
    embedder = HashingEmbedder()
    with temp_memory(embedder=embedder) as memory:
        assert memory.import_(io.StringIO("\n".join(lines))).edges == 1
        store = store_of(memory)
        req = RecallRequest(
            query="where do I live",
            embedding=embedder.embed_query("where do I live"),
            entity_id="ana",
            process_id=None,
            session_id=None,
            k=5,
            token_budget=None,
            include_superseded=False,
            include_expired=False,
            now=NOW,
        )
        items, _, _, skipped = hybrid_recall(store, req)
        assert [r.memory.id for r in items] == ["new"]
        assert [(s.id, s.reason, s.superseded_by) for s in skipped] == [
            ("old", "superseded", "new")
        ]
        assert items[0].explanation.replaces == ["old"]
        # Before the newer turn was said, the old one stands.
        before = hybrid_recall(store, replace(req, now=NOW - timedelta(days=10)))[0]
        assert [r.memory.id for r in before] == ["old"]
        # Asked for, the replaced turn is shown beside its replacement.
        both = hybrid_recall(store, replace(req, include_superseded=True))[0]
        assert sorted(r.memory.id for r in both) == ["new", "old"]


def test_times_read_from_a_store_compare_in_python_s_utc(tmp_path: Path) -> None:
    item = MemoryItem(
        id="porto",
        text="Ana moved to Porto",
        scope=Scope(entity_id="ana"),
        sources=[SourceRef(kind="chat", role="user", content="", timestamp=NOW)],
        valid_from=NOW,
        valid_until=NOW + timedelta(days=3),
    )
    embedder = HashingEmbedder()
    with Memory(tmp_path / "store", embedder=embedder) as memory:
        line = json.dumps({"memory": item.model_dump(mode="json")})
        assert memory.import_(io.StringIO(line)).imported == 1
        written = store_of(memory).graph_of("ana").item("porto")
        assert written is not None
        dumped = written.model_dump_json()
    with Memory(tmp_path / "store", embedder=embedder) as reopened:
        stored = store_of(reopened).graph_of("ana").item("porto")
        assert stored is not None
        times = [stored.created_at, stored.valid_from, stored.valid_until]
        times.append(stored.sources[0].timestamp)
        assert all(t is not None and t.tzinfo is timezone.utc for t in times)
        assert stored.valid_from == NOW
        assert stored.model_dump_json() == dumped


def _reference_reason(
    item: MemoryItem, when: datetime, include_expired: bool, include_superseded: bool
) -> str | None:
    """`MemoryItem.invalid_reason` as its rule reads, without the fast path."""
    ended = item.valid_until is not None and item.valid_until <= when
    replaced = item.superseded_by is not None and (item.valid_until is None or ended)
    if include_expired:
        return "superseded" if replaced and not include_superseded else None
    if (item.valid_from or item.created_at) > when:
        return "not yet valid"
    if replaced and not include_superseded:
        return "superseded"
    if ended and item.superseded_by is None:
        return "expired"
    return None


days = st.integers(min_value=-5, max_value=5)


@settings(max_examples=300, deadline=None)
@given(
    created=days,
    start=st.none() | days,
    end=st.none() | days,
    superseded=st.booleans(),
    when=days,
    naive=st.booleans(),
    include_expired=st.booleans(),
    include_superseded=st.booleans(),
)
def test_invalid_reason_s_shortcut_keeps_its_rule(
    created: int,
    start: int | None,
    end: int | None,
    superseded: bool,
    when: int,
    naive: bool,
    include_expired: bool,
    include_superseded: bool,
) -> None:
    def at(day: int) -> datetime:
        return NOW + timedelta(days=day)

    if start is not None and end is not None:
        assume(end > start)  # a window that ends before it starts is refused
    item = MemoryItem(
        text="x",
        scope=Scope(entity_id="u"),
        created_at=at(created),
        valid_from=None if start is None else at(start),
        valid_until=None if end is None else at(end),
        superseded_by="newer" if superseded else None,
    )
    moment = at(when).replace(tzinfo=None) if naive else at(when)
    got = item.invalid_reason(
        moment, include_expired=include_expired, include_superseded=include_superseded
    )
    assert got == _reference_reason(item, at(when), include_expired, include_superseded)
