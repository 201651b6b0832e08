"""One recall's request: the query, its embedding and scope, and the options it was
asked with (`memtrellis.recall.hybrid` ranks for it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.recall.rerank import RerankStage
from memtrellis.types import MemoryItem, MemoryType

__all__ = ["RecallRequest"]


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
    graph_context: bool = True  # conversation neighbours and entity hops
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    #: Candidates taken from each search; ``None`` for ``max(4k, 100)``.
    fetch: int | None = None
    #: Only memories of one of these types / with one of these tags (``None``: any).
    memory_types: frozenset[MemoryType] | None = None
    tags: frozenset[str] | None = None
    #: The embedder's `similarity_floor`: cosines are read as ``(s - floor) / (1 - floor)``.
    similarity_floor: float = 0.0

    def dense_part(self, similarity: float) -> float:
        """The cosine on the scale fusion expects (unchanged for a floor of 0)."""
        floor = self.similarity_floor
        if not floor:
            return similarity
        return max(0.0, (similarity - floor) / (1.0 - floor))

    #: Second stage over the best first-stage candidates (`memtrellis.recall.rerank`).
    reranker: RerankStage | None = None

    @property
    def filtered(self) -> bool:
        """Whether types or tags narrow the memories searched."""
        return self.memory_types is not None or self.tags is not None

    def wanted(self, item: MemoryItem) -> bool:
        """``item`` passes the type and tag filters."""
        if self.memory_types is not None and item.memory_type not in self.memory_types:
            return False
        return self.tags is None or not self.tags.isdisjoint(item.tags)
