"""Figures for ``Memory.health()``: what the store holds and how the facade has been doing."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from memtrellis.lifecycle.confidence import merged_count
from memtrellis.store import Store
from memtrellis.types import utcnow

__all__ = ["CLIENT_COUNTERS", "FacadeStats", "store_figures"]

#: Counters of registered SDK clients, as named in
#: [`memtrellis.types.Health`][memtrellis.types.Health].
CLIENT_COUNTERS = (
    "client_calls",
    "client_captures",
    "client_recall_failures",
    "client_capture_failures",
)


@dataclass
class FacadeStats:
    """Counters the facade keeps since it was opened (thread-safe)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=2048))
    recalls: int = 0
    latency_total: float = 0.0
    skipped: int = 0
    fallbacks: int = 0
    #: Calls, captures and fail-open failures of SDK clients given to ``Memory.register``.
    clients: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLIENT_COUNTERS, 0))

    def record_recall(self, latency_ms: float) -> None:
        """Count one recall and its latency."""
        with self.lock:
            self.recalls += 1
            self.latency_total += latency_ms
            self.latencies.append(latency_ms)

    def record_extraction(self, skipped: int, fallbacks: int) -> None:
        """Count inputs skipped and fallback memories stored by one extraction."""
        with self.lock:
            self.skipped += skipped
            self.fallbacks += fallbacks

    def count(self, counter: str) -> None:
        """Add one to a client counter (one of `CLIENT_COUNTERS`)."""
        with self.lock:
            self.clients[counter] += 1

    def figures(self) -> dict[str, Any]:
        """Recall count, average and p95 latency (over the last 2,048), skips, fallbacks."""
        with self.lock:
            ordered = sorted(self.latencies)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0
            average = self.latency_total / self.recalls if self.recalls else 0.0
            return {
                "recalls": self.recalls,
                "recall_latency_avg_ms": round(average, 3),
                "recall_latency_p95_ms": round(p95, 3),
                "skipped_inputs": self.skipped,
                "extraction_fallbacks": self.fallbacks,
                **self.clients,
            }


def store_figures(store: Store) -> dict[str, Any]:
    """Counts over the whole store: memories by state, entities, edges, disk."""
    now = utcnow()
    with store.reading():
        items = list(store.graph.items())
        figures: dict[str, Any] = {
            "total_memories": len(items),
            "expired": sum(1 for i in items if i.valid_until is not None and i.valid_until <= now),
            "superseded": sum(1 for i in items if i.superseded_by is not None),
            "merged_duplicates": sum(merged_count(i) for i in items),
            "active_memories": sum(
                1
                for i in items
                if i.superseded_by is None and (i.valid_until is None or i.valid_until > now)
            ),
            "entities": store.graph.entity_count(),
            "edges_by_kind": store.graph.edge_counts(),
            "tenants": len(store.graph.tenants()),
            "pending_index_writes": store.pending_count,
            "repaired_on_open": len(store.repair.rolled_forward) + store.repair.torn_records,
            "vector_backend": store.vectors.mode,
        }
    figures["size_on_disk_bytes"] = store.disk_usage()
    return figures
