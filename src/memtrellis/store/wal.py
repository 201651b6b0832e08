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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memtrellis.store._corrupt import damaged
from memtrellis.store.graph import MemoryGraph
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem

__all__ = ["WalReader", "append_records", "replay_record", "wal_path"]


def wal_path(directory: Path, generation: int) -> Path:
    """The log file that follows graph snapshot ``generation``."""
    return directory / f"wal-{generation:06d}.jsonl"


def apply_touch(
    graph: MemoryGraph, ids: Sequence[str], at: datetime, until: Mapping[str, datetime]
) -> None:
    """Count a recall of ``ids`` at ``at``; ``until``: validity ends heat renews
    (`memtrellis.lifecycle.heat`), applied only to a memory still current (not
    superseded meanwhile) and only ever lengthening: a forgotten memory is not there,
    and one superseded or ended by the lifecycle stays so."""
    for memory_id in ids:
        recalled = graph.item(memory_id)
        if recalled is None:
            continue
        recalled.recall_count += 1
        recalled.last_recalled_at = at
        end = until.get(memory_id)
        if (
            end is not None
            and recalled.superseded_by is None
            and recalled.valid_until is not None
            and at < recalled.valid_until < end
        ):
            recalled.valid_until = end


def replay_record(graph: MemoryGraph, record: dict[str, Any]) -> None:
    """Apply one logged change to ``graph`` (``ok`` records change nothing).

    Raises:
        ValueError: The record is not one memtrellis writes (unknown ``op``, bad fields).
    """
    op = record["op"]
    if op == "put":
        item = MemoryItem.model_validate(record["item"])
        event = HistoryEvent.model_validate(record["event"]) if record.get("event") else None
        graph.put(item, event)
    elif op == "del":
        for memory_id in record["ids"]:
            graph.remove(memory_id)
    elif op == "drop":
        graph.remove_entity(record["entity_id"], began=record.get("began"))
    elif op == "edge":
        graph.add_edge(record["src"], record["dst"], EdgeKind(record["kind"]))
    elif op == "touch":
        until = {k: datetime.fromisoformat(v) for k, v in (record.get("until") or {}).items()}
        apply_touch(graph, record["ids"], datetime.fromisoformat(record["at"]), until)
    elif op != "ok":
        raise ValueError(f"unknown log record {op!r}")


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
    """Reads one log file incrementally, whole lines only.

    ``store``: the store directory a damaged log's repair command names (by default the
    log's own directory).
    """

    path: Path
    offset: int = 0
    store: Path | None = None
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
                    raise damaged(
                        self.path,
                        f"has an unreadable record at byte {line_start} (not a torn last "
                        "line, which is dropped by itself)",
                        self.store or self.path.parent,
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
