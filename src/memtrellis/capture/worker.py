"""The capture worker: one background thread that extracts and stores captured turns.

``submit`` only puts an entry on a queue. The worker takes what is queued at once (up to
``max_batch`` entries) and hands it to ``handle_batch``, which extracts each entry, embeds
them in one call and stores them with one commit per entity; a lone entry goes to
``handle``. An entry that fails in a batch is retried alone, so one bad turn never sinks
the others. The worker retries a failed entry with exponential backoff. When its
extraction still fails after the last try (the LLM timed out, raised or answered garbage)
the ``fallback`` stores the turn without the LLM; an entry that fails otherwise (the
store) stays in the spool, not marked done, and is retried when the store is next opened,
as is one whose retries a crash or ``close`` cut short. So a captured turn is never lost.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memtrellis.capture.spool import Spool
from memtrellis.extraction.failures import ExtractionFailure

__all__ = ["MAX_BATCH", "BatchHandler", "CaptureStats", "CaptureWorker"]

log = logging.getLogger("memtrellis.capture")

#: Entries the worker takes from the queue at once.
MAX_BATCH = 256

#: Stores several entries; returns the error of each entry that was not stored, by id.
BatchHandler = Callable[[Sequence[dict[str, Any]]], dict[str, Exception]]


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
    """Stores submitted entries on a daemon thread, in batches when ``handle_batch`` is given.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> stored = []
        >>> def store_many(entries):  # stores all but "bad"
        ...     stored.extend(e["id"] for e in entries if e["id"] != "bad")
        ...     return {"bad": ValueError("no")} if any(e["id"] == "bad" for e in entries) else {}
        >>> spool = Spool(Path(tempfile.mkdtemp()))
        >>> def store_one(entry):  # a lone entry, or one tried again alone
        ...     stored.append(entry["id"])
        >>> worker = CaptureWorker(store_one, spool, handle_batch=store_many)
        >>> for entry in ({"id": "a"}, {"id": "bad"}, {"id": "b"}):
        ...     spool.append(entry)
        ...     worker.submit(entry)
        >>> worker.flush(10)
        True
        >>> sorted(stored)  # however the queue was cut into batches, each stored once
        ['a', 'b', 'bad']
        >>> worker.close(); spool.close()
        True
    """

    def __init__(
        self,
        handle: Callable[[dict[str, Any]], None],
        spool: Spool,
        *,
        attempts: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        fallback: Callable[[dict[str, Any]], None] | None = None,
        handle_batch: BatchHandler | None = None,
        max_batch: int = MAX_BATCH,
    ) -> None:
        self._handle = handle
        self._handle_batch = handle_batch
        self._max_batch = max(1, max_batch)
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

    def _take(self) -> tuple[list[dict[str, Any]], bool]:
        """The next entries (waiting for the first), and whether the worker must stop."""
        first = self._queue.get()
        if first is None:
            return [], True
        batch = [first]
        while len(batch) < self._max_batch:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                break
            if entry is None:
                return batch, True
            batch.append(entry)
        return batch, False

    def _run(self) -> None:
        while True:
            batch, stop = self._take()
            try:
                live = [e for e in batch if not self.cancelled(str(e["id"]))]
                if len(live) > 1 and self._handle_batch is not None:
                    self._process_batch(live)
                elif live:
                    self._process(live[0])
            finally:
                with self._idle:
                    for entry in batch:
                        self._cancelled.discard(str(entry["id"]))
                    self._unfinished -= len(batch)
                    self._idle.notify_all()
            if stop:
                return

    def _process_batch(self, entries: list[dict[str, Any]]) -> None:
        assert self._handle_batch is not None
        try:
            failed = self._handle_batch(entries)
        except Exception as exc:  # the batch as a whole: every entry gets its own tries
            failed = {str(e["id"]): exc for e in entries}
        self._stored_many([e for e in entries if str(e["id"]) not in failed])
        for entry in entries:
            error = failed.get(str(entry["id"]))
            if error is not None:
                self._process(entry, error)

    def _process(self, entry: dict[str, Any], error: Exception | None = None) -> None:
        """Store one entry, with retries; ``error``: how its first try (in a batch) failed."""
        attempt = 0
        while True:
            if error is None:
                try:
                    self._handle(entry)
                except Exception as exc:
                    error = exc
                else:
                    self._stored(entry)
                    return
            if self.cancelled(str(entry["id"])):
                return  # purged meanwhile: nothing left to retry
            last = attempt + 1 == self._attempts
            if last and isinstance(error, ExtractionFailure) and self._fallback is not None:
                self._fall_back(entry, error)
                return
            if last or self._stop.is_set():
                self._keep(entry, error)
                return
            self.stats.retries += 1
            if isinstance(error, ExtractionFailure):
                self.stats.extraction_retries += 1
            log.warning("captured turn %s: %s; trying again", entry.get("id"), error)
            self._stop.wait(min(self._backoff * 2**attempt, self._max_backoff))
            attempt += 1
            error = None

    def _stored_many(self, entries: list[dict[str, Any]]) -> None:
        done = [str(e["id"]) for e in entries if not self.cancelled(str(e["id"]))]
        self.stats.stored += len(done)
        self._spool.done_many(done)

    def _stored(self, entry: dict[str, Any]) -> None:
        if self.cancelled(str(entry["id"])):
            return  # purged while in progress: forget took it out of the spool already
        self.stats.stored += 1
        self._spool.done(str(entry["id"]))

    def _keep(self, entry: dict[str, Any], error: BaseException) -> None:
        self.stats.failures += 1
        log.error(
            "captured turn %s could not be stored; kept in the spool for the next open",
            entry.get("id"),
            exc_info=error,
        )

    def _fall_back(self, entry: dict[str, Any], exc: ExtractionFailure) -> None:
        assert self._fallback is not None
        log.warning("captured turn %s: %s; stored without the LLM", entry.get("id"), exc)
        try:
            self._fallback(entry)
        except Exception as error:
            self._keep(entry, error)
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
