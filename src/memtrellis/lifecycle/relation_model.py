"""The relation model: a small learned judge that catches changes the rules miss, offline.

The rules (`memtrellis.lifecycle.relate`) read a change from cue words and from values
replaced in the same words; said in other words ("Priya is our account manager at Acme."
/ "Acme assigned us a new account manager, Tom Reyes."), a change escapes them, and
without an LLM nothing else looked.
The relation model is a multinomial logistic regression over general features of a pair
(`memtrellis.lifecycle.pair_features`: the rules' reading, what each statement says
that the other does not, the packaged MiniLM's cosines), trained on the labelled pairs
of ``tests/data`` (``tools/train_relation_model.py``). Its weights ship in the package
(``relation_model.json``, a few kilobytes): nothing is downloaded, and no LLM is asked.

It is a `memtrellis.lifecycle.plan.RelationJudge`: when asked for
(``LifecycleConfig(relation_model=True)``; it is off by default) and no LLM judge is
configured, the lifecycle asks it about the candidates the rules are not sure of
(``Relation.sure``), and about earlier chat turns of one sentence. It says only one
thing: that the new memory **supersedes** the old one, when its probability of that is
at least ``threshold`` (set at training so that, with each labelled part held out, it
added at most 1% of that part's compatible and unrelated pairs to those the rules
supersede), and only for the pairs `may_judge` lets it judge; otherwise it has no
opinion and the rules' verdict stands. It never merges (a merge drops the new text) and
never overrules a verdict the rules are sure of.

Examples:
    >>> model = RelationModel.packaged()
    >>> "rules_sure" in model.features and 0.5 <= model.threshold < 1.0
    True
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from memtrellis.lifecycle.entities import heuristic_entities, resolve_entities
from memtrellis.lifecycle.pair_features import FEATURES, pair_row, texts_to_embed
from memtrellis.lifecycle.relate import (
    Relation,
    RelationKind,
    relate,
    several_claims,
    slot_evidence,
)
from memtrellis.store.graph import normalize_subject
from memtrellis.types import MemoryItem, MemoryType, Scope

__all__ = [
    "ModelRelationJudge",
    "RelationModel",
    "may_judge",
    "model_failures",
    "pair_items",
    "shared_judge",
]

logger = logging.getLogger(__name__)

#: The labels the model tells apart, in the order of its weights' columns.
LABELS = ("duplicate", "supersedes", "contradicts", "extends", "unrelated")
_WEIGHTS = "relation_model.json"
#: The most content words (besides its subject) a new statement may hold for the model
#: to judge it, twice as many in Chinese: its training pairs are short statements.
NEW_UNITS_MOST = 10
#: Texts whose vectors a judge keeps (about 3 KB each), then starts afresh.
_KEPT = 4096

Embed = Callable[[list[str]], Any]


@dataclass(frozen=True)
class RelationModel:
    """The model's weights: standardisation, one column of weights per label, threshold.

    Attributes:
        features: The names of the features the weights are for (`FEATURES`).
        mean: Each feature's mean on the training pairs.
        scale: Each feature's standard deviation on the training pairs.
        weights: ``len(features) x len(LABELS)``.
        bias: One per label.
        threshold: The probability of ``supersedes`` at which the model says so.
        trained_on: The labelled parts it was fitted on, with their sizes.
    """

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: np.ndarray
    threshold: float
    trained_on: dict[str, int]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelationModel:
        """Weights as ``to_dict`` wrote them; a ``ValueError`` for other features."""
        features = tuple(data["features"])
        if features != FEATURES:
            raise ValueError(
                "relation model weights are for other features; retrain with "
                "tools/train_relation_model.py"
            )
        return cls(
            features=features,
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            weights=np.asarray(data["weights"], dtype=np.float64),
            bias=np.asarray(data["bias"], dtype=np.float64),
            threshold=float(data["threshold"]),
            trained_on=dict(data.get("trained_on", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        """The weights as JSON-ready values (rounded: the file stays small and stable)."""
        return {
            "labels": list(LABELS),
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [[round(float(v), 6) for v in row] for row in self.weights],
            "bias": [round(float(v), 6) for v in self.bias],
            "threshold": self.threshold,
            "trained_on": self.trained_on,
        }

    @classmethod
    def packaged(cls) -> RelationModel:
        """The weights shipped in the package."""
        global _packaged
        if _packaged is None:
            text = resources.files(__package__).joinpath(_WEIGHTS).read_text(encoding="utf-8")
            _packaged = cls.from_dict(json.loads(text))
        return _packaged

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        """One row of label probabilities (`LABELS`) per row of features."""
        z = ((rows - self.mean) / self.scale) @ self.weights + self.bias
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return np.asarray(p / p.sum(axis=1, keepdims=True))


_packaged: RelationModel | None = None


def _unit(vectors: Any) -> np.ndarray:
    out = np.asarray(vectors, dtype=np.float64)
    return np.asarray(out / np.maximum(np.linalg.norm(out, axis=-1, keepdims=True), 1e-12))


def pair_rows(
    pairs: Sequence[tuple[MemoryItem, MemoryItem]], embed: Embed
) -> tuple[np.ndarray, list[Relation]]:
    """The features of each ``(new, old)`` pair and the rules' verdicts (with the model's
    own cosine: the one it was trained with)."""
    if not pairs:
        return np.zeros((0, len(FEATURES))), []
    vectors = _unit(embed(texts_to_embed(pairs))).reshape(len(pairs), 4, -1)
    rows, verdicts = [], []
    for n, (new, old) in enumerate(pairs):
        cosine = float(vectors[n, 0] @ vectors[n, 1])
        verdict = relate(new, old, cosine)
        rows.append(pair_row(new, old, verdict, cosine, float(vectors[n, 2] @ vectors[n, 3])))
        verdicts.append(verdict)
    return np.asarray(rows, dtype=np.float64), verdicts


def pair_items(old: str, new: str, entity_id: str = "pairs") -> tuple[MemoryItem, MemoryItem]:
    """Two plain-text facts of one entity, with entities found as the lifecycle finds them
    (the new one's resolved against the old one's)."""
    scope = Scope(entity_id=entity_id)
    known: dict[str, str] = {}
    out = []
    for text in (old, new):
        names = resolve_entities(heuristic_entities(text, known), known)
        for name in names:
            known.setdefault(normalize_subject(name), name)
        out.append(MemoryItem(text=text, entities=names, scope=scope, memory_type=MemoryType.FACT))
    return out[0], out[1]


class ModelRelationJudge:
    """The relation model as the lifecycle's judge (`memtrellis.lifecycle.plan.RelationJudge`).

    Args:
        embed: Texts to vectors; the packaged MiniLM (what the model was trained with)
            when ``None``, loaded on first use.
        model: The weights; the packaged ones when ``None``.

    Examples:
        >>> from memtrellis.lifecycle.plan import Candidate
        >>> old, new = pair_items("Priya is our account manager at Acme.",
        ...                       "Acme assigned us a new account manager, Tom Reyes.")
        >>> judge = ModelRelationJudge()
        >>> [verdict.label if verdict else None for verdict in judge(new, [Candidate(old, 0.5)])]
        ['supersedes']
    """

    def __init__(self, embed: Embed | None = None, model: RelationModel | None = None) -> None:
        self._embed = embed
        self.model = model or RelationModel.packaged()
        self.asked = 0
        self.failures = 0
        # Stored memories come back as candidates again and again: their vectors are kept.
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _embedder(self) -> Embed:
        if self._embed is None:
            from memtrellis.embeddings.minilm import default_embedder

            self._embed = default_embedder().embed_documents
        return self._cached

    def _cached(self, texts: list[str]) -> np.ndarray:
        """``texts`` embedded, the vectors of texts seen before (at most `_KEPT`) reused."""
        embed = self._embed
        assert embed is not None
        with self._lock:
            known = {t: self._vectors[t] for t in texts if t in self._vectors}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            fresh = _unit(embed(missing))
            known.update(zip(missing, fresh, strict=True))
            with self._lock:
                if len(self._vectors) + len(missing) > _KEPT:
                    self._vectors.clear()
                self._vectors.update(zip(missing, fresh, strict=True))
        return np.stack([known[t] for t in texts])

    def __call__(self, new: MemoryItem, candidates: Sequence[Any]) -> list[Relation | None]:
        """A superseding ``CONTRADICTS`` for each candidate (``.item``) the new memory
        replaces, ``None`` (no opinion) for the others."""
        return self.verdicts([(new, c.item) for c in candidates])

    def verdicts(self, pairs: Sequence[tuple[MemoryItem, MemoryItem]]) -> list[Relation | None]:
        """As calling it, for ``(new, old)`` pairs of any new memories."""
        out: list[Relation | None] = [None] * len(pairs)
        judged = [n for n, (new, old) in enumerate(pairs) if may_judge(new, old)]
        if not judged:
            return out
        self.asked += len(judged)
        try:
            rows, rules = pair_rows([pairs[n] for n in judged], self._embedder())
            chances = self.model.probabilities(rows)[:, LABELS.index("supersedes")]
        except Exception:  # a model that cannot run leaves the rules' verdicts
            self.failures += 1
            logger.warning("relation model failed; the rules' verdicts stand", exc_info=True)
            return out
        for n, chance, rule in zip(judged, chances, rules, strict=True):
            # Where the rules already read a change, their reason ("change cue 'moved
            # to'") says more than a probability: no opinion, their verdict stands.
            if chance >= self.model.threshold and rule.label != "supersedes":
                reason = f"relation model: supersedes ({chance:.2f})"
                out[n] = Relation(RelationKind.CONTRADICTS, reason)
        return out


def may_judge(new: MemoryItem, old: MemoryItem) -> bool:
    """Whether the model may say that ``new`` supersedes ``old``: not a statement of
    several claims (not what it was trained on, and a change of one claim is no change of
    all), and something besides their subject makes them one slot (`slot_evidence`): of
    one person, "Leo now dances every day." replaces nothing of "Leo loves his dog."."""
    return not several_claims(new, old, NEW_UNITS_MOST) and slot_evidence(new, old)


_shared: ModelRelationJudge | None = None


def shared_judge() -> ModelRelationJudge:
    """The process-wide relation model judge (the packaged weights and MiniLM), made on
    first use: what the lifecycle asks when ``LifecycleConfig.relation_model`` is on and
    no LLM judge is configured."""
    global _shared
    if _shared is None:
        _shared = ModelRelationJudge()
    return _shared


def model_failures() -> int:
    """How many calls of the process-wide relation model judge failed (0 before its first
    use): `Health.relation_judge_failures` adds them when the model is on."""
    return _shared.failures if _shared is not None else 0
