"""Second-stage ranking: a reranker reorders the best first-stage candidates of a recall.

Hybrid recall (`memtrellis.recall.hybrid`) ranks every candidate cheaply; a reranker then
reads the query beside each of the top ``depth`` candidates' texts and scores them again,
and those candidates are put in its order (or in a blend of both orders with ``weight``
below 1). What it reorders keeps its sources and its explanation, plus
``explanation.rerank_score``.

A reranker that fails (raises, or returns the wrong number of scores or a non-finite one)
is logged and the first-stage order is kept, unless the stage is ``strict``: recall
still answers when an optional model breaks.

Rerankers:

* ``"minilm-maxsim"``
  ([`LateInteractionReranker`][memtrellis.embeddings.maxsim.LateInteractionReranker]): late
  interaction over the default embedder's contextual token vectors (each query token's
  best match in the candidate, averaged), from the model already installed.
* any cross-encoder with a ``predict(pairs)`` method (a sentence-transformers
  ``CrossEncoder``, say) or a function ``(query, texts) -> scores``, through
  [`as_reranker`][memtrellis.recall.rerank.as_reranker]. No cross-encoder ships its
  weights inside a wheel on the package index today, so none is built in.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memtrellis.errors import InvalidInputError

__all__ = ["RerankStage", "Reranker", "as_reranker"]

log = logging.getLogger("memtrellis")

#: Candidates a stage rescores unless told otherwise.
DEFAULT_DEPTH = 20


@runtime_checkable
class Reranker(Protocol):
    """Scores texts against a query; higher is more relevant.

    Examples:
        >>> from memtrellis.recall.rerank import Reranker
        >>> class Longest:
        ...     name = "longest"
        ...     def score(self, query, texts): return [float(len(t)) for t in texts]
        >>> isinstance(Longest(), Reranker)
        True
    """

    @property
    def name(self) -> str:
        """A stable name of the model, for logs and benchmarks."""
        ...

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """One score per text, in the order given."""
        ...


class _CallableReranker:
    """A function ``(query, texts) -> scores`` or a cross-encoder's ``predict(pairs)``."""

    def __init__(self, score: Callable[[str, Sequence[str]], Sequence[float]], name: str) -> None:
        self._score = score
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        return self._score(query, texts)


@dataclass(frozen=True)
class RerankStage:
    """A reranker with how deep it reads and how its order is used.

    Args:
        model: The [`Reranker`][memtrellis.recall.rerank.Reranker].
        depth: How many of the best first-stage candidates it rescores (a recall of
            ``k`` above that still gets ``k``; those past ``depth`` keep their order).
        weight: 1 puts the candidates in the reranker's order; below 1, in the order of
            ``weight * reranker + (1 - weight) * first stage``, both min-max scaled over
            the candidates.
        strict: Raise the reranker's error instead of logging it and keeping the
            first-stage order.

    Examples:
        >>> from memtrellis.recall.rerank import RerankStage, as_reranker
        >>> stage = as_reranker(lambda q, texts: [len(t) for t in texts], depth=5)
        >>> stage.order("q", [("a", "x", 0.9), ("b", "xyz", 0.5)])
        {'b': 3.0, 'a': 1.0}
    """

    model: Reranker
    depth: int = DEFAULT_DEPTH
    weight: float = 1.0
    strict: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise InvalidInputError(f"rerank depth must be an int >= 1, got {self.depth!r}")
        if not 0.0 < self.weight <= 1.0:
            raise InvalidInputError(f"rerank weight must be in (0, 1], got {self.weight!r}")

    def order(
        self, query: str, candidates: Sequence[tuple[str, str, float]]
    ) -> dict[str, float] | None:
        """The reranker's score of each ``(id, text, first-stage score)``, keyed by id
        and ordered best first (ties keep the first-stage order); ``None`` when the
        reranker failed and the stage is not strict.
        """
        if not candidates:
            return {}
        try:
            raw = [float(s) for s in self.model.score(query, [t for _, t, _ in candidates])]
            if len(raw) != len(candidates):
                raise ValueError(f"{len(raw)} scores for {len(candidates)} candidates")
            if not all(math.isfinite(s) for s in raw):
                raise ValueError("a score is not finite")
        except Exception:
            if self.strict:
                raise
            log.warning(
                "memtrellis: reranker %s failed; the first-stage order is kept",
                getattr(self.model, "name", type(self.model).__name__),
                exc_info=True,
            )
            return None
        keys = raw
        if self.weight < 1.0:
            first = _scaled([s for _, _, s in candidates])
            keys = [
                self.weight * r + (1.0 - self.weight) * f
                for r, f in zip(_scaled(raw), first, strict=True)
            ]
        ranked = sorted(range(len(candidates)), key=lambda i: (-keys[i], i))
        return {candidates[i][0]: raw[i] for i in ranked}


def _scaled(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    span = high - low
    return [(v - low) / span if span > 0 else 1.0 for v in values]


def as_reranker(
    obj: object,
    *,
    depth: int | None = None,
    weight: float | None = None,
    strict: bool | None = None,
) -> RerankStage:
    """A [`RerankStage`][memtrellis.recall.rerank.RerankStage] from what ``Memory(reranker=...)``
    accepts.

    Accepted: a ``RerankStage`` (the options given replace its own), a
    [`Reranker`][memtrellis.recall.rerank.Reranker] (``score(query, texts)``), a
    cross-encoder with ``predict(pairs)`` (pairs of ``(query, text)``), or a function
    ``(query, texts) -> scores``. ``Memory(reranker=...)`` also takes a name from
    [`RERANKERS`][memtrellis.embeddings.catalog.RERANKERS].

    Raises:
        InvalidInputError: ``obj`` is none of those, or an option is out of range.

    Examples:
        >>> from memtrellis.recall.rerank import as_reranker
        >>> class CrossEncoderLike:
        ...     def predict(self, pairs): return [float(len(t)) for _, t in pairs]
        >>> stage = as_reranker(CrossEncoderLike(), depth=10)
        >>> stage.depth, stage.model.score("q", ["ab", "abc"])
        (10, [2.0, 3.0])
    """
    options: dict[str, Any] = {
        k: v for k, v in (("depth", depth), ("weight", weight), ("strict", strict)) if v is not None
    }
    if isinstance(obj, RerankStage):
        return RerankStage(**{**obj.__dict__, **options}) if options else obj
    model: Reranker
    if isinstance(obj, str):
        raise InvalidInputError(
            f"as_reranker got the name {obj!r}: pass names to Memory(reranker=...), or "
            "memtrellis.embeddings.catalog.named_reranker(name) here"
        )
    if callable(getattr(obj, "score", None)) and hasattr(obj, "name"):
        model = obj  # type: ignore[assignment]
    elif callable(getattr(obj, "predict", None)):
        predict = obj.predict  # type: ignore[attr-defined]

        def cross(query: str, texts: Sequence[str]) -> Sequence[float]:
            return [float(s) for s in predict([(query, t) for t in texts])]

        model = _CallableReranker(cross, type(obj).__name__)
    elif callable(obj):
        function = obj
        model = _CallableReranker(
            lambda q, texts: function(q, texts),
            getattr(obj, "__qualname__", type(obj).__name__),
        )
    else:
        raise InvalidInputError(
            f"cannot use {type(obj).__name__} as a reranker; pass a name, an object with "
            "score(query, texts), a cross-encoder with predict(pairs) or a function "
            "(query, texts) -> scores"
        )
    return RerankStage(model, **options)
