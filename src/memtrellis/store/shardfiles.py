"""A shard on the local disk: one directory per entity under ``shards/``.

Layout of a shard directory::

    shard.json           the entity id and the current generation (replaced, never edited)
    graph.json           node-link snapshot of the entity's graph at that generation
    wal-<gen>.jsonl      write-ahead log of the changes since that snapshot
    shard.lock           the entity's writer lock, shared by every process

The snapshot is written first (temp file, fsync, rename) and ``shard.json`` after it, so a
crash between the two leaves a snapshot newer than the pointer, which the next writer
adopts.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock

from memtrellis.store._corrupt import damaged
from memtrellis.store._files import atomic_write_bytes, holding
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.storage import LogRead
from memtrellis.store.wal import WalReader, append_records, wal_path

__all__ = ["FileShardStorage", "shard_dir"]

SHARDS = "shards"


def shard_dir(store: Path, entity_id: str) -> Path:
    """The directory of ``entity_id``'s shard in the store at ``store``.

    Named by a hash of the entity id (ids may hold any character), under a two-letter
    fan-out directory so that no directory grows with the number of entities.

    Examples:
        >>> from pathlib import Path
        >>> shard_dir(Path("store"), "ana").parent.parent
        PosixPath('store/shards')
    """
    digest = hashlib.blake2b(entity_id.encode("utf-8", "surrogatepass"), digest_size=16)
    name = digest.hexdigest()
    return store / SHARDS / name[:2] / name


class FileShardStorage:
    """`ShardStorage` in a directory of the embedded store.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> storage = FileShardStorage(Path(tempfile.mkdtemp()), "ana")
        >>> with storage.lock(timeout=1):
        ...     position = storage.append(0, [{"op": "ok", "rid": "x"}], durable=True)
        >>> storage.read_log(0, 0).records
        [{'op': 'ok', 'rid': 'x'}]
    """

    def __init__(self, store: Path, entity_id: str) -> None:
        self.store = store
        self.entity_id = entity_id
        self.path = shard_dir(store, entity_id)
        self._lock: FileLock | None = None
        self._readers: dict[int, WalReader] = {}
        self._pointer_seen: tuple[tuple[int, int], int] | None = None

    @property
    def label(self) -> str:
        """The shard directory."""
        return str(self.path)

    @property
    def _pointer(self) -> Path:
        return self.path / "shard.json"

    @property
    def _graph(self) -> Path:
        return self.path / "graph.json"

    @contextmanager
    def lock(self, timeout: float) -> Iterator[None]:
        """Hold ``shard.lock`` (one holder across processes; not re-entrant by itself)."""
        if self._lock is None:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = FileLock(str(self.path / "shard.lock"), thread_local=False)
        with holding(self._lock, timeout, self.path):
            yield

    def exists(self) -> bool:
        """Whether the shard directory holds a pointer, a snapshot or a log."""
        return self._pointer.exists() or self._graph.exists() or any(self.path.glob("wal-*"))

    def generation(self) -> int:
        """The generation ``shard.json`` names (0 when absent)."""
        try:
            raw = self._pointer.read_bytes()
        except FileNotFoundError:
            return 0
        try:
            data = json.loads(raw)
            return int(data["generation"])
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(self._pointer, "cannot be read", self.store) from exc

    def stamp(self) -> Hashable:
        """The pointer's inode and mtime with the current log's size: two stats.

        ``shard.json`` is replaced, never edited, so it is read again only when its inode
        or mtime changed (every read of the entity asks for a stamp).
        """
        try:
            st = self._pointer.stat()
            pointer: tuple[int, int] = (st.st_ino, st.st_mtime_ns)
        except FileNotFoundError:
            pointer = (0, 0)
        if pointer == (0, 0):
            generation = 0
        elif self._pointer_seen is not None and self._pointer_seen[0] == pointer:
            generation = self._pointer_seen[1]
        else:
            generation = self.generation()
            self._pointer_seen = (pointer, generation)
        try:
            size = wal_path(self.path, generation).stat().st_size
        except FileNotFoundError:
            size = 0
        return (pointer, generation, size)

    def load(self) -> tuple[MemoryGraph, int]:
        """The snapshot in ``graph.json`` and its generation (an empty graph at 0)."""
        expected = self.generation()
        # The repair command names no side: left to itself, repair rebuilds this shard's
        # graph from its collection and no other (--from-index would rebuild every shard).
        graph, generation = MemoryGraph.load(self._graph, store=self.store, flags=())
        if generation < expected:
            problem = (
                f"is out of date (generation {generation}; shard.json expects {expected})"
                if self._graph.exists()
                else f"is missing (shard.json expects generation {expected})"
            )
            raise damaged(self._graph, problem, self.store)
        if generation > expected:
            # A snapshot was written but its writer died before the pointer: finish it.
            self._write_pointer(generation)
        return graph, generation

    def log_label(self, generation: int) -> str:
        """The path of ``generation``'s log (for messages)."""
        return str(wal_path(self.path, generation))

    def _reader(self, generation: int, position: int) -> WalReader:
        reader = self._readers.get(generation)
        if reader is None:
            self._readers = {
                generation: WalReader(wal_path(self.path, generation), store=self.store)
            }
            reader = self._readers[generation]
        reader.offset = position
        return reader

    def read_log(self, generation: int, position: int) -> LogRead:
        """Whole records after byte ``position`` of ``wal-<generation>.jsonl``."""
        reader = self._reader(generation, position)
        if reader.size() <= position:
            return LogRead([], position, False)
        records = reader.read_new()
        return LogRead(records, reader.offset, reader.torn_tail)

    def append(self, generation: int, records: list[dict[str, Any]], *, durable: bool) -> int:
        """Append the records as JSON lines in one write; returns the new size."""
        self.path.mkdir(parents=True, exist_ok=True)
        return append_records(wal_path(self.path, generation), records, durable=durable)

    def cut_torn(self, generation: int, position: int) -> bool:
        """Truncate the log back to ``position`` if a partial line follows it."""
        reader = self._reader(generation, position)
        return reader.cut_torn_tail()

    def _write_pointer(self, generation: int) -> None:
        payload = {"entity_id": self.entity_id, "generation": generation}
        atomic_write_bytes(self._pointer, json.dumps(payload).encode())

    def save(self, graph: MemoryGraph, generation: int) -> None:
        """Snapshot first, pointer second, then the old log goes."""
        self.path.mkdir(parents=True, exist_ok=True)
        old = self.generation()
        graph.save(self._graph, generation)
        self._write_pointer(generation)
        if old != generation:
            wal_path(self.path, old).unlink(missing_ok=True)

    def cleanup(self) -> None:
        """Older logs, and the snapshot and pointer temp files of writers that died (under
        the lock)."""
        if not self.path.is_dir():
            return
        current = wal_path(self.path, self.generation()).name
        for old in self.path.glob("wal-*.jsonl"):
            if old.name < current:
                old.unlink(missing_ok=True)
        for name in (self._graph.name, self._pointer.name):
            for stale in self.path.glob(f".{name}.*.tmp"):
                stale.unlink(missing_ok=True)

    def destroy(self) -> None:
        """Remove the shard directory (its lock file goes with it)."""
        for target in self.path.iterdir() if self.path.is_dir() else []:
            if target.name != "shard.lock":
                if target.is_dir():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
