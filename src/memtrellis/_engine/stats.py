"""Figures for ``Memory.health()``: what the store holds and how the facade has been doing."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from memtrellis.store import Store
from memtrellis.types import EdgeKind, utcnow

__all__ = ["ADAPTER_KINDS", "CLIENT_COUNTERS", "FacadeStats", "store_figures"]

log = logging.getLogger("memtrellis")

#: Counters of registered SDK clients, as named in
#: [`memtrellis.types.Health`][memtrellis.types.Health].
CLIENT_COUNTERS = (
    "client_calls",
    "client_captures",
    "client_recall_failures",
    "client_capture_failures",
)

#: What an adapter's failure broke, as ``Memory.report_failure`` takes it; each has its
#: ``adapter_<kind>_failures`` figure. Anything else is counted as ``"other"``.
ADAPTER_KINDS = ("recall", "capture", "context")
#: Distinct ``source.kind`` keys kept in ``adapter_failures``; later sources count as ``other``.
_MAX_ADAPTER_KEYS = 256
_MAX_SOURCE_CHARS = 64


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
    #: Fail-open failures adapters reported, by ``source.kind``.
    adapters: dict[str, int] = field(default_factory=dict)

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

    def count(self, counter: object) -> None:
        """Add one to a client counter (one of `CLIENT_COUNTERS`); others are ignored.

        Never raises: it runs on the user's call path. A name it does not know is logged.
        """
        if not isinstance(counter, str) or counter not in self.clients:
            log.warning("memtrellis: unknown client counter %r not counted", counter)
            return
        with self.lock:
            self.clients[counter] += 1

    def count_adapter_failure(self, what: object, source: object) -> None:
        """Add one adapter failure of kind ``what`` from ``source``; odd values are tolerated.

        A kind not in `ADAPTER_KINDS` counts as ``"other"``; a source that is not a
        non-empty str counts as ``"unknown"`` (cut to 64 characters).
        """
        kind = what if isinstance(what, str) and what in ADAPTER_KINDS else "other"
        if kind == "other":
            log.warning("memtrellis: adapter failure of unknown kind %r counted as other", what)
        name = source.strip()[:_MAX_SOURCE_CHARS] if isinstance(source, str) else ""
        key = f"{name or 'unknown'}.{kind}"
        with self.lock:
            if key not in self.adapters and len(self.adapters) >= _MAX_ADAPTER_KEYS:
                key = f"other.{kind}"
            self.adapters[key] = self.adapters.get(key, 0) + 1

    def _adapter_figures(self) -> dict[str, Any]:
        """``adapter_<kind>_failures`` totals and the ``adapter_failures`` breakdown (locked)."""
        totals = dict.fromkeys(ADAPTER_KINDS, 0)
        for key, count in self.adapters.items():
            kind = key.rpartition(".")[2]
            if kind in totals:
                totals[kind] += count
        return {
            **{f"adapter_{kind}_failures": count for kind, count in totals.items()},
            "adapter_failures": dict(sorted(self.adapters.items())),
        }

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
                **self._adapter_figures(),
            }


def store_figures(store: Store) -> dict[str, Any]:
    """Counts over the whole store from the catalog (and the resident shards): memories by
    state, entities, edges, disk. No shard is loaded for them."""
    now = utcnow().timestamp()
    stats = store.stats()
    edges: dict[str, int] = {kind.value: 0 for kind in EdgeKind}
    for entity in stats.values():
        for kind, count in entity.edges.items():
            edges[kind] = edges.get(kind, 0) + count
    figures: dict[str, Any] = {
        "total_memories": sum(s.memories for s in stats.values()),
        "expired": sum(s.expired(now) for s in stats.values()),
        "superseded": sum(s.superseded for s in stats.values()),
        "merged_duplicates": sum(s.merged_duplicates for s in stats.values()),
        "active_memories": sum(s.active(now) for s in stats.values()),
        "entities": sum(s.entity_nodes for s in stats.values()),
        "edges_by_kind": edges,
        "tenants": sum(1 for s in stats.values() if s.memories),
        "pending_index_writes": store.pending_count,
        "repaired_on_open": len(store.repair.rolled_forward) + store.repair.torn_records,
        "vector_backend": store.vectors.mode,
        "resident_shards": len(store.resident()),
    }
    figures["size_on_disk_bytes"] = store.disk_usage()
    return figures
