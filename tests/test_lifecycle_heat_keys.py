"""Issue 22 item 5: heat renews validity (bounded, logged, never resurrecting), a derived
key when the model gives none, and the health figures with their warnings."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memtrellis import EdgeKind, Memory, MemoryItem, MemoryType, Scope
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.lifecycle.heat import renewed_until
from memtrellis.lifecycle.keys import derive_key, fill_key, is_derived
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.wal import replay_record
from memtrellis.testing import HashingEmbedder, ScriptedLLM
from memtrellis.types import utcnow

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
HOURS = timedelta(hours=1)


def _state(**fields: Any) -> MemoryItem:
    values: dict[str, Any] = {
        "text": "Ana is at the airport",
        "memory_type": MemoryType.STATE,
        "scope": Scope(entity_id="ana"),
        "created_at": T0,
        "valid_until": T0 + 2 * HOURS,  # the default validity of a state
    }
    values.update(fields)
    return MemoryItem(**values)


# -- the rule -----------------------------------------------------------------------------
def test_only_a_memory_recalled_often_is_renewed_and_from_the_recall_on() -> None:
    config = LifecycleConfig()
    at = T0 + 90 * timedelta(minutes=1)
    assert renewed_until(_state(recall_count=0), at, config) is None  # first recall
    assert renewed_until(_state(recall_count=1), at, config) is None  # second
    assert renewed_until(_state(recall_count=2), at, config) == at + HOURS  # third: half a span


def test_renewal_is_bounded_and_never_shortens() -> None:
    config = LifecycleConfig()
    item = _state(recall_count=50)
    ends = []
    at = T0
    for _ in range(40):  # recalled every half hour for 20 hours
        at += timedelta(minutes=30)
        end = renewed_until(item, at, config)
        if item.invalid_reason(at) is not None:
            assert end is None
            break
        if end is not None:
            assert end > item.valid_until
            item.valid_until = end
        ends.append(item.valid_until)
    # At most one more span past its default end (T0 + 2h): ends at T0 + 4h, then expires.
    assert max(ends) == T0 + 4 * HOURS
    assert item.invalid_reason(T0 + 5 * HOURS) == "expired"


@pytest.mark.parametrize(
    "fields",
    [
        {"superseded_by": "newer"},  # superseded: history stays history
        {"valid_until": T0 + HOURS},  # an end of its own (earlier than the default)
        {"memory_type": MemoryType.ACTION_ITEM, "valid_until": T0 + 2 * HOURS},  # a deadline
        {"memory_type": MemoryType.FACT, "valid_until": None},  # open-ended
    ],
)
def test_what_heat_never_touches(fields: dict[str, Any]) -> None:
    item = _state(recall_count=10, **fields)
    assert renewed_until(item, T0 + 30 * timedelta(minutes=1), LifecycleConfig()) is None


def test_an_expired_memory_is_not_renewed_and_renewal_can_be_turned_off() -> None:
    item = _state(recall_count=10)
    assert renewed_until(item, T0 + 3 * HOURS, LifecycleConfig()) is None  # expired at 2h
    off = LifecycleConfig(heat_renewal=0)
    assert renewed_until(item, T0 + HOURS, off) is None


# -- through Memory: logged, replayed, never resurrecting ------------------------------------
def _live_state(memory: Memory, text: str = "Ana is at the airport") -> MemoryItem:
    # Stored 100 minutes ago: its default 2 hours end in 20 minutes.
    start = utcnow() - timedelta(minutes=100)
    item = MemoryItem(
        text=text, memory_type=MemoryType.STATE, scope=Scope(entity_id="ana"), valid_from=start
    )
    return memory.store(item)


def test_recalls_renew_a_state_and_the_renewal_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        item = _live_state(memory)
        default_end = memory.get(item.id).valid_until
        assert default_end is not None
        for _ in range(2):
            memory.recall("Where is Ana? airport")
        assert memory.get(item.id).valid_until == default_end  # twice is not often
        before = utcnow()
        memory.recall("Where is Ana? airport")
        renewed = memory.get(item.id).valid_until
        assert renewed is not None and renewed >= before + HOURS > default_end
    with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        again = memory.get(item.id)
        assert again.valid_until == renewed and again.recall_count == 3


def test_heat_never_resurrects_superseded_or_forgotten_memories(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        [lyon] = memory.add("Ana lives in Lyon", memory_type="state")
        [porto] = memory.add("Ana moved to Porto", memory_type="state")
        assert memory.get(lyon.id).superseded_by == porto.id
        old_end = memory.get(lyon.id).valid_until
        for _ in range(5):
            memory.recall("Where does Ana live? Lyon", include_superseded=True)
        assert memory.get(lyon.id).valid_until == old_end
        gone = _live_state(memory, "Ana waits at gate 12")
        for _ in range(3):
            memory.recall("gate 12")
        memory.forget(gone.id)
    with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        assert memory.get(lyon.id).valid_until == old_end
        assert memory.get(lyon.id).superseded_by == porto.id
        assert [i.id for i in memory.list() if i.id == gone.id] == []


def test_a_logged_renewal_is_not_applied_to_a_memory_superseded_meanwhile() -> None:
    # Another process logged the renewal after this memory was superseded: replay skips it.
    graph = MemoryGraph()
    item = _state(superseded_by="newer", valid_until=T0 + HOURS)
    graph.put(item)
    later = (T0 + 3 * HOURS).isoformat()
    replay_record(
        graph,
        {
            "op": "touch",
            "ids": [item.id],
            "at": (T0 + 30 * timedelta(minutes=1)).isoformat(),
            "until": {item.id: later},
        },
    )
    replayed = graph.item(item.id)
    assert replayed is not None
    assert replayed.valid_until == T0 + HOURS and replayed.recall_count == 1


# -- derived keys -----------------------------------------------------------------------------
def test_derived_keys_name_the_slot_and_stay_apart_for_other_subjects() -> None:
    scope = Scope(entity_id="u")

    def key(text: str, *names: str) -> str | None:
        return derive_key(MemoryItem(text=text, entities=list(names), scope=scope))

    assert key("Alice lives in Lyon", "Alice", "Lyon") == key("Alice moved to Porto", "Alice")
    assert key("Alice works at Google", "Alice", "Google") == "alice.work"
    assert key("My daughter is 7 years old.") != key("My son is 4 years old.")
    assert key("我女儿七岁。") != key("我儿子四岁。")
    assert key("She likes jazz") is None  # no subject, no single-valued attribute
    given = MemoryItem(text="Alice lives in Lyon", key="alice.city", scope=scope)
    assert not fill_key(given) and given.key == "alice.city" and not is_derived(given)


def _extraction(memories: list[dict[str, Any]]) -> str:
    return json.dumps({"memories": memories, "summary": ""})


def _fine_llm(*values: str) -> ScriptedLLM:
    """A model that extracts each value in turn as a fact, with no key."""
    replies = iter(values)

    def answer(messages: list[dict[str, Any]]) -> str:
        if "EXISTING memories" in str(messages[-1].get("content", "")):
            return json.dumps({"relations": []})  # a relation judge asked: no opinion
        value = next(replies)
        return _extraction(
            [{"memory_type": "fact", "value": value, "entities": ["Alice"], "confidence": 0.9}]
        )

    return ScriptedLLM(answer)


def test_fine_mode_without_model_keys_supersedes_through_the_derived_key(tmp_path: Path) -> None:
    llm = _fine_llm("Alice lives in Lyon.", "Alice's home is now in Porto.")
    with Memory(tmp_path / "s", entity_id="alice", embedder=HashingEmbedder(), llm=llm) as m:
        [lyon] = m.add([{"role": "user", "content": "I live in Lyon."}], mode="fine")
        [porto] = m.add([{"role": "user", "content": "Home is Porto now."}], mode="fine")
        assert lyon.key == porto.key == "alice.residence"
        assert lyon.metadata["key_source"] == "derived"
        assert m.get(lyon.id).superseded_by == porto.id
        assert [h.memory.text for h in m.recall("Where does Alice live?").items] == [porto.text]


def test_a_derived_key_does_not_supersede_a_compatible_detail(tmp_path: Path) -> None:
    llm = _fine_llm("Alice lives in Lyon.", "Alice lives in Lyon, France.")
    with Memory(tmp_path / "s", entity_id="alice", embedder=HashingEmbedder(), llm=llm) as m:
        [lyon] = m.add([{"role": "user", "content": "I live in Lyon."}], mode="fine")
        [more] = m.add([{"role": "user", "content": "Lyon is in France."}], mode="fine")
        assert lyon.key == more.key == "alice.residence"
        assert m.get(lyon.id).superseded_by is None


def test_derived_keys_add_no_wrong_supersession_on_the_labelled_pairs() -> None:
    from tests.test_relation_pairs import PARTS, bench

    module = bench()
    pairs = [p for part in PARTS for p in module.load_pairs(part)]
    sims = module.similarities(pairs, HashingEmbedder().embed_documents)
    wrong = {"plain": 0, "derived": 0}
    caught = {"plain": 0, "derived": 0}
    for pair, similarity in zip(pairs, sims, strict=True):
        for mode in wrong:
            old, new = module.items_of(pair)
            if mode == "derived":
                fill_key(old), fill_key(new)
            got = module.label_of(module.relate(new, old, similarity))
            if got == "supersedes":
                caught[mode] += pair["label"] == "supersedes"
                wrong[mode] += pair["label"] in ("duplicate", "extends", "unrelated")
    assert wrong["derived"] <= wrong["plain"]
    assert caught["derived"] >= caught["plain"]


# -- health -----------------------------------------------------------------------------------
def test_health_reports_utilisation_and_conflict_resolution(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder()) as memory:
        assert memory.health().utilisation is None  # nothing to measure yet
        for n in range(4):
            memory.add(f"Ana's note number {n} is about topic{n}", memory_type="fact")
        memory.recall("topic1", k=1)
        health = memory.health()
        assert health.utilisation == 0.25
        assert health.conflict_resolution_rate is None
        memory.add("Ana lives in Lyon", memory_type="fact")
        memory.add("Ana moved to Porto", memory_type="fact")  # supersedes: resolved
        memory.add("The shop accepts cash", memory_type="fact")
        memory.add("The shop doesn't accept cash", memory_type="fact")
        edges = memory.health().edges_by_kind
        resolved = edges[EdgeKind.SUPERSEDES.value] / edges[EdgeKind.CONTRADICTS.value]
        assert memory.health().conflict_resolution_rate == round(min(1.0, resolved), 4)
        assert edges[EdgeKind.CONTRADICTS.value] >= 1


def test_low_figures_warn_once_until_they_recover(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = LifecycleConfig(warn_utilisation_below=0.5, health_min_count=3)
    with Memory(
        tmp_path / "s", entity_id="ana", embedder=HashingEmbedder(), lifecycle=config
    ) as memory:
        for n in range(4):
            memory.add(f"Ana's note number {n} is about topic{n}", memory_type="fact")
        memory.recall("topic1", k=1)
        with caplog.at_level(logging.WARNING, logger="memtrellis"):
            assert memory.health().warnings == ["utilisation"]
            assert memory.health().warnings == ["utilisation"]
        logged = [r for r in caplog.records if "utilisation is 0.250" in r.getMessage()]
        assert len(logged) == 1  # once, not on every health() call
        for n in range(4):
            memory.recall(f"topic{n}", k=1)
        assert memory.health().warnings == []
    quiet = LifecycleConfig(warn_utilisation_below=None)
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder(), lifecycle=quiet) as m:
        assert m.health().warnings == []
