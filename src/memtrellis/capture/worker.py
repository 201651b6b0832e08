"""The capture worker: one background thread that extracts and stores captured turns.

``submit`` only puts an entry on a queue. The worker retries a failed entry with
exponential backoff. When its extraction still fails after the last try (the LLM timed
out, raised or answered garbage) the ``fallback`` stores the turn without the LLM; an
entry that fails otherwise (the store) stays in the spool, not marked done, and is retried
when the store is next opened, as is one whose retries a crash or ``close`` cut short. So
a captured turn is never lost.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memtrellis.capture.spool import Spool
from memtrellis.extraction.failures import ExtractionFailure

__all__ = ["CaptureStats", "CaptureWorker"]

log = logging.getLogger("memtrellis.capture")


@dataclass
class CaptureStats:
    """Counters reported by ``Memory.health()``."""

    captured: int = 0
    stored: int = 0
    retries: int = 0
    failures: int = 0
    #: Retries because the extraction failed (a subset of ``retries``).
    extraction_retries: int = 0
    #: Turns stored by the fallback after their extraction's last try failed.
    fallbacks: int = 0


class CaptureWorker:
    """Runs ``handle(entry)`` for each submitted entry on a daemon thread."""

    def __init__(
        self,
        handle: Callable[[dict[str, Any]], None],
        spool: Spool,
        *,
        attempts: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        fallback: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._handle = handle
        self._fallback = fallback
        self._spool = spool
        self._attempts = max(1, attempts)
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._idle = threading.Condition()
        self._unfinished = 0
        self._stop = threading.Event()
        # ids of entries purged while queued or in progress: they must not be stored
        self._cancelled: set[str] = set()
        self.stats = CaptureStats()
        self._thread = threading.Thread(target=self._run, name="memtrellis-capture", daemon=True)
        self._thread.start()

    @property
    def depth(self) -> int:
        """Entries submitted and not yet finished (stored or given up on)."""
        return self._unfinished

    def submit(self, entry: dict[str, Any]) -> None:
        """Queue an entry that is already in the spool. Returns at once."""
        with self._idle:
            self._unfinished += 1
            self.stats.captured += 1
        self._queue.put(entry)

    def cancel(self, entry_ids: list[str]) -> None:
        """Never store these entries: skip them when queued, drop them when in progress.

        An entry being extracted right now is not interrupted; its handler asks
        `cancelled` before it stores anything.
        """
        with self._idle:
            self._cancelled.update(entry_ids)

    def cancelled(self, entry_id: str) -> bool:
        """Whether the entry was purged after it was submitted."""
        with self._idle:
            return entry_id in self._cancelled

    def _run(self) -> None:
        while True:
            entry = self._queue.get()
            if entry is None:
                return
            try:
                if not self.cancelled(str(entry["id"])):
                    self._process(entry)
            finally:
                with self._idle:
                    self._cancelled.discard(str(entry["id"]))
                    self._unfinished -= 1
                    self._idle.notify_all()

    def _process(self, entry: dict[str, Any]) -> None:
        for attempt in range(self._attempts):
            try:
                self._handle(entry)
            except Exception as exc:
                if self.cancelled(str(entry["id"])):
                    return  # purged meanwhile: nothing left to retry
                last = attempt + 1 == self._attempts
                if last and isinstance(exc, ExtractionFailure) and self._fallback is not None:
                    self._fall_back(entry, exc)
                    return
                if last or self._stop.is_set():
                    self._keep(entry)
                    return
                self.stats.retries += 1
                if isinstance(exc, ExtractionFailure):
                    self.stats.extraction_retries += 1
                log.warning("captured turn %s: %s; trying again", entry.get("id"), exc)
                self._stop.wait(min(self._backoff * 2**attempt, self._max_backoff))
            else:
                self._stored(entry)
                return

    def _stored(self, entry: dict[str, Any]) -> None:
        if self.cancelled(str(entry["id"])):
            return  # purged while in progress: forget took it out of the spool already
        self.stats.stored += 1
        self._spool.done(str(entry["id"]))

    def _keep(self, entry: dict[str, Any]) -> None:
        self.stats.failures += 1
        log.exception(
            "captured turn %s could not be stored; kept in the spool for the next open",
            entry.get("id"),
        )

    def _fall_back(self, entry: dict[str, Any], exc: ExtractionFailure) -> None:
        assert self._fallback is not None
        log.warning("captured turn %s: %s; stored without the LLM", entry.get("id"), exc)
        try:
            self._fallback(entry)
        except Exception:
            self._keep(entry)
            return
        self.stats.fallbacks += 1
        self._stored(entry)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted entry is finished; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._unfinished == 0, timeout=timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Drain the queue, then stop the thread. Returns whether the queue drained."""
        drained = self.flush(timeout)
        self._stop.set()
        self._queue.put(None)
        self._thread.join(timeout=5 if not drained else None)
        return drained
