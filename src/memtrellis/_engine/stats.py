"""Figures for ``Memory.health()``: what the store holds and how the facade has been doing."""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from memtrellis.store import Store
from memtrellis.types import EdgeKind, utcnow

__all__ = ["ADAPTER_EVENTS", "ADAPTER_KINDS", "CLIENT_COUNTERS", "FacadeStats", "store_figures"]

log = logging.getLogger("memtrellis")

#: Counters of registered SDK clients, as named in
#: [`memtrellis.types.Health`][memtrellis.types.Health]: read from the one adapter family
#: (source ``"client"``), kept under these names for compatibility.
CLIENT_COUNTERS = (
    "client_calls",
    "client_captures",
    "client_recall_failures",
    "client_capture_failures",
)
#: What each client counter sums, as ``source.kind`` keys of the adapter counters.
_CLIENT_KEYS = {
    "client_calls": ("client.call",),
    "client_captures": ("client.capture",),
    "client_recall_failures": ("client.recall", "client.context"),
    "client_capture_failures": ("client.capture",),
}
#: What adapters count besides failures (``Memory.count_adapter``).
ADAPTER_EVENTS = ("call", "capture")

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
    #: Fail-open failures adapters reported, by ``source.kind``.
    adapters: dict[str, int] = field(default_factory=dict)
    #: Calls and captures adapters made, by ``source.event`` (SDK clients are ``client``).
    events: dict[str, int] = field(default_factory=dict)

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
        """Add one to a client counter (one of `CLIENT_COUNTERS`), in the adapter family.

        Never raises: it runs on the user's call path. A name it does not know is logged.
        """
        if not isinstance(counter, str) or counter not in _CLIENT_KEYS:
            log.warning("memtrellis: unknown client counter %r not counted", counter)
            return
        key = _CLIENT_KEYS[counter][0]
        if counter.endswith("_failures"):
            self.count_adapter_failure(key.rpartition(".")[2], "client")
        else:
            self.count_adapter_event(key.rpartition(".")[2], "client")

    def count_adapter_event(self, event: object, source: object) -> None:
        """Add one ``event`` (a call or a capture) of ``source``; odd values are tolerated."""
        kind = event if isinstance(event, str) and event in ADAPTER_EVENTS else "other"
        name = source.strip()[:_MAX_SOURCE_CHARS] if isinstance(source, str) else ""
        key = f"{name or 'unknown'}.{kind}"
        with self.lock:
            if key not in self.events and len(self.events) >= _MAX_ADAPTER_KEYS:
                key = f"other.{kind}"
            self.events[key] = self.events.get(key, 0) + 1

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
        clients = {
            name: sum(
                (self.adapters if name.endswith("_failures") else self.events).get(key, 0)
                for key in keys
            )
            for name, keys in _CLIENT_KEYS.items()
        }
        return {
            **{f"adapter_{kind}_failures": count for kind, count in totals.items()},
            "adapter_failures": dict(sorted(self.adapters.items())),
            "adapter_counts": dict(sorted(self.events.items())),
            **clients,
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
        "subjects": sum(s.subject_nodes for s in stats.values()),
        "edges_by_kind": edges,
        "entities_with_memories": sum(1 for s in stats.values() if s.memories),
        "pending_index_writes": store.pending_count,
        "recovered_on_open": len(store.recovery.rolled_forward) + store.recovery.torn_records,
        "vector_backend": store.vectors.mode,
        "resident_shards": len(store.resident()),
    }
    figures["size_on_disk_bytes"] = store.disk_usage()
    return figures
