"""The capture spool: captured turns on disk until they are stored.

Each process appends to its own file (``spool/<owner>.jsonl``) and holds that file's lock
for as long as it lives. A spool whose lock can be taken belongs to a process that died:
the next process to open the store adopts its unfinished entries, so a turn captured
before a crash is extracted after it. Appends are single ``write`` calls without fsync:
the page cache survives a killed process, and capture must stay well under a millisecond.

Each time the worker starts on an entry it appends ``{"tried": id}``; the count travels
with the entry when another process adopts it. An adopted entry already tried
``quarantine_after`` times (it failed, or hung or crashed the process, on every open) is
not replayed again: it moves to ``spool/quarantine/<id>.json`` (the entry, its tries and
why), is logged as an error and counted (``Health.capture_quarantined``), so one bad turn
cannot stall the worker on every open. ``Memory.forget(entity_id=...)`` removes an
entity's quarantined turns too.
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
#: Where entries tried too often go, under the spool directory.
QUARANTINE = "quarantine"


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def _scan(path: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Entries not marked done, in order, and how often each was tried; a torn or
    garbled line is skipped and logged."""
    pending: dict[str, dict[str, Any]] = {}
    tries: dict[str, int] = {}
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:
        return [], {}
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            if "done" in record:
                pending.pop(str(record["done"]), None)
                tries.pop(str(record["done"]), None)
            elif "tried" in record:
                key = str(record["tried"])
                tries[key] = tries.get(key, 0) + int(record.get("n", 1))
            elif "id" in record:
                pending[str(record["id"])] = record
        except (ValueError, TypeError, AttributeError):
            log.warning("capture spool %s: unreadable line %d skipped", path, number)
    return list(pending.values()), {k: n for k, n in tries.items() if k in pending}


def _read(path: Path) -> list[dict[str, Any]]:
    """Entries not marked done, in order."""
    return _scan(path)[0]


def _rewrite(
    path: Path, entries: Iterable[dict[str, Any]], tries: dict[str, int] | None = None
) -> None:
    """Replace a spool file by one holding just ``entries`` and their tries (write, fsync,
    rename)."""
    temporary = path.with_name(path.name + ".purge")
    with temporary.open("wb") as file:
        for entry in entries:
            file.write(_line(entry))
            count = (tries or {}).get(str(entry["id"]), 0)
            if count:
                file.write(_line({"tried": str(entry["id"]), "n": count}))
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)


def _quarantined_entry(path: Path) -> dict[str, Any] | None:
    try:
        entry = json.loads(path.read_bytes()).get("entry")
    except (OSError, ValueError, AttributeError):
        return None
    return entry if isinstance(entry, dict) else None


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
        self._tries: dict[str, int] = {}
        self._closed = False
        self.quarantine = directory / QUARANTINE
        #: Entries in quarantine (moved aside after too many tries), on disk.
        self.quarantined = len(list(self.quarantine.glob("*.json")))

    @property
    def open_entries(self) -> int:
        """Entries appended and not yet done."""
        return len(self._open)

    def _write(self, record: dict[str, Any]) -> None:
        os.write(self._fd, _line(record))

    def is_open(self, entry_id: str) -> bool:
        """Whether the entry was appended and is not done yet."""
        with self._mu:
            return entry_id in self._open

    def tries(self, entry_id: str) -> int:
        """How often the entry was started on, in this process and in those before."""
        with self._mu:
            return self._tries.get(entry_id, 0)

    def tried(self, entry_ids: Sequence[str]) -> None:
        """Record, with one write, that the worker starts on these entries (again)."""
        with self._mu:
            if self._closed or not entry_ids:
                return
            os.write(self._fd, b"".join(_line({"tried": i}) for i in entry_ids))
            for entry_id in entry_ids:
                self._tries[entry_id] = self._tries.get(entry_id, 0) + 1

    def append(self, entry: dict[str, Any]) -> None:
        """Record a captured entry (it must carry an ``id``)."""
        with self._mu:
            self._write(entry)
            self._open[str(entry["id"])] = entry

    def pending(self) -> list[dict[str, Any]]:
        """The open entries (appended, not done), in the order they were appended."""
        with self._mu:
            return list(self._open.values())

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
                self._tries.pop(entry_id, None)
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
                self._tries.pop(entry_id, None)
            if removed:
                _rewrite(self.path, self._open.values(), self._tries)
                os.close(self._fd)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        orphaned = self._purge_orphans(matches)
        if orphaned:
            log.info("purged %d captured turn(s) from spools of dead processes", orphaned)
        self._purge_quarantine(matches)
        return removed

    def _purge_quarantine(self, matches: Callable[[dict[str, Any]], bool]) -> None:
        for path in sorted(self.quarantine.glob("*.json")):
            entry = _quarantined_entry(path)
            if entry is not None and matches(entry):
                path.unlink(missing_ok=True)
                with self._mu:
                    self.quarantined = max(0, self.quarantined - 1)

    def _set_aside(self, entry: dict[str, Any], tries: int) -> None:
        """Move an entry tried too often into quarantine (durable before it leaves)."""
        self.quarantine.mkdir(exist_ok=True)
        target = self.quarantine / f"{entry['id']}.json"
        record = {
            "entry": entry,
            "tries": tries,
            "reason": f"started on {tries} times without being stored",
        }
        temporary = target.with_name(target.name + ".tmp")
        with temporary.open("wb") as file:
            file.write(_line(record))
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(target)
        with self._mu:
            self.quarantined += 1
        log.error(
            "captured turn %s was started on %d times and never stored; moved to %s and "
            "not tried again",
            entry["id"],
            tries,
            target,
        )

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
            entries, tries = _scan(other)
            kept = [entry for entry in entries if not matches(entry)]
            if len(kept) < len(entries):
                _rewrite(other, kept, tries)
                purged += len(entries) - len(kept)
        return purged

    def adopt_orphans(self, quarantine_after: int | None = None) -> list[dict[str, Any]]:
        """Take over the unfinished entries of spools whose owner died.

        An entry already started on ``quarantine_after`` times goes to quarantine instead.
        """
        adopted: list[dict[str, Any]] = []
        for other in self._orphans():
            entries, tries = _scan(other)
            for entry in entries:
                count = tries.get(str(entry["id"]), 0)
                if quarantine_after is not None and count >= quarantine_after:
                    self._set_aside(entry, count)
                    continue
                self.append(entry)  # ours now: durable before the orphan goes
                if count:
                    with self._mu:
                        self._write({"tried": str(entry["id"]), "n": count})
                        self._tries[str(entry["id"])] = count
                adopted.append(entry)
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
