"""The write-ahead log: one JSON object per line, appended and fsync'd before the index moves.

A change is durable once its record is in the log. The vector index is written after, and
an ``ok`` record follows; a change record without its ``ok`` is a write that was cut off,
which the next process to hold the store lock rolls forward. Every process appends to the
same file under the store lock and reads what the others appended since its last look,
which keeps several processes on one store in step.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtrellis.errors import StoreCorruptError

__all__ = ["WalReader", "append_records", "wal_path"]


def wal_path(directory: Path, generation: int) -> Path:
    """The log file that follows graph snapshot ``generation``."""
    return directory / f"wal-{generation:06d}.jsonl"


def append_records(path: Path, records: list[dict[str, Any]], *, durable: bool = True) -> int:
    """Append records as JSON lines; returns the new file size.

    One ``write`` call carries all lines so a crash leaves at most one torn last line.
    """
    payload = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, payload)
        if durable:
            os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


@dataclass
class WalReader:
    """Reads one log file incrementally, whole lines only."""

    path: Path
    offset: int = 0
    torn_tail: bool = field(default=False, init=False)

    def size(self) -> int:
        """Current size of the file on disk (0 when absent)."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def read_new(self) -> list[dict[str, Any]]:
        """Records appended since the last call. A torn last line is left for later."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        end = chunk.rfind(b"\n")
        self.torn_tail = end != len(chunk) - 1 and bool(chunk)
        if end < 0:
            return []
        records: list[dict[str, Any]] = []
        line_start = self.offset
        for line in chunk[: end + 1].splitlines():
            if line.strip():
                try:
                    record = json.loads(line)
                    if not isinstance(record, dict) or "op" not in record:
                        raise ValueError("not a log record")
                except ValueError as exc:
                    raise StoreCorruptError(
                        f"the write-ahead log {self.path} has an unreadable record at byte "
                        f"{line_start}. Move the file aside to open the store without the "
                        "changes after the last snapshot, or restore it from a backup."
                    ) from exc
                records.append(record)
            line_start += len(line) + 1
        self.offset += end + 1
        return records

    def cut_torn_tail(self) -> bool:
        """Drop a partial last line left by a crash mid-append (call under the lock)."""
        size = self.size()
        if size > self.offset:
            with self.path.open("r+b") as handle:
                handle.truncate(self.offset)
                os.fsync(handle.fileno())
            self.torn_tail = False
            return True
        return False
