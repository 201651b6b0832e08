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

One bad turn never blocks the turns behind it. Each start on an entry is recorded in the
spool, and an entry started on too often without being stored goes to quarantine when
the store is next opened (see `memtrellis.capture.spool`). A turn that takes longer than
``turn_budget`` seconds (an LLM that hangs without a timeout, pathological input) is left
to finish on its thread while a fresh worker thread goes on with the queue: the entry
counts as ``overdue`` and stays in the spool, to be tried on the next open; if it was in a
batch, the batch's other turns are queued again and each handled alone, so that only the
slow one is held back.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
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
    #: Turns that took longer than the turn budget: left behind, tried on the next open.
    overdue: int = 0


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
        turn_budget: float | None = None,
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
        # The thread serving the queue is the one of the current generation; one the
        # watchdog gave up on (a turn over budget) finishes its turn and exits.
        self._generation = 0
        self._busy: tuple[int, float, list[dict[str, Any]]] | None = None
        self._alone: set[str] = set()  # ids to handle one by one (from an overdue batch)
        self._tried_here: set[str] = set()  # ids whose start this process has recorded
        self._budget = turn_budget
        self._thread = self._start(0)
        if turn_budget is not None:
            watchdog = threading.Thread(
                target=self._watch, name="memtrellis-capture-watchdog", daemon=True
            )
            watchdog.start()

    def _start(self, generation: int) -> threading.Thread:
        thread = threading.Thread(
            target=self._run, args=(generation,), name="memtrellis-capture", daemon=True
        )
        thread.start()
        return thread

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

    def _run(self, generation: int) -> None:
        while True:
            batch, stop = self._take()
            with self._idle:
                marked = {str(e["id"]) for e in batch} & self._alone
            alone = [e for e in batch if str(e["id"]) in marked]
            together = [e for e in batch if str(e["id"]) not in marked]
            units = [together] if together else []
            units.extend([e] for e in alone)
            # One unit per turn of the loop: the rest go back to the queue first, so that
            # if this one runs over budget the fresh thread finds them there.
            for rest in units[1:]:
                for entry in rest:
                    self._queue.put(entry)
            if units and not self._unit(generation, units[0]):
                return  # given up on by the watchdog: a fresh thread serves the queue
            if stop:
                if len(units) > 1:
                    self._queue.put(None)  # after the turns put back
                    continue
                return

    def _unit(self, generation: int, unit: list[dict[str, Any]]) -> bool:
        """Handle entries taken together; False if the watchdog gave up on this thread."""
        with self._idle:
            self._busy = (generation, time.monotonic(), unit)
            again = {str(e["id"]) for e in unit} & self._alone
        try:
            # A turn queued again after its batch ran over budget may have been stored
            # meanwhile by the thread that was left with the batch.
            live = [
                e
                for e in unit
                if not self.cancelled(str(e["id"]))
                and (str(e["id"]) not in again or self._spool.is_open(str(e["id"])))
            ]
            self._mark_tried([str(e["id"]) for e in live])
            if len(live) > 1 and self._handle_batch is not None:
                self._process_batch(live, generation)
            elif live:
                self._process(live[0], generation=generation)
        finally:
            with self._idle:
                current = generation == self._generation
                if current:  # else the watchdog has accounted for the unit already
                    self._busy = None
                    for entry in unit:
                        self._cancelled.discard(str(entry["id"]))
                        self._alone.discard(str(entry["id"]))
                        self._tried_here.discard(str(entry["id"]))
                    self._unfinished -= len(unit)
                    self._idle.notify_all()
        return current

    def _mark_tried(self, entry_ids: list[str]) -> None:
        """Record in the spool the first start on each entry in this process."""
        with self._idle:
            new = [i for i in entry_ids if i not in self._tried_here]
            self._tried_here.update(new)
        self._spool.tried(new)

    def _watch(self) -> None:
        """Give up on a unit that runs over the turn budget; start a fresh thread."""
        assert self._budget is not None
        while not self._stop.wait(min(1.0, max(0.01, self._budget / 4))):
            with self._idle:
                busy = self._busy
                # Each turn of a batch has its budget: a batch of n gets n times as long.
                if busy is None or time.monotonic() - busy[1] < self._budget * len(busy[2]):
                    continue
                _, _, unit = busy
                self._generation += 1
                self._busy = None
                again = unit if len(unit) > 1 else []
                self._alone.update(str(e["id"]) for e in again)
                overdue = [] if again else unit
                for entry in overdue:
                    self._alone.discard(str(entry["id"]))
                    self._cancelled.discard(str(entry["id"]))
                self._unfinished -= len(overdue)  # the others are queued again below
                self.stats.overdue += len(overdue)
                self._idle.notify_all()
                self._thread = self._start(self._generation)
            for entry in again:
                self._queue.put(entry)
            for entry in overdue:
                log.error(
                    "captured turn %s took longer than %.1f s; left to finish in the "
                    "background and kept in the spool for the next open",
                    entry.get("id"),
                    self._budget,
                )
            if again:
                log.warning(
                    "a batch of %d captured turns took longer than %.1f s; handling each alone",
                    len(again),
                    self._budget,
                )

    def _abandoned(self, generation: int | None) -> bool:
        return generation is not None and generation != self._generation

    def _process_batch(self, entries: list[dict[str, Any]], generation: int | None = None) -> None:
        assert self._handle_batch is not None
        try:
            failed = self._handle_batch(entries)
        except Exception as exc:  # the batch as a whole: every entry gets its own tries
            failed = {str(e["id"]): exc for e in entries}
        self._stored_many([e for e in entries if str(e["id"]) not in failed])
        for entry in entries:
            error = failed.get(str(entry["id"]))
            if error is not None and not self._abandoned(generation):
                self._process(entry, error, generation)

    def _process(
        self,
        entry: dict[str, Any],
        error: Exception | None = None,
        generation: int | None = None,
    ) -> None:
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
            if self._abandoned(generation):
                return  # over budget: stays in the spool for the next open
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
