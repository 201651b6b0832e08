"""The capture service a ``Memory`` owns: spool + lazily started worker + adoption."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtrellis.capture.spool import Spool
from memtrellis.capture.worker import MAX_BATCH, BatchHandler, CaptureStats, CaptureWorker

__all__ = ["CaptureService"]


class CaptureService:
    """Spools captured entries and feeds them to a background worker.

    On creation it adopts what dead processes left in the spool directory, so turns
    captured before a crash are extracted now; one started on ``quarantine_after`` times
    already goes to quarantine instead (see `memtrellis.capture.spool`).
    """

    def __init__(
        self,
        directory: Path,
        handle: Callable[[dict[str, Any]], None],
        *,
        attempts: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        fallback: Callable[[dict[str, Any]], None] | None = None,
        handle_batch: BatchHandler | None = None,
        max_batch: int = MAX_BATCH,
        turn_budget: float | None = None,
        quarantine_after: int | None = None,
    ) -> None:
        self.spool = Spool(directory)
        self._turn_budget = turn_budget
        self._handle = handle
        self._handle_batch = handle_batch
        self._max_batch = max_batch
        self._attempts = attempts
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._fallback = fallback
        self._worker: CaptureWorker | None = None
        self._mu = threading.Lock()
        self.adopted = self.spool.adopt_orphans(quarantine_after)
        for entry in self.adopted:
            self._ensure_worker().submit(entry)

    def _ensure_worker(self) -> CaptureWorker:
        with self._mu:
            if self._worker is None:
                self._worker = CaptureWorker(
                    self._handle,
                    self.spool,
                    attempts=self._attempts,
                    backoff=self._backoff,
                    max_backoff=self._max_backoff,
                    fallback=self._fallback,
                    handle_batch=self._handle_batch,
                    max_batch=self._max_batch,
                    turn_budget=self._turn_budget,
                )
            return self._worker

    def submit(self, entry: dict[str, Any]) -> None:
        """Spool the entry, then queue it. Returns at once."""
        self.spool.append(entry)
        self._ensure_worker().submit(entry)

    def purge(self, entity_id: str) -> int:
        """Forget the turns of ``entity_id`` that are spooled and not stored yet.

        They are removed from the spool file and never stored, including one the worker
        is extracting at this moment (its handler checks `cancelled` before it
        stores). Returns how many were purged.
        """
        removed = self.spool.purge(lambda entry: entry["scope"]["entity_id"] == entity_id)
        if removed and self._worker is not None:
            self._worker.cancel(removed)
        return len(removed)

    def pending(self) -> list[dict[str, Any]]:
        """The entries spooled by this process and not stored yet, in capture order (the
        spool's own dicts: read them, never change them)."""
        return self.spool.pending()

    def cancelled(self, entry_id: str) -> bool:
        """Whether a submitted entry was purged and must not be stored."""
        return self._worker is not None and self._worker.cancelled(entry_id)

    @property
    def stats(self) -> CaptureStats:
        """Counters of the worker (zeros before the first capture)."""
        return self._worker.stats if self._worker else CaptureStats()

    @property
    def depth(self) -> int:
        """Entries queued or being processed."""
        return self._worker.depth if self._worker else 0

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything captured so far is stored; False on timeout."""
        return self._worker.flush(timeout) if self._worker else True

    def close(self, timeout: float | None = None) -> bool:
        """Drain (up to ``timeout``), stop the worker and close the spool."""
        drained = self._worker.close(timeout) if self._worker else True
        self.spool.close()
        return drained
