"""The capture spool: captured turns on disk until they are stored.

Each process appends to its own file (``spool/<owner>.jsonl``) and holds that file's lock
for as long as it lives. A spool whose lock can be taken belongs to a process that died:
the next process to open the store adopts its unfinished entries, so a turn captured
before a crash is extracted after it. Appends are single ``write`` calls without fsync:
the page cache survives a killed process, and capture must stay well under a millisecond.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

__all__ = ["Spool"]

log = logging.getLogger("memtrellis.capture")

#: Rewrite the file once everything in it is done and it has grown past this size.
_COMPACT_BYTES = 1 << 20


def _read(path: Path) -> list[dict[str, Any]]:
    """Entries not marked done, in order; a torn or garbled line is skipped and logged."""
    pending: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            log.warning("capture spool %s: unreadable line %d skipped", path, number)
            continue
        if "done" in record:
            pending.pop(str(record["done"]), None)
        elif "id" in record:
            pending[str(record["id"])] = record
    return list(pending.values())


def _rewrite(path: Path, entries: Iterable[dict[str, Any]]) -> None:
    """Replace a spool file by one holding just ``entries`` (write, fsync, rename)."""
    temporary = path.with_name(path.name + ".purge")
    with temporary.open("wb") as file:
        for entry in entries:
            file.write((json.dumps(entry, separators=(",", ":")) + "\n").encode())
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


class Spool:
    """This process's spool file, plus adoption of dead processes' spools."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.path = directory / f"{uuid.uuid4().hex[:16]}.jsonl"
        self._lock = FileLock(str(self.path) + ".lock", thread_local=False)
        self._lock.acquire(timeout=0)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._mu = threading.Lock()
        # id -> entry, so that a purge can rewrite the file with the entries it keeps
        self._open: dict[str, dict[str, Any]] = {}
        self._closed = False

    @property
    def open_entries(self) -> int:
        """Entries appended and not yet done."""
        return len(self._open)

    def _write(self, record: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(record, separators=(",", ":")) + "\n").encode())

    def append(self, entry: dict[str, Any]) -> None:
        """Record a captured entry (it must carry an ``id``)."""
        with self._mu:
            self._write(entry)
            self._open[str(entry["id"])] = entry

    def done(self, entry_id: str) -> None:
        """Mark an entry stored; compacts the file when nothing is left open."""
        self.done_many([entry_id])

    def done_many(self, entry_ids: Sequence[str]) -> None:
        """Mark entries stored with one write; compacts the file when nothing is left open."""
        if not entry_ids:
            return
        with self._mu:
            if self._closed:
                return
            lines = "".join(
                json.dumps({"done": i}, separators=(",", ":")) + "\n" for i in entry_ids
            )
            os.write(self._fd, lines.encode())
            for entry_id in entry_ids:
                self._open.pop(entry_id, None)
            if not self._open and os.fstat(self._fd).st_size > _COMPACT_BYTES:
                os.ftruncate(self._fd, 0)

    def purge(self, matches: Callable[[dict[str, Any]], bool]) -> list[str]:
        """Remove the open entries ``matches`` selects, from memory and from disk.

        Marking them done would leave their text in the file, so the file is rewritten
        with the entries kept (atomically: a crash leaves the old file or the new one).
        Spools of dead processes, adopted only by the next open, are rewritten the same
        way; a live process's spool is its own to purge. Returns the ids removed here.
        """
        with self._mu:
            if self._closed:
                return []
            removed = [i for i, entry in self._open.items() if matches(entry)]
            for entry_id in removed:
                del self._open[entry_id]
            if removed:
                _rewrite(self.path, self._open.values())
                os.close(self._fd)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        orphaned = self._purge_orphans(matches)
        if orphaned:
            log.info("purged %d captured turn(s) from spools of dead processes", orphaned)
        return removed

    def _orphans(self) -> Iterator[Path]:
        """The spool files of dead processes, each locked while the caller has it."""
        for other in sorted(self.directory.glob("*.jsonl")):
            if other == self.path:
                continue
            lock = FileLock(str(other) + ".lock", thread_local=False)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue  # its owner is alive
            try:
                yield other
            finally:
                lock.release()
                if not other.exists():  # taken over: its lock file goes too
                    Path(str(other) + ".lock").unlink(missing_ok=True)

    def _purge_orphans(self, matches: Callable[[dict[str, Any]], bool]) -> int:
        purged = 0
        for other in self._orphans():
            entries = _read(other)
            kept = [entry for entry in entries if not matches(entry)]
            if len(kept) < len(entries):
                _rewrite(other, kept)
                purged += len(entries) - len(kept)
        return purged

    def adopt_orphans(self) -> list[dict[str, Any]]:
        """Take over the unfinished entries of spools whose owner died."""
        adopted: list[dict[str, Any]] = []
        for other in self._orphans():
            entries = _read(other)
            for entry in entries:
                self.append(entry)  # ours now: durable before the orphan goes
            adopted.extend(entries)
            other.unlink(missing_ok=True)
        if adopted:
            log.warning("adopted %d captured turn(s) left by a process that died", len(adopted))
        return adopted

    def close(self) -> None:
        """Close the file; remove it when everything in it was stored."""
        with self._mu:
            if self._closed:
                return
            self._closed = True
            os.close(self._fd)
            if not self._open:
                self.path.unlink(missing_ok=True)
            self._lock.release()
            if not self._open:
                Path(str(self.path) + ".lock").unlink(missing_ok=True)
