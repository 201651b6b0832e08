"""What [`Memory.health`][memtrellis.Memory.health] reports: the figures of a store, and the
names some of them had before 0.2 (`HEALTH_RENAMES`).

`memtrellis.types` re-exports `Health`; import it from there or from ``memtrellis``.

Examples:
    >>> from memtrellis.types import Health
    >>> sorted(HEALTH_RENAMES)[:2], Health.__name__
    (['entities', 'judge_failures'], 'Health')
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from memtrellis._deprecated import renamed, renamed_fields
from memtrellis._model import Model

__all__ = ["HEALTH_RENAMES", "Health"]


class Health(Model):
    """Figures about a store, as [`memtrellis.Memory.health`][memtrellis.Memory.health] reports
    them.

    Examples:
        >>> import tempfile, memtrellis, memtrellis.testing
        >>> store = memtrellis.Memory(
        ...     tempfile.mkdtemp(), embedder=memtrellis.testing.HashingEmbedder()
        ... )
        >>> health = store.health()
        >>> health.total_memories, health.vector_backend, health.capture_queue_depth
        (0, 'embedded', 0)
        >>> store.close()

    Renamed fields (the old names still read and construct, with a ``DeprecationWarning``):
    ``entities`` (subject nodes) is ``subjects``, ``tenants`` (entities holding memories)
    is ``entities_with_memories``, ``judge_failures`` is ``relation_judge_failures`` and
    ``repaired_on_open`` is ``recovered_on_open``.
    """

    path: str
    vector_backend: str
    embedder_model_id: str
    embedder_dimension: int
    total_memories: int
    active_memories: int
    expired: int
    superseded: int
    #: Subject nodes: the people, places and things the memories mention.
    subjects: int
    #: Entities (``entity_id``: whose memory) holding at least one memory.
    entities_with_memories: int
    edges_by_kind: dict[str, int]
    recalls: int
    recall_latency_avg_ms: float
    recall_latency_p95_ms: float
    skipped_inputs: int
    extraction_fallbacks: int = 0
    #: Extraction LLM calls that timed out, raised, or answered with a reply that could
    #: not be used whole (unparseable, wrong shape, empty, repaired or partly invalid),
    #: each try counted; and the tries repeated after one of them.
    extraction_timeouts: int = 0
    extraction_errors: int = 0
    extraction_garbage: int = 0
    extraction_retries: int = 0
    #: LLM calls still failing after their last try (timeouts and errors).
    llm_failures: int = 0
    merged_duplicates: int = 0
    #: Relation judge calls (the lifecycle's LLM opinion) that failed or answered nothing
    #: usable, and, with ``LifecycleConfig(relation_model=True)``, calls of the relation
    #: model that failed in this process; the rules decided instead.
    relation_judge_failures: int = 0
    capture_queue_depth: int = 0
    capture_spooled: int = 0
    capture_retries: int = 0
    capture_failures: int = 0
    #: Captured turns that ran over ``CaptureConfig.turn_budget`` in this process (left
    #: behind so the turns after them go on; tried again on the next open).
    capture_overdue: int = 0
    #: Captured turns in ``spool/quarantine/``: started on ``quarantine_after`` opens
    #: without being stored, and not tried again.
    capture_quarantined: int = 0
    client_calls: int = 0
    client_captures: int = 0
    client_recall_failures: int = 0
    client_capture_failures: int = 0
    #: Fail-open failures adapters reported with
    #: [`Memory.report_failure`][memtrellis.Memory.report_failure] (LangChain, LlamaIndex,
    #: third-party ones): recall, capture and context-rendering failures, and all of them
    #: by ``"source.kind"`` (``{"langchain.recall": 2}``; an unknown kind is ``"other"``).
    adapter_recall_failures: int = 0
    adapter_capture_failures: int = 0
    adapter_context_failures: int = 0
    adapter_failures: dict[str, int] = Field(default_factory=dict)
    #: Calls and captures adapters made (through ``memtrellis.binding``), by
    #: ``"source.event"`` (``{"langchain.capture": 3, "client.call": 5}``); the
    #: ``client_*`` figures above read the ``client`` source of this one family.
    adapter_counts: dict[str, int] = Field(default_factory=dict)
    pending_index_writes: int
    #: Interrupted changes rolled forward and torn log records dropped when this process
    #: caught up with the store's logs (recovery, not a ``repair``).
    recovered_on_open: int
    size_on_disk_bytes: int
    #: Entity shards loaded in this process now (see ``Memory(max_resident_shards=...)``).
    resident_shards: int = 0
    #: Share of the conflicts found (``contradicts`` edges) that a ``supersedes`` edge
    #: resolved; None without conflicts.
    conflict_resolution_rate: float | None = None
    #: Share of the active memories of the entities loaded in this process recalled at
    #: least once within ``LifecycleConfig.health_window_days``; None without any.
    utilisation: float | None = None
    #: Figures below their ``LifecycleConfig`` thresholds (each logged once as a warning).
    warnings: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return renamed_fields("Health", data, HEALTH_RENAMES)

    @property
    def entities(self) -> int:
        """Deprecated: ``subjects`` (it counted subject nodes, not entities)."""
        renamed("Health.entities", "Health.subjects")
        return self.subjects

    @property
    def tenants(self) -> int:
        """Deprecated: ``entities_with_memories``."""
        renamed("Health.tenants", "Health.entities_with_memories")
        return self.entities_with_memories

    @property
    def judge_failures(self) -> int:
        """Deprecated: ``relation_judge_failures``."""
        renamed("Health.judge_failures", "Health.relation_judge_failures")
        return self.relation_judge_failures

    @property
    def repaired_on_open(self) -> int:
        """Deprecated: ``recovered_on_open``."""
        renamed("Health.repaired_on_open", "Health.recovered_on_open")
        return self.recovered_on_open


#: Health fields renamed in 0.2: old name -> new name (the service still sends both).
HEALTH_RENAMES = {
    "entities": "subjects",
    "tenants": "entities_with_memories",
    "judge_failures": "relation_judge_failures",
    "repaired_on_open": "recovered_on_open",
}
