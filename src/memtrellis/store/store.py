"""The store: graph, vector index and keyword index kept in step on one directory.

Layout of a store directory::

    manifest.json        schema version, embedder, current generation
    graph.json           node-link snapshot of the graph at that generation
    wal-<gen>.jsonl      write-ahead log of every change since the snapshot
    chroma/              the embedded Chroma data (absent in server mode)
    store.lock           the write lock shared by every process

A write takes the lock, catches up with what other processes logged, appends its records
to the log (fsync), updates the index, then appends an ``ok``. A change without its ``ok``
is rolled forward by the next process that takes the lock, so the graph and the index
never disagree for longer than one crash.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memtrellis.errors import StoreClosedError, StoreLockedError
from memtrellis.store._corrupt import FROM_GRAPH, FROM_INDEX, damaged, embedder_flags
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.keyword import KeywordIndex
from memtrellis.store.manifest import EmbedderInfo, Manifest, read_manifest, write_manifest
from memtrellis.store.vectors import VectorIndex
from memtrellis.store.wal import WalReader, append_records, replay_record, wal_path
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem, utcnow

__all__ = ["RepairReport", "Store"]

log = logging.getLogger("memtrellis.store")

EmbedFn = Callable[[list[str]], list[list[float]]]
_CHANGE_OPS = frozenset({"put", "del", "drop"})
#: Seconds a read waits for the store lock (to reload the vector index, to log recall
#: counts) before it goes on without (see Store.refresh and Store.touch).
_RELOAD_WAIT = 0.2


@dataclass
class RepairReport:
    """What opening (or catching up with) a store had to repair after a crash.

    Examples:
        >>> RepairReport(rolled_forward=["m1"]).summary()
        'rolled forward 1 interrupted change(s), dropped 0 torn log record(s)'
    """

    rolled_forward: list[str] = field(default_factory=list)
    torn_records: int = 0
    index_retries: int = 0

    @property
    def repaired(self) -> bool:
        """Whether anything was repaired."""
        return bool(self.rolled_forward or self.torn_records)

    def summary(self) -> str:
        """One line for logs and the CLI."""
        return (
            f"rolled forward {len(self.rolled_forward)} interrupted change(s), "
            f"dropped {self.torn_records} torn log record(s)"
        )


@dataclass(frozen=True)
class Change:
    """One item to store: its new state, its vector (``None``: text unchanged), the event.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> Change(item, embedding=None, action="updated").detail
        {}
    """

    item: MemoryItem
    embedding: Sequence[float] | None
    action: str
    detail: dict[str, Any] = field(default_factory=dict)


class Store:
    """Graph + vectors + keywords on one directory, safe across threads and processes.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from memtrellis.store import EmbedderInfo, Store
        >>> from memtrellis.testing import HashingEmbedder
        >>> embedder = HashingEmbedder()
        >>> info = EmbedderInfo(model_id=embedder.model_id, dimension=embedder.dimension)
        >>> store = Store(Path(tempfile.mkdtemp()), embedder=info, embed=embedder.embed_documents)
        >>> from memtrellis import MemoryItem, Scope
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> store.put([item], embedder.embed_documents([item.text]), action="created")
        >>> store.graph.item(item.id).text
        'Ana lives in Porto.'
        >>> store.close()
    """

    def __init__(
        self,
        path: Path,
        *,
        embedder: EmbedderInfo,
        embed: EmbedFn,
        chroma_url: str | None = None,
        lock_timeout: float = 60.0,
        compact_every: int = 5000,
    ) -> None:
        self.path = path
        self._embed = embed
        self._compact_every = compact_every
        self._writer = uuid.uuid4().hex[:12]
        self._seq = 0
        self._mu = threading.RLock()
        self._closed = False
        self._pending: dict[str, dict[str, Any]] = {}
        self._touches: list[tuple[str, str]] = []
        self._ops_since_snapshot = 0  # logged changes and edges, not recall counts
        self._touches_since_snapshot = 0
        self._snapshot_size = 0
        self._manifest_stamp: tuple[int, int, int] = (0, 0, 0)
        self.repair = RepairReport()
        path.mkdir(parents=True, exist_ok=True)
        self._file_lock = FileLock(
            str(path / "store.lock"), timeout=lock_timeout, thread_local=False
        )
        self.graph = MemoryGraph()
        self.keywords = KeywordIndex()
        with self._locked():
            flags = embedder_flags(embedder.model_id)
            manifest = read_manifest(self._manifest_path, flags=flags)
            if manifest is None:
                if self._has_data():
                    # Starting a new store over old data would hide it: repair instead.
                    raise damaged(
                        self._manifest_path, "is missing but the store holds data", path, *flags
                    )
                manifest = Manifest(embedder=embedder)
                write_manifest(self._manifest_path, manifest)
            else:
                manifest.check_embedder(embedder.model_id, embedder.dimension, path)
                if chroma_url is None and not (path / "chroma").is_dir():
                    raise damaged(path / "chroma", "is missing", path, FROM_GRAPH)
            self.manifest = manifest
            self.vectors = VectorIndex(path / "chroma", chroma_url=chroma_url)
            self._load_snapshot()
            self._catch_up(locked=True)
            self._remove_old_logs()
        if self.repair.repaired:
            log.warning("store %s: %s", path, self.repair.summary())

    # -- paths ---------------------------------------------------------------------------
    @property
    def _manifest_path(self) -> Path:
        return self.path / "manifest.json"

    @property
    def _graph_path(self) -> Path:
        return self.path / "graph.json"

    def _has_data(self) -> bool:
        return (
            self._graph_path.exists()
            or (self.path / "chroma").exists()
            or any(self.path.glob("wal-*.jsonl"))
        )

    # -- locking -------------------------------------------------------------------------
    @contextmanager
    def _locked(self, timeout: float | None = None) -> Iterator[None]:
        with self._mu:
            wait = self._file_lock.timeout if timeout is None else timeout
            try:
                self._file_lock.acquire(timeout=wait)
            except Timeout as exc:
                raise StoreLockedError(
                    f"another process held the lock on {self.path} for longer than {wait} s"
                ) from exc
            try:
                yield
            finally:
                self._file_lock.release()

    def check_open(self) -> None:
        """Raise [`StoreClosedError`][memtrellis.errors.StoreClosedError] once the store is
        closed."""
        self._check_open()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("this memory store is closed")

    # -- loading and catching up ---------------------------------------------------------
    def _stat_manifest(self) -> tuple[int, int, int]:
        # The manifest is replaced, never edited, so a new inode means a new generation.
        try:
            st = self._manifest_path.stat()
        except FileNotFoundError:
            return (0, 0, 0)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _load_snapshot(self) -> None:
        # Loading builds hundreds of thousands of objects that all stay alive; with the
        # cyclic collector running it rescans them over and over (14.8 s instead of 4.4 s
        # for a 100k store in benchmarks/latency.py).
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._load_snapshot_now()
        finally:
            if collecting:
                gc.enable()

    def _load_snapshot_now(self) -> None:
        graph, generation = MemoryGraph.load(self._graph_path)
        if generation < self.manifest.generation:
            expects = f"the manifest expects generation {self.manifest.generation}"
            problem = (
                f"is out of date (generation {generation}; {expects})"
                if self._graph_path.exists()
                else f"is missing ({expects})"
            )
            raise damaged(self._graph_path, problem, self.path, FROM_INDEX)
        if generation > self.manifest.generation:
            # A compaction wrote the snapshot but died before the manifest: finish it.
            self.manifest.generation = generation
            write_manifest(self._manifest_path, self.manifest)
        self.graph = graph
        self.keywords = KeywordIndex()
        for item in graph.items():
            self.keywords.add(item.scope.entity_id, item.id, item.search_text())
        self._reader = WalReader(wal_path(self.path, self.manifest.generation))
        self._manifest_stamp = self._stat_manifest()
        self._ops_since_snapshot = 0
        self._touches_since_snapshot = 0
        self._snapshot_size = len(graph)

    def _catch_up(self, *, locked: bool) -> None:
        """Apply what was logged since our last look; under the lock, also repair."""
        stamp = self._stat_manifest()
        if stamp != self._manifest_stamp:
            manifest = read_manifest(self._manifest_path)
            if manifest is not None and manifest.generation != self.manifest.generation:
                self.manifest = manifest
                self._load_snapshot()
                self._pending.clear()
                self.vectors.stale = True
            self._manifest_stamp = stamp
        if self._reader.size() > self._reader.offset:
            foreign = False
            for record in self._reader.read_new():
                foreign = foreign or record.get("w") != self._writer
                self._apply(record)
            if foreign:
                self.vectors.stale = True
        if locked:
            if self._reader.torn_tail and self._reader.cut_torn_tail():
                self.repair.torn_records += 1
            if self.vectors.stale:
                self.vectors.refresh()
            if self._pending:
                self._roll_forward()

    def _apply(self, record: dict[str, Any]) -> None:
        op = record["op"]
        if op == "ok":
            self._pending.pop(record["rid"], None)
            return
        if op == "touch":
            self._touches_since_snapshot += 1
        else:
            self._ops_since_snapshot += 1
        if op in _CHANGE_OPS:
            self._pending[record["rid"]] = record
        try:
            replay_record(self.graph, record)
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(
                self._reader.path, f"holds a record it cannot apply ({exc})", self.path
            ) from exc
        if op == "put":
            item = self.graph.item(record["item"]["id"])
            if item is not None:
                self.keywords.add(item.scope.entity_id, item.id, item.search_text())
        elif op == "del":
            for memory_id in record["ids"]:
                self.keywords.remove(memory_id)
        elif op == "drop":
            self.keywords.drop_tenant(record["entity_id"])

    def _index_change(self, record: dict[str, Any]) -> None:
        """Carry one logged change into the vector index (idempotent)."""
        op = record["op"]
        if op == "put":
            item = self.graph.item(record["item"]["id"])
            if item is None:  # deleted by a later record; nothing to index
                return
            if record.get("reembed", True) or not self.vectors.has(item.scope.entity_id, [item.id]):
                self.vectors.upsert([item], self._embed([item.search_text()]))
            else:
                self.vectors.update_metadata([item])
        elif op == "del":
            self.vectors.delete(record["entity_id"], record["ids"])
        elif op == "drop":
            self.vectors.drop_entity(record["entity_id"])

    def _roll_forward(self) -> None:
        done: list[dict[str, Any]] = []
        for rid, record in list(self._pending.items()):
            try:
                self._index_change(record)
            except Exception:
                self.repair.index_retries += 1
                log.exception("store %s: could not index change %s; will retry", self.path, rid)
                continue
            done.append({"op": "ok", "rid": rid, "w": self._writer})
            self.repair.rolled_forward.append(rid)
            self._pending.pop(rid, None)
        if done:
            self._reader.offset = append_records(self._reader.path, done, durable=False)

    def _remove_old_logs(self) -> None:
        current = wal_path(self.path, self.manifest.generation).name
        for old in self.path.glob("wal-*.jsonl"):
            if old.name < current:
                old.unlink(missing_ok=True)
        # A process killed while writing a snapshot leaves its temporary file, as large as
        # the graph, behind. Snapshots are written only under the lock we hold: any such
        # file now belongs to a writer that died.
        for stale in self.path.glob(f".{self._graph_path.name}.*.tmp"):
            stale.unlink(missing_ok=True)

    # -- writing ---------------------------------------------------------------------------
    def _rid(self) -> str:
        self._seq += 1
        return f"{self._writer}:{self._seq}"

    def commit(
        self,
        records: list[dict[str, Any]],
        index: Callable[[], None] | None = None,
        *,
        compact: bool = False,
    ) -> None:
        """Log ``records``, apply them, then run ``index`` (the vector-index half).

        Change records (``put``, ``del``, ``drop``) get a record id here. If ``index``
        fails the change stays logged and pending: it is in the graph now and reaches the
        index when the next writer rolls it forward, so nothing acknowledged is lost.
        ``compact=True`` writes a snapshot and starts a new log right after (unless a
        change is still pending).
        """
        self._check_open()
        with self._locked():
            self._catch_up(locked=True)
            rids: list[str] = []
            for record in records:
                record["w"] = self._writer
                if record["op"] in _CHANGE_OPS:
                    record["rid"] = self._rid()
                    rids.append(record["rid"])
            # Touches were applied when they happened; only the new records apply now.
            outgoing = self._drain_touches() + records
            self._reader.offset = append_records(self._reader.path, outgoing)
            for record in records:
                self._apply(record)
            try:
                if index is not None:
                    index()
                else:
                    for rid in rids:
                        self._index_change(self._pending[rid])
            except Exception:
                self.repair.index_retries += 1
                log.exception("store %s: vector index write failed; will retry", self.path)
            else:
                oks = [{"op": "ok", "rid": rid, "w": self._writer} for rid in rids]
                if oks:
                    self._reader.offset = append_records(self._reader.path, oks, durable=False)
                for rid in rids:
                    self._pending.pop(rid, None)
            # A snapshot costs O(graph); waiting for as many changes as the last snapshot
            # held keeps ingest linear overall.
            logged = self._ops_since_snapshot + self._touches_since_snapshot
            if compact or logged >= max(self._compact_every, self._snapshot_size):
                self._compact()
            if compact and self._pending:
                log.warning(
                    "store %s: changes are pending in the vector index, so the log was "
                    "not compacted; the next snapshot removes what it still holds",
                    self.path,
                )

    def put(
        self,
        items: Sequence[MemoryItem],
        embeddings: Sequence[Sequence[float]] | None,
        action: str,
        detail: dict[str, Any] | None = None,
        edges: Sequence[tuple[str, str, EdgeKind]] = (),
    ) -> None:
        """Store items (and edges among them) in one commit.

        ``embeddings=None`` means the text did not change (metadata only).
        """
        vectors: Sequence[Sequence[float] | None] = embeddings or [None] * len(items)
        self.apply(
            [Change(i, v, action, detail or {}) for i, v in zip(items, vectors, strict=True)], edges
        )

    def apply(
        self, changes: Sequence[Change], edges: Sequence[tuple[str, str, EdgeKind]] = ()
    ) -> None:
        """Store new and changed items with their history events, and edges, in one commit.

        A change with an embedding is (re)indexed with it; one without keeps its vector
        and only its metadata is refreshed.
        """
        at = utcnow()
        records: list[dict[str, Any]] = [
            {
                "op": "put",
                "item": change.item.model_dump(mode="json"),
                "event": HistoryEvent(at=at, action=change.action, detail=change.detail).model_dump(
                    mode="json"
                ),
                "reembed": change.embedding is not None,
            }
            for change in changes
        ]
        records.extend(
            {"op": "edge", "src": src, "dst": dst, "kind": kind.value} for src, dst, kind in edges
        )

        def index() -> None:
            embedded = [c for c in changes if c.embedding is not None]
            if embedded:
                stored = [self.graph.item(c.item.id) or c.item for c in embedded]
                self.vectors.upsert(stored, [c.embedding for c in embedded if c.embedding])
            for record in records:
                if record["op"] == "put" and not record["reembed"]:
                    self._index_change(record)

        self.commit(records, index)

    def delete(self, entity_id: str, ids: Sequence[str]) -> None:
        """Delete memories of one entity from graph and index."""
        if ids:
            self.commit([{"op": "del", "entity_id": entity_id, "ids": list(ids)}])

    def drop_entity(self, entity_id: str) -> None:
        """Delete everything one entity has, then compact.

        The log still holds the entity's ``put`` records until the next snapshot, so a
        snapshot is written at once: afterwards no file of the store holds its memories.
        """
        self.commit([{"op": "drop", "entity_id": entity_id}], compact=True)

    def supersede(self, replaced: dict[str, str]) -> None:
        """Mark each ``old id -> new id`` superseded, with a ``supersedes`` edge new -> old."""
        records: list[dict[str, Any]] = []
        at = utcnow()
        with self._mu:
            for old_id, new_id in replaced.items():
                old = self.graph.item(old_id)
                if old is None:
                    continue
                event = HistoryEvent(at=at, action="superseded", detail={"by": new_id})
                records.append(
                    {
                        "op": "put",
                        "item": old.model_copy(update={"superseded_by": new_id}).model_dump(
                            mode="json"
                        ),
                        "event": event.model_dump(mode="json"),
                        "reembed": False,
                    }
                )
                records.append(
                    {"op": "edge", "src": new_id, "dst": old_id, "kind": EdgeKind.SUPERSEDES.value}
                )
            if records:
                self.commit(records)

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None:
        """Add a typed memory-to-memory edge."""
        self.commit([{"op": "edge", "src": source, "dst": target, "kind": kind.value}])

    def touch(self, ids: Sequence[str], at: datetime) -> None:
        """Count a recall of ``ids``: applied now, logged lazily with the next write."""
        with self._mu:
            for memory_id in ids:
                item = self.graph.item(memory_id)
                if item is not None:
                    item.recall_count += 1
                    item.last_recalled_at = at
            self._touches.append((",".join(ids), at.isoformat()))
            if len(self._touches) >= 256:
                # A read must not fail on a busy writer: the counts wait for a later call.
                wait = min(self._file_lock.timeout, _RELOAD_WAIT)
                with contextlib.suppress(StoreLockedError), self._locked(timeout=wait):
                    self.commit([])

    def _drain_touches(self) -> list[dict[str, Any]]:
        touches, self._touches = self._touches, []
        self._touches_since_snapshot += len(touches)
        # Already applied locally; the log carries them to other processes and restarts.
        return [
            {"op": "touch", "ids": ids.split(","), "at": at, "w": self._writer}
            for ids, at in touches
        ]

    def _compact(self) -> None:
        """Write a new snapshot and start a new log (under the lock, nothing pending)."""
        if self._pending:
            return
        generation = self.manifest.generation + 1
        self.graph.save(self._graph_path, generation)
        old_log = self._reader.path
        self.manifest.generation = generation
        write_manifest(self._manifest_path, self.manifest)
        old_log.unlink(missing_ok=True)
        self._reader = WalReader(wal_path(self.path, generation))
        self._manifest_stamp = self._stat_manifest()
        self._ops_since_snapshot = 0
        self._touches_since_snapshot = 0
        self._snapshot_size = len(self.graph)

    # -- reading ---------------------------------------------------------------------------
    def reading(self) -> threading.RLock:
        """Hold this while reading the graph or keyword index across several calls."""
        return self._mu

    def refresh(self, *, wait: bool = False) -> None:
        """See what other processes wrote (cheap when nothing changed).

        The graph and keyword index catch up at once. Reloading the vector index takes
        the store lock; while another process keeps it busy writing, a read does not wait
        for it (a busy writer could hold a reader off until the lock timeout) and the
        reload is retried on the next call. ``wait=True`` (before planning a write
        against the index) waits up to the lock timeout like a write.
        """
        self._check_open()
        with self._mu:
            self._catch_up(locked=False)
            if self.vectors.stale:
                timeout = None if wait else min(self._file_lock.timeout, _RELOAD_WAIT)
                try:
                    with self._locked(timeout=timeout):
                        self._catch_up(locked=True)
                except StoreLockedError:
                    if wait:
                        raise
                    log.debug("store %s: busy; the vector index reloads on a later call", self.path)

    @property
    def pending_count(self) -> int:
        """Logged changes not yet confirmed in the vector index."""
        return len(self._pending)

    def disk_usage(self) -> int:
        """Bytes used by the store directory."""
        total = 0
        for root, _, files in os.walk(self.path):
            for name in files:
                try:
                    total += (Path(root) / name).stat().st_size
                except FileNotFoundError:
                    continue
        return total

    # -- closing ---------------------------------------------------------------------------
    def close(self) -> None:
        """Flush pending counts, write a snapshot when the log has grown, release Chroma."""
        with self._mu:
            if self._closed:
                return
            try:
                with self._locked():
                    self._catch_up(locked=True)
                    if self._touches:
                        self._reader.offset = append_records(
                            self._reader.path, self._drain_touches()
                        )
                    # Recall counts replay cheaply: a log holding only those (say, of a
                    # read-only session) does not need a new snapshot of the whole graph.
                    if self._ops_since_snapshot or (
                        self._touches_since_snapshot >= self._compact_every
                    ):
                        self._compact()
            finally:
                self._closed = True
                self.vectors.close()
