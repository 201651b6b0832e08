"""Two lifecycle figures of ``Memory.health()`` and their warnings.

* **Conflict-resolution rate**: of the conflicts the lifecycle found (``contradicts``
  edges), the share it resolved, a ``supersedes`` edge saying which memory holds now
  (from the catalog's edge counts: no shard is loaded). Unresolved conflicts leave two
  memories current that cannot both be; a low rate says the rules (or the relation
  judge) could not tell which is newer.
* **Utilisation**: of the active memories of the entities loaded in this process (the
  ones being served; at most ``max_resident_memories``), the share recalled at least
  once within the window (``LifecycleConfig.health_window_days``). Memories nobody
  recalls cost storage and extraction for nothing; a low share says recall does not
  reach them (or extraction keeps what is never asked for).

Each figure is ``None`` until there is something to measure. Below its threshold (with
enough behind it to mean something, ``health_min_count``) it is named in
``Health.warnings`` and logged as a warning once, until it recovers.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Any

from memtrellis.lifecycle import LifecycleConfig
from memtrellis.store import Store
from memtrellis.types import EdgeKind

__all__ = ["UsageWatch", "health_usage", "usage_figures"]

log = logging.getLogger("memtrellis")


def usage_figures(
    store: Store, edges: dict[str, int], config: LifecycleConfig, now: datetime
) -> tuple[dict[str, float | None], dict[str, int]]:
    """The two figures, and how many conflicts and memories each rests on."""
    conflicts = edges.get(EdgeKind.CONTRADICTS.value, 0)
    resolved = edges.get(EdgeKind.SUPERSEDES.value, 0)
    rate = min(1.0, resolved / conflicts) if conflicts else None
    since = now - timedelta(days=config.health_window_days)
    active = recalled = 0
    for entity_id in store.resident():
        with store.reading(entity_id) as shard:
            for item in shard.graph.items(entity_id):
                if item.invalid_reason(now) is not None:
                    continue
                active += 1
                if item.last_recalled_at is not None and item.last_recalled_at >= since:
                    recalled += 1
    share = recalled / active if active else None
    figures = {
        "conflict_resolution_rate": round(rate, 4) if rate is not None else None,
        "utilisation": round(share, 4) if share is not None else None,
    }
    return figures, {"conflict_resolution_rate": conflicts, "utilisation": active}


class UsageWatch:
    """Warns once when a figure falls below its threshold, again after it recovered."""

    def __init__(self) -> None:
        self._low: set[str] = set()
        self._lock = threading.Lock()

    def check(
        self, figures: dict[str, float | None], counts: dict[str, int], config: LifecycleConfig
    ) -> list[str]:
        """The figures below their thresholds now (logged when newly so)."""
        limits = {
            "conflict_resolution_rate": config.warn_conflict_resolution_below,
            "utilisation": config.warn_utilisation_below,
        }
        low: list[str] = []
        for name, limit in limits.items():
            value = figures.get(name)
            if (
                limit is not None
                and value is not None
                and counts[name] >= config.health_min_count
                and value < limit
            ):
                low.append(name)
        with self._lock:
            for name in low:
                if name not in self._low:
                    log.warning(
                        "memtrellis health: %s is %.3f, below %.3f (over %d %s)",
                        name,
                        figures[name],
                        limits[name],
                        counts[name],
                        "conflicts" if name == "conflict_resolution_rate" else "active memories",
                    )
            self._low = set(low)
        return low


def health_usage(
    store: Store, edges: dict[str, int], config: LifecycleConfig, watch: UsageWatch, now: datetime
) -> dict[str, Any]:
    """The fields ``Health`` gets from this module."""
    figures, counts = usage_figures(store, edges, config, now)
    return {**figures, "warnings": watch.check(figures, counts, config)}
