"""The relation model (memtrellis.lifecycle.relation_model): its packaged weights, its
figures on the writers' labelled pairs, and what the lifecycle does with it on a real
store without an LLM (facts and fast-mode chat turns)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.test_relation_pairs import DATA, WRITERS, figures_of

from memtrellis import EdgeKind, Memory
from memtrellis.lifecycle import LifecycleConfig, relation_model
from memtrellis.lifecycle.pair_features import FEATURES
from memtrellis.lifecycle.plan import Candidate
from memtrellis.lifecycle.relation_model import (
    LABELS,
    ModelRelationJudge,
    RelationModel,
    pair_items,
)
from memtrellis.testing import HashingEmbedder, store_of

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
#: Supersessions caught by the rules alone and by the rules with the model, on each
#: writer's part (hashing embedder for the rules' similarity, as the other pair tests):
#: the parts are the model's training data, so these are in-sample floors; the
#: out-of-sample figures are tools/train_relation_model.py --check's (docs/benchmarks.md).
RULES = {
    "w1": 0.11,
    "w2": 0.04,
    "w3": 0.08,
    "w4": 0.08,
    "w5": 0.05,
    "w6": 0.12,
    "w7": 0.14,
    "w8": 0.32,
}
MODEL = {
    "w1": 0.33,
    "w2": 0.30,
    "w3": 0.15,
    "w4": 0.38,
    "w5": 0.07,
    "w6": 0.40,
    "w7": 0.32,
    "w8": 0.52,
}
#: Compatible or unrelated pairs the rules and the model supersede on each part, at most
#: (the rules alone: 1 of w1, w5 and w7, 4 of w8).
WRONG = {"w1": 1, "w2": 1, "w3": 1, "w4": 0, "w5": 1, "w6": 2, "w7": 3, "w8": 4}

# Changes said in words the rules do not read (they leave both current); none of them
# is in the labelled parts.
MANAGER = (
    "Priya is our account manager at Acme.",
    "Acme assigned us a new account manager, Tom Reyes.",
)
WECHAT = ("我的微信号是 lily2020。", "加我微信搜 lily_studio，之前那个号不用了。")


def test_the_packaged_weights_were_fitted_on_every_labelled_part() -> None:
    model = RelationModel.packaged()
    on_disk = {
        path.stem.removeprefix("relation_pairs_"): len(json.loads(path.read_text("utf-8"))["pairs"])
        for path in DATA.glob("relation_pairs_*.json")
    }
    assert model.trained_on == on_disk  # a part added or changed: retrain
    assert model.features == FEATURES
    assert model.weights.shape == (len(FEATURES), len(LABELS))
    assert model.mean.shape == model.scale.shape == (len(FEATURES),)
    assert 0.5 <= model.threshold < 1.0


def test_weights_round_trip_and_weights_for_other_features_are_refused() -> None:
    model = RelationModel.packaged()
    again = RelationModel.from_dict(json.loads(json.dumps(model.to_dict())))
    rows = np.random.default_rng(1).normal(size=(5, len(FEATURES)))
    assert np.allclose(again.probabilities(rows), model.probabilities(rows), atol=1e-5)
    assert np.allclose(model.probabilities(rows).sum(axis=1), 1.0)
    other = model.to_dict()
    other["features"] = other["features"][:-1]
    with pytest.raises(ValueError, match="retrain"):
        RelationModel.from_dict(other)


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, Any]]:
    return figures_of(WRITERS, "+model", model=ModelRelationJudge())


@pytest.mark.parametrize("part", WRITERS)
def test_the_model_catches_changes_the_rules_miss(
    figures: dict[str, dict[str, Any]], part: str
) -> None:
    rules, model = figures[part], figures[part + "+model"]
    assert rules["supersedes_caught"] >= RULES[part]
    assert model["supersedes_caught"] >= MODEL[part]
    assert model["supersedes_caught"] >= rules["supersedes_caught"]
    assert model["compatible_superseded_count"][0] <= WRONG[part]
    assert model["judge_asked"] > 0


@pytest.mark.parametrize(("old", "new"), [MANAGER, WECHAT])
def test_the_judge_says_supersedes_only_where_the_rules_read_no_change(old: str, new: str) -> None:
    judge = ModelRelationJudge()
    first, second = pair_items(old, new)
    [verdict] = judge(second, [Candidate(first, 0.5)])
    assert verdict is not None and verdict.label == "supersedes"
    assert verdict.reason.startswith("relation model: supersedes")
    # A change the rules read keeps their reason: the model has no opinion on it.
    first, second = pair_items("I live in Lisbon.", "I moved to Porto!")
    assert judge(second, [Candidate(first, 0.5)]) == [None]
    # Compatible additions stay apart.
    for old_text, new_text in [
        ("My daughter is 7 years old.", "My son is 4 years old."),
        ("Ana speaks French.", "Ana speaks Spanish too."),
        ("I visited Rome in 2019.", "I visited Paris in 2021."),
    ]:
        first, second = pair_items(old_text, new_text)
        assert judge(second, [Candidate(first, 0.5)]) == [None]


def test_the_model_judges_only_single_claims_that_share_a_slot() -> None:
    packaged = RelationModel.packaged()
    always = replace(packaged, bias=np.array([0.0, 100.0, 0.0, 0.0, 0.0]))  # says "supersedes"
    judge = ModelRelationJudge(model=always)
    for old_text, new_text in [
        # Of one person, another slot: nothing besides the subject is shared.
        ("Leo loves his dog.", "Leo now dances every day."),
        ("小林在学小提琴。", "小林现在住校了。"),
        # The old statement holds several claims.
        (
            "Mira runs the Lisbon office, mentors two interns, coaches chess and plays cello.",
            "Mira runs the Porto office.",
        ),
    ]:
        first, second = pair_items(old_text, new_text)
        assert judge(second, [Candidate(first, 0.5)]) == [None], old_text
    first, second = pair_items(*MANAGER)  # "Acme", "account manager": one slot
    [verdict] = judge(second, [Candidate(first, 0.5)])
    assert verdict is not None and verdict.label == "supersedes"


def test_a_model_that_fails_leaves_the_rules_verdicts_and_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("no model")

    judge = ModelRelationJudge(embed=broken)
    first, second = pair_items(*MANAGER)
    with caplog.at_level(logging.WARNING, logger="memtrellis.lifecycle.relation_model"):
        assert judge(second, [Candidate(first, 0.5), Candidate(first, 0.4)]) == [None, None]
    assert judge.failures == 1 and judge.asked == 2
    assert "the rules' verdicts stand" in caplog.text


def said(text: str, day: int) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": T0 + timedelta(days=day)}


@pytest.fixture(params=[True, False], ids=["model", "rules-only"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    config = LifecycleConfig(relation_model=request.param)
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), lifecycle=config) as m:
        yield m


def test_facts_changed_in_other_words_supersede_the_old_ones(memory: Memory) -> None:
    on = memory.lifecycle.relation_model
    for old_text, new_text in (MANAGER, WECHAT):
        [old] = memory.add([said(old_text, 0)], memory_type="fact")
        [new] = memory.add([said(new_text, 20)], memory_type="fact")
        assert memory.get(old.id).superseded_by == (new.id if on else None), old_text
        assert memory.get(new.id).superseded_by is None
    # A compatible fact stays current either way.
    [daughter] = memory.add([said("My daughter is 7 years old.", 30)], memory_type="fact")
    [son] = memory.add([said("My son is 4 years old.", 31)], memory_type="fact")
    assert memory.get(daughter.id).superseded_by is None
    assert memory.get(son.id).superseded_by is None
    hits = memory.recall("Who is our account manager at Acme?")
    texts = [hit.memory.text for hit in hits.items]
    assert MANAGER[1] in texts
    assert (MANAGER[0] in texts) is not on
    if on:
        ids = {i.text: i.id for i in memory.list()}
        skipped = {s.id: s.superseded_by for s in hits.skipped if s.reason == "superseded"}
        assert skipped[ids[MANAGER[0]]] == ids[MANAGER[1]]


def test_chat_turns_changed_in_other_words_are_linked(memory: Memory) -> None:
    on = memory.lifecycle.relation_model
    [old] = memory.add([said(MANAGER[0], 0)])
    [new] = memory.add([said(MANAGER[1], 40)])
    graph = store_of(memory).graph_of("u")
    assert graph.edges_of(new.id, EdgeKind.SUPERSEDES)[0] == ([old.id] if on else [])
    assert all(i.superseded_by is None for i in memory.list())  # turns stay as said


def test_the_model_is_asked_only_when_asked_for(tmp_path: Path) -> None:
    assert LifecycleConfig().relation_model is False
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder()) as memory:
        [old] = memory.add([said(MANAGER[0], 0)], memory_type="fact")
        memory.add([said(MANAGER[1], 20)], memory_type="fact")
        assert memory.get(old.id).superseded_by is None


def test_a_failing_model_in_a_store_keeps_the_add_and_shows_in_health(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("no model")

    monkeypatch.setattr(relation_model, "_shared", ModelRelationJudge(embed=broken))
    config = LifecycleConfig(relation_model=True)
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), lifecycle=config) as m:
        [old] = m.add([said(MANAGER[0], 0)], memory_type="fact")
        [new] = m.add([said(MANAGER[1], 20)], memory_type="fact")
        assert m.get(old.id).superseded_by is None  # the rules' verdict stands
        assert {i.id for i in m.list()} == {old.id, new.id}
        assert m.health().relation_judge_failures == 1
