"""Settings of the memory lifecycle: validity by kind, confidence, decay, matching thresholds.

Examples:
    >>> from datetime import timedelta
    >>> config = LifecycleConfig(validity={"state": timedelta(hours=6)})
    >>> config.validity_for(MemoryType.STATE), config.validity_for(MemoryType.FACT)
    (datetime.timedelta(seconds=21600), None)
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memtrellis._deprecated import renamed, renamed_fields
from memtrellis.types import MemoryType

__all__ = ["DEFAULT_VALIDITY", "LifecycleConfig"]

#: How long a memory of each kind stays valid when it does not say; absent = open-ended.
DEFAULT_VALIDITY: dict[MemoryType, timedelta] = {
    MemoryType.DECISION: timedelta(days=365),
    MemoryType.STATE: timedelta(hours=2),
    MemoryType.PREDICTION: timedelta(days=90),
}

#: Kinds that record what was said or happened rather than a claim that can change: they
#: are never merged, superseded or contradicted (a later "I moved" does not unsay "I live
#: in Lyon"; it supersedes the fact distilled from it).
RECORD_KINDS = frozenset({MemoryType.EPISODE})


class LifecycleConfig(BaseModel):
    """Everything the lifecycle decides with; pass it as ``Memory(lifecycle=...)``.

    Attributes:
        validity: Per-kind validity, merged over
            [`DEFAULT_VALIDITY`][memtrellis.lifecycle.DEFAULT_VALIDITY]; ``None`` makes a kind
            open-ended. An item's own ``valid_until`` always wins.
        source_confidence: Base confidence of a memory whose extractor gave none, by where
            it came from: ``structured`` (documents, ready-made items), ``user`` (said by
            the user), ``model`` (said by the assistant).
        support_bonus: Added to a memory's confidence per ``supports`` edge (or merged
            duplicate), up to ``support_cap`` in all.
        half_life_days: Time decay of confidence at recall, from the memory's latest
            evidence; ``None`` turns decay off.
        decay_floor: Decay never takes confidence below this share of itself, so an old
            memory that matches well is still found.
        heat_per_recall: Ranking prior per past recall (log-scaled), capped at ``heat_cap``.
        heat_renewal: Share of its kind's validity that a recall renews a memory for,
            counted from the recall (`memtrellis.lifecycle.heat`); 0 turns renewal off.
        heat_min_recalls: Recalls (the current one included) before recall renews it.
        heat_validity_cap: Most spans of its kind's validity heat adds past a memory's
            default end.
        health_window_days: The window of ``Health.utilisation``: memories recalled
            within this many days count as used.
        warn_utilisation_below: ``Memory.health()`` logs a warning when utilisation is
            below this share (None: never).
        warn_conflict_resolution_below: ... when the conflict-resolution rate is below
            this share (None: never).
        health_min_count: Active memories (or conflicts) a figure needs before it warns.
        duplicate_similarity: Cosine at or above which a memory with the same entities is a
            duplicate: no new node, its sources join the existing memory.
        support_similarity: Cosine at or above which it supports the existing memory.
        related_similarity: Cosine at or above which two memories about the same entity are
            compared for contradiction and extension.
        entity_match: rapidfuzz ``ratio`` (0-100, a normalised edit distance) at or above
            which a new entity name resolves to an existing entity of the same scope.
        aliases: Extra names for the same entity, ``{"bob": "robert"}`` (either way round).
        relation_judge_candidates: With an LLM configured, how many related memories the
            relation judge compares a new memory with: the closest ones the rules are not
            sure of (``judge_candidates``, its old name, still works and warns).
        relation_model: Without an LLM, also ask the packaged relation model
            (`memtrellis.lifecycle.relation_model`: offline, no download) about the same
            closest candidates, and about earlier chat turns a new one may replace: it
            catches about three times as many of the changes said in words the rules do not
            read, and wrongly supersedes about 1% more compatible pairs (more on long
            summary-like statements), so it is off unless asked for.

    Examples:
        >>> from datetime import timedelta
        >>> from memtrellis import MemoryType
        >>> config = LifecycleConfig(validity={MemoryType.EVENT: timedelta(days=7)})
        >>> config.validity_for(MemoryType.EVENT)
        datetime.timedelta(days=7)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    validity: dict[MemoryType, timedelta | None] = Field(default_factory=dict)
    source_confidence: dict[str, float] = Field(
        default_factory=lambda: {"structured": 0.9, "user": 0.8, "model": 0.6}
    )
    support_bonus: float = Field(default=0.02, ge=0.0, le=1.0)
    support_cap: float = Field(default=0.06, ge=0.0, le=1.0)
    half_life_days: float | None = Field(default=730.0, gt=0.0)
    decay_floor: float = Field(default=0.5, ge=0.0, le=1.0)
    heat_per_recall: float = Field(default=0.005, ge=0.0)
    heat_cap: float = Field(default=0.02, ge=0.0)
    heat_renewal: float = Field(default=0.5, ge=0.0, le=10.0)
    heat_min_recalls: int = Field(default=3, ge=1)
    heat_validity_cap: float = Field(default=1.0, ge=0.0, le=100.0)
    health_window_days: float = Field(default=30.0, gt=0.0)
    warn_utilisation_below: float | None = Field(default=0.05, ge=0.0, le=1.0)
    warn_conflict_resolution_below: float | None = Field(default=0.5, ge=0.0, le=1.0)
    health_min_count: int = Field(default=20, ge=1)
    duplicate_similarity: float = Field(default=0.95, gt=0.0, le=1.0)
    support_similarity: float = Field(default=0.85, gt=0.0, le=1.0)
    related_similarity: float = Field(default=0.5, ge=0.0, le=1.0)
    entity_match: float = Field(default=90.0, ge=0.0, le=100.0)
    aliases: dict[str, str] = Field(default_factory=dict)
    relation_judge_candidates: int = Field(default=5, ge=0, le=50)
    relation_model: bool = False

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed_fields(
            "LifecycleConfig", data, {"judge_candidates": "relation_judge_candidates"}
        )

    @property
    def judge_candidates(self) -> int:
        """Deprecated name of ``relation_judge_candidates``."""
        renamed("LifecycleConfig.judge_candidates", "LifecycleConfig.relation_judge_candidates")
        return self.relation_judge_candidates

    @field_validator("source_confidence")
    @classmethod
    def _sources(cls, value: dict[str, float]) -> dict[str, float]:
        missing = {"structured", "user", "model"} - set(value)
        if missing:
            raise ValueError(f"source_confidence needs {sorted(missing)}")
        if any(not 0.0 <= v <= 1.0 for v in value.values()):
            raise ValueError("source confidences are between 0 and 1")
        return value

    def validity_for(self, kind: MemoryType) -> timedelta | None:
        """How long a memory of ``kind`` stays valid by default (``None``: open-ended)."""
        if kind in self.validity:
            return self.validity[kind]
        return DEFAULT_VALIDITY.get(kind)
