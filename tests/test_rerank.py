"""The second stage of recall: a reranker reorders the top candidates, keeps their sources
and explanations, and fails open (unless strict)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from memtrellis import Memory
from memtrellis._engine import engine_of
from memtrellis.embeddings.catalog import named_reranker
from memtrellis.embeddings.maxsim import LateInteractionReranker
from memtrellis.errors import InvalidInputError
from memtrellis.recall.rerank import Reranker, RerankStage, as_reranker
from memtrellis.testing import HashingEmbedder

FACTS = [
    "Ann drinks green tea every morning",
    "Ann's tea kettle is blue",
    "Ann went to Lisbon for tea and pastries",
    "Bob likes coffee",
]


class Prefers:
    """A fake reranker: texts containing ``word`` first, then the rest; counts calls."""

    name = "prefers"

    def __init__(self, word: str) -> None:
        self.word = word
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        return [2.0 if self.word in t else 1.0 / (i + 2) for i, t in enumerate(texts)]


class Broken:
    name = "broken"

    def __init__(self, result: object = None) -> None:
        self.result = result

    def score(self, query: str, texts: Sequence[str]) -> object:
        if self.result is None:
            raise RuntimeError("model exploded")
        return self.result


def engine_parts(memory: Memory):  # type: ignore[no-untyped-def]
    return engine_of(memory).parts


def fill(memory: Memory) -> None:
    for fact in FACTS:
        memory.add(
            {"role": "user", "content": fact, "id": f"m-{FACTS.index(fact)}"},
            mode="fast",
        )


def recall(path: Path, reranker: object = None, **options: object) -> list:  # type: ignore[type-arg]
    with Memory(path, embedder=HashingEmbedder(), reranker=reranker) as memory:
        return list(memory.recall("what tea does Ann drink?", **options).items)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with Memory(path, embedder=HashingEmbedder()) as memory:
        fill(memory)
    return path


def test_the_reranker_reorders_and_keeps_sources_and_explanations(store: Path) -> None:
    first = recall(store)
    assert first[0].memory.text != "Ann went to Lisbon for tea and pastries"
    model = Prefers("Lisbon")
    reranked = recall(store, model)
    assert reranked[0].memory.text == "Ann went to Lisbon for tea and pastries"
    assert {r.memory.id for r in reranked} == {r.memory.id for r in first}
    before = {r.memory.id: r for r in first}
    for item in reranked:
        old = before[item.memory.id]
        # Sources and the first-stage explanation are those of the first stage.
        assert item.memory.sources == old.memory.sources
        assert item.explanation.dense_score == old.explanation.dense_score
        assert item.explanation.keyword_score == old.explanation.keyword_score
        assert item.explanation.relevance == old.explanation.relevance
        assert item.explanation.rerank_score is not None
        assert old.explanation.rerank_score is None
    scores = [r.explanation.rerank_score for r in reranked]
    assert scores == sorted(scores, reverse=True)
    [(query, texts)] = model.calls
    assert query == "what tea does Ann drink?"
    assert "Ann went to Lisbon for tea and pastries" in texts


def test_only_the_top_depth_are_rescored(store: Path) -> None:
    first = recall(store)
    model = Prefers("Lisbon")
    reranked = recall(store, as_reranker(model, depth=2))
    [(_, texts)] = model.calls
    assert texts == [r.memory.search_text() for r in first[:2]]
    # Past the depth the first-stage order holds, without a rerank score.
    assert [r.memory.id for r in reranked[2:]] == [r.memory.id for r in first[2:]]
    assert all(r.explanation.rerank_score is None for r in reranked[2:])


def test_k_below_depth_still_returns_k(store: Path) -> None:
    reranked = recall(store, Prefers("Lisbon"), k=1)
    assert [r.memory.text for r in reranked] == ["Ann went to Lisbon for tea and pastries"]


@pytest.mark.parametrize("result", [None, [1.0], [math.nan] * 4, ["x"] * 4])
def test_a_failing_reranker_logs_and_keeps_the_first_stage_order(
    store: Path, result: object, caplog: pytest.LogCaptureFixture
) -> None:
    first = [r.memory.id for r in recall(store)]
    with caplog.at_level(logging.WARNING, logger="memtrellis"):
        kept = recall(store, Broken(result))
    assert [r.memory.id for r in kept] == first
    assert all(r.explanation.rerank_score is None for r in kept)
    assert "reranker broken failed; the first-stage order is kept" in caplog.text


def test_a_strict_reranker_raises(store: Path) -> None:
    with pytest.raises(RuntimeError, match="model exploded"):
        recall(store, as_reranker(Broken(), strict=True))


def test_weight_blends_both_orders() -> None:
    stage = as_reranker(lambda q, texts: [0.0, 1.0, 0.9], weight=0.5)
    # first stage: a best, b worst; reranker: b best, a worst. c, which both like, wins;
    # a and b tie at 0.5 and keep the first-stage order.
    order = stage.order("q", [("a", "", 1.0), ("b", "", 0.0), ("c", "", 0.8)])
    assert list(order or {}) == ["c", "a", "b"]
    pure = RerankStage(stage.model).order("q", [("a", "", 1.0), ("b", "", 0.0), ("c", "", 0.8)])
    assert pure == {"b": 1.0, "c": 0.9, "a": 0.0}


def test_budget_and_token_count_hold_after_reranking(store: Path) -> None:
    with Memory(store, embedder=HashingEmbedder(), reranker=Prefers("Lisbon")) as memory:
        full = memory.recall("what tea does Ann drink?")
        budget = full.tokens // 2
        cut = memory.recall("what tea does Ann drink?", token_budget=budget)
    assert cut.truncated and cut.tokens <= budget
    assert [r.memory.id for r in cut.items] == [r.memory.id for r in full.items][: len(cut.items)]


def test_as_reranker_accepts_the_usual_shapes() -> None:
    class CrossEncoderLike:
        def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
            return [float(len(text)) for _, text in pairs]

    def function(query: str, texts: Sequence[str]) -> list[float]:
        return [1.0 for _ in texts]

    for obj in (named_reranker("minilm-maxsim"), Prefers("x"), CrossEncoderLike(), function):
        stage = as_reranker(obj)
        assert isinstance(stage.model, Reranker)
        assert len(stage.model.score("q", ["a", "bb"])) == 2
    stage = as_reranker(CrossEncoderLike(), depth=7)
    assert as_reranker(stage) is stage
    assert as_reranker(stage, strict=True) == RerankStage(stage.model, depth=7, strict=True)
    assert isinstance(named_reranker("minilm-maxsim"), LateInteractionReranker)


@pytest.mark.parametrize(
    ("obj", "options"),
    [
        (42, {}),
        ("minilm-maxsim", {}),  # a name is Memory's to resolve
        (Prefers("x"), {"depth": 0}),
        (Prefers("x"), {"weight": 0.0}),
        (Prefers("x"), {"weight": 1.5}),
    ],
)
def test_bad_rerankers_are_refused(obj: object, options: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInputError):
        as_reranker(obj, **options)


@pytest.mark.parametrize("obj", [42, "no-such-reranker"])
def test_memory_refuses_a_bad_reranker_before_opening(obj: object, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        Memory(tmp_path / "store", embedder=HashingEmbedder(), reranker=obj)
    assert not (tmp_path / "store").exists()


def test_late_interaction_through_the_real_memory(tmp_path: Path) -> None:
    texts = [
        "I work night shifts as a nurse in a hospital",
        "My dog is called Biscuit",
        "We went to Lisbon last summer",
    ]
    with Memory(tmp_path / "store", reranker="minilm-maxsim") as memory:
        memory.add([{"role": "user", "content": t} for t in texts], mode="fast")
        result = memory.recall("what is my job?", k=3)
    assert result.items[0].memory.text == texts[0]
    assert all(r.explanation.rerank_score is not None for r in result.items)
    scores = [r.explanation.rerank_score for r in result.items]
    assert scores == sorted(scores, reverse=True)


def test_late_interaction_scores() -> None:
    model = LateInteractionReranker()
    tea, bus, empty = model.score("what does Ann drink?", ["Ann drinks green tea", "The bus", ""])
    assert tea > bus and empty == 0.0
    assert model.score("", ["anything"]) == [0.0]
    assert model.score("q", []) == []


def test_the_model_runs_outside_the_shard_lock_and_changes_are_seen(tmp_path: Path) -> None:
    """A reranker that writes to the same memory while it scores neither deadlocks (the
    shard is not held during the model call) nor brings back what was forgotten meanwhile."""
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        fill(memory)
        lisbon = next(
            m for m in memory.list(limit=10) if m.text == "Ann went to Lisbon for tea and pastries"
        )

        class ForgetsLisbon:
            name = "forgets"

            def score(self, query: str, texts: Sequence[str]) -> list[float]:
                memory.forget(lisbon.id)  # would wait forever on a held shard lock
                return [2.0 if "Lisbon" in t else 1.0 for t in texts]

        engine_parts(memory).reranker = as_reranker(ForgetsLisbon())
        result = memory.recall("what tea does Ann drink?")
    texts = [r.memory.text for r in result.items]
    assert "Ann went to Lisbon for tea and pastries" not in texts
    assert texts and all(r.explanation.rerank_score == 1.0 for r in result.items)
