"""The store: a catalog of entities and one shard per entity, beside one vector index.

Layout of a store directory (schema 2)::

    manifest.json        schema version, embedder
    catalog.sqlite3      one row per entity: its figures (read without loading shards)
    shards/xx/<hash>/    one entity's shard: graph.json, wal-<gen>.jsonl, shard.lock
    chroma/              the embedded Chroma data, one collection per entity (absent in
                         server mode)
    store.lock           held only while the store is opened or repaired

Opening reads the manifest and the catalog, nothing else. An entity's shard loads on its
first use and stays resident within a bound (``max_resident_shards``, least recently used
evicted); writes and reads of one entity take that entity's lock only, so the cost of
serving one entity does not depend on how many others the store holds.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from memtrellis._deprecated import renamed
from memtrellis.errors import (
    InvalidInputError,
    StoreClosedError,
    StoreLockedError,
    WriteConflictError,
)
from memtrellis.store._corrupt import damaged
from memtrellis.store._files import holding
from memtrellis.store._opening import open_files, open_postgres
from memtrellis.store.changes import Change, change_records, superseded_records
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.manifest import EmbedderInfo
from memtrellis.store.shard import Expect, RecoveryReport, Shard, ShardSettings
from memtrellis.store.shardfiles import FileShardStorage
from memtrellis.store.storage import Catalog, EntityStats, ShardStorage
from memtrellis.store.vectorproc import VectorProcess
from memtrellis.store.vectors import VectorIndex, Vectors
from memtrellis.types import EdgeKind, MemoryItem, utcnow

__all__ = ["Change", "Expect", "RecoveryReport", "Store"]

log = logging.getLogger("memtrellis.store")

EmbedFn = Callable[[list[str]], list[list[float]]]
#: Shards kept loaded at once by default (each costs about its memories x a few KB).
DEFAULT_RESIDENT_SHARDS = 256
#: Memories kept loaded at once by default, over all resident shards.
DEFAULT_RESIDENT_MEMORIES = 1_000_000
#: How many times a write planned against an entity that changed meanwhile is planned
#: again before its `WriteConflictError` reaches the caller.
PLAN_ATTEMPTS = 8


class Store:
    """A catalog and per-entity shards beside one vector index, safe across threads and
    processes.

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
        >>> store.graph_of("ana").item(item.id).text
        'Ana lives in Porto.'
        >>> store.entities()
        ['ana']
        >>> store.close()
    """

    def __init__(
        self,
        path: Path,
        *,
        embedder: EmbedderInfo,
        embed: EmbedFn,
        chroma_url: str | None = None,
        postgres_url: str | None = None,
        lock_timeout: float = 60.0,
        compact_every: int = 5000,
        max_resident_shards: int = DEFAULT_RESIDENT_SHARDS,
        max_resident_memories: int = DEFAULT_RESIDENT_MEMORIES,
        vector_process: bool = False,
    ) -> None:
        for name, bound in (
            ("max_resident_shards", max_resident_shards),
            ("max_resident_memories", max_resident_memories),
        ):
            if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
                raise InvalidInputError(f"{name} must be a positive int, not {bound!r}")
        self.path = path
        self._closed = False
        self._mu = threading.Lock()  # the resident shards and the writer locks
        self._shards: OrderedDict[str, Shard] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        self._plans: dict[str, threading.Lock] = {}
        self._known: set[str] = set()
        self.max_resident_shards = max_resident_shards
        self.max_resident_memories = max_resident_memories
        self.recovery = RecoveryReport()
        path.mkdir(parents=True, exist_ok=True)
        self._file_lock = FileLock(
            str(path / "store.lock"), timeout=lock_timeout, thread_local=False
        )
        self._backend: Any = None
        self.catalog: Catalog
        self._storage: Callable[[str], ShardStorage] = self._file_storage
        with self._store_locked(lock_timeout):
            if postgres_url is not None:
                backend, self.manifest, self.catalog = open_postgres(
                    path, postgres_url, chroma_url, embedder
                )
                self._backend, self._storage = backend, backend.storage
            else:
                self.manifest, self.catalog = open_files(
                    path, embedder, chroma_url, embed, lock_timeout
                )
            self.vectors: Vectors
            if vector_process and chroma_url is None:
                self.vectors = VectorProcess(path / "chroma")
            else:
                self.vectors = VectorIndex(path / "chroma", chroma_url=chroma_url)
            self._settings = ShardSettings(
                vectors=self.vectors,
                embed=embed,
                writer=uuid.uuid4().hex[:12],
                recovery=self.recovery,
                lock_timeout=lock_timeout,
                compact_every=compact_every,
                store_label=str(path),
                catalog=self.catalog,
            )
            for entity_id in self.catalog.dropping():
                self._finish_drop(entity_id)
        if self.recovery.recovered:
            log.warning("store %s: %s", path, self.recovery.summary())

    @property
    def repair(self) -> RecoveryReport:
        """Deprecated: `recovery` (what opening recovered; a repair is ``repair_store``)."""
        renamed("Store.repair", "Store.recovery")
        return self.recovery

    @contextmanager
    def _store_locked(self, timeout: float) -> Iterator[None]:
        with holding(self._file_lock, timeout, self.path):
            yield

    def check_open(self) -> None:
        """Raise [`StoreClosedError`][memtrellis.errors.StoreClosedError] once the store is
        closed."""
        if self._closed:
            raise StoreClosedError("this memory store is closed")

    # -- shards ----------------------------------------------------------------------------
    def _file_storage(self, entity_id: str) -> ShardStorage:
        return FileShardStorage(self.path, entity_id)

    def shard(self, entity_id: str) -> Shard:
        """The entity's shard, loaded on first use (an empty one for a new entity)."""
        self.check_open()
        with self._mu:
            found = self._shards.get(entity_id)
            if found is not None:
                self._shards.move_to_end(entity_id)
                return found
            loading = self._loading.setdefault(entity_id, threading.Lock())
        with loading:  # one load per entity at a time; other entities go on meanwhile
            with self._mu:
                found = self._shards.get(entity_id)
                if found is not None:
                    return found
            shard = Shard(self._storage(entity_id), self._settings)
            recorded = self.catalog.get(entity_id)
            if shard.storage.exists() and (recorded is not None or len(shard.graph)):
                # (A forgotten entity's empty shard is no reason to list it again.)
                self._known.add(entity_id)
                if recorded != shard.stats():
                    self._record(shard)
            elif not shard.storage.exists() and recorded is not None and recorded.memories:
                # An empty shard would hide the memories the catalog says it holds.
                raise damaged(
                    Path(shard.storage.label),
                    f"is missing but the catalog records {recorded.memories} memories",
                    self.path,
                )
            with self._mu:
                self._shards[entity_id] = shard
                self._loading.pop(entity_id, None)
                evicted = self._choose_evictions(entity_id)
        for old in evicted:
            self._evict(old)
        return shard

    def _choose_evictions(self, keep: str) -> list[Shard]:
        # Called with _mu held; the least recently used first, never the one just used.
        chosen: list[Shard] = []
        count = len(self._shards)
        memories = sum(len(s.graph) for s in self._shards.values())
        for entity_id, shard in list(self._shards.items()):
            if count <= self.max_resident_shards and memories <= self.max_resident_memories:
                break
            if entity_id == keep or not shard.mu.acquire(blocking=False):
                continue  # in use right now: a later load evicts it
            shard.mu.release()
            del self._shards[entity_id]
            chosen.append(shard)
            count -= 1
            memories -= len(shard.graph)
        return chosen

    def _evict(self, shard: Shard) -> None:
        """Log what only memory holds (recall counts) and record the figures."""
        try:
            shard.flush(snapshot=False)
            if shard.dirty:
                self._record(shard)
        except Exception:  # eviction must not fail the call that triggered it
            log.exception("store %s: could not flush evicted shard %s", self.path, shard.entity_id)

    def _record(self, shard: Shard) -> None:
        if shard.entity_id not in self._known:  # never written, or forgotten since
            return
        self.catalog.record(shard.entity_id, shard.stats())
        shard.dirty = False

    def _writable(self, entity_id: str) -> Shard:
        shard = self.shard(entity_id)
        self._known_now(entity_id)
        return shard

    def _known_now(self, entity_id: str) -> None:
        if entity_id not in self._known:
            self.catalog.ensure(entity_id)
            self._known.add(entity_id)

    def began(self, entity_id: str) -> Expect:
        """What a write of ``entity_id`` beginning now expects: that its entity is not
        forgotten before it commits (see [`Expect`][memtrellis.store.Expect])."""
        began = utcnow()
        shard = self.shard(entity_id)
        shard.refresh()
        return Expect(epoch=shard.epoch, began=began)

    def dropped_at(self, entity_id: str) -> datetime | None:
        """When the last forget of everything of ``entity_id`` began, if one did."""
        at = self.shard(entity_id).graph.forgotten.dropped_at.get(entity_id)
        return datetime.fromisoformat(at) if at is not None else None

    def version(self, entity_id: str) -> int:
        """A number that grows with every change of the entity's shard (see `Expect`)."""
        return self.shard(entity_id).version

    def resident(self) -> list[str]:
        """The entities whose shards are loaded now, least recently used first."""
        with self._mu:
            return list(self._shards)

    def graph_of(self, entity_id: str) -> MemoryGraph:
        """The entity's graph (a `MemoryGraph`; hold ``reading(entity_id)`` across calls)."""
        return self.shard(entity_id).graph

    @contextmanager
    def reading(self, entity_id: str) -> Iterator[Shard]:
        """Hold one entity's shard still while reading its graph and keyword index."""
        shard = self.shard(entity_id)
        with shard.mu:
            yield shard

    @contextmanager
    def writing(self, entity_id: str) -> Iterator[None]:
        """One plan-and-commit at a time for an entity in this process (others go on)."""
        with self._mu:
            lock = self._plans.setdefault(entity_id, threading.Lock())
        with lock:
            yield

    @contextmanager
    def exclusive(self, entity_id: str) -> Iterator[None]:
        """Hold the entity's lock (across threads, processes and machines) with its shard
        caught up: no one else commits to the entity meanwhile. For a plan that kept
        meeting other writers' commits; readers of the entity in this process wait."""
        shard = self.shard(entity_id)
        with shard.locked():
            yield

    def refresh(self, entity_id: str, *, wait: bool = False) -> None:
        """See what other processes wrote for this entity (cheap when nothing changed)."""
        self.shard(entity_id).refresh(wait=wait)

    # -- writing ---------------------------------------------------------------------------
    def commit(
        self,
        entity_id: str,
        records: list[dict[str, Any]],
        index: Callable[[], None] | None = None,
        *,
        compact: bool = False,
        expect: Expect | None = None,
    ) -> None:
        """Log, apply and index ``records`` of one entity (see `Shard.commit`)."""
        self.shard(entity_id).commit(
            records,
            index,
            compact=compact,
            expect=expect,
            admitted=lambda: self._known_now(entity_id),
        )

    def put(
        self,
        items: Sequence[MemoryItem],
        embeddings: Sequence[Sequence[float]] | None,
        action: str,
        detail: dict[str, Any] | None = None,
        edges: Sequence[tuple[str, str, EdgeKind]] = (),
        *,
        expect: Expect | None = None,
    ) -> None:
        """Store items (and edges among them), one commit per entity.

        ``embeddings=None`` means the text did not change (metadata only); ``expect`` as
        in `apply`.
        """
        vectors: Sequence[Sequence[float] | None] = embeddings or [None] * len(items)
        self.apply(
            [Change(i, v, action, detail or {}) for i, v in zip(items, vectors, strict=True)],
            edges,
            expect=expect,
        )

    def apply(
        self,
        changes: Sequence[Change],
        edges: Sequence[tuple[str, str, EdgeKind]] = (),
        *,
        expect: Expect | None = None,
    ) -> None:
        """Store new and changed items with their history events, and edges: one commit per
        entity, each atomic.

        A change with an embedding is (re)indexed with it; one without keeps its vector
        and only its metadata is refreshed. An edge belongs to the entity of its source.
        ``expect`` (changes of one entity only): what the changes were planned against;
        if that no longer holds, [`WriteConflictError`][memtrellis.errors.WriteConflictError]
        is raised and nothing is stored.
        """
        owner = {c.item.id: c.item.scope.entity_id for c in changes}
        by_entity: dict[str, tuple[list[Change], list[tuple[str, str, EdgeKind]]]] = {}
        for change in changes:
            by_entity.setdefault(change.item.scope.entity_id, ([], []))[0].append(change)
        for edge in edges:
            entity_id = owner.get(edge[0]) or owner.get(edge[1])
            if entity_id is None:
                raise InvalidInputError(f"edge {edge[0]} -> {edge[1]} names no stored item")
            by_entity.setdefault(entity_id, ([], []))[1].append(edge)
        if expect is not None and len(by_entity) > 1:
            raise InvalidInputError("apply(expect=...) takes the changes of one entity")
        for entity_id, (group, group_edges) in by_entity.items():
            self._apply_one(entity_id, group, group_edges, expect)

    def _apply_one(
        self,
        entity_id: str,
        changes: list[Change],
        edges: list[tuple[str, str, EdgeKind]],
        expect: Expect | None,
    ) -> None:
        records = change_records(changes, edges, utcnow())
        shard = self.shard(entity_id)

        def index() -> None:
            embedded = [c for c in changes if c.embedding is not None]
            if embedded:
                stored = [shard.graph.item(c.item.id) or c.item for c in embedded]
                self.vectors.upsert(stored, [c.embedding for c in embedded if c.embedding])
            for record in records:
                if record["op"] == "put" and not record["reembed"]:
                    shard.index_change(record)

        shard.commit(records, index, expect=expect, admitted=lambda: self._known_now(entity_id))

    def delete(self, entity_id: str, ids: Sequence[str]) -> None:
        """Delete memories of one entity from graph and index."""
        if ids:
            self.commit(entity_id, [{"op": "del", "entity_id": entity_id, "ids": list(ids)}])

    def drop_entity(self, entity_id: str, *, began: datetime | None = None) -> None:
        """Delete everything one entity has, then compact its shard.

        The entity's log still holds its ``put`` records until its next snapshot, so a
        snapshot is written at once: afterwards no file of the store holds its memories.
        The catalog marks the entity first, so a crash midway is finished by the next open.
        ``began``: when the forget began; a write of the entity begun earlier is refused.
        """
        self.catalog.mark_dropping(entity_id)
        self._finish_drop(entity_id, began)

    def _finish_drop(self, entity_id: str, began: datetime | None = None) -> None:
        shard = self.shard(entity_id)
        record: dict[str, Any] = {"op": "drop", "entity_id": entity_id}
        if began is not None:
            record["began"] = began.isoformat(timespec="microseconds")
        shard.commit([record], compact=True)
        self.catalog.remove(entity_id)
        self._known.discard(entity_id)
        shard.dirty = False  # its (empty) figures must not bring the row back on close

    def supersede(self, entity_id: str, replaced: dict[str, str]) -> None:
        """Mark each ``old id -> new id`` superseded, with a ``supersedes`` edge new -> old
        (an old memory forgotten meanwhile stays forgotten)."""
        for _ in range(PLAN_ATTEMPTS - 1):
            try:
                self._supersede(entity_id, replaced)
                return
            except WriteConflictError:
                continue  # one was forgotten meanwhile: again without it
        self._supersede(entity_id, replaced)

    def _supersede(self, entity_id: str, replaced: dict[str, str]) -> None:
        shard = self.shard(entity_id)
        shard.refresh(wait=True)
        with shard.mu:
            records, found = superseded_records(shard.graph, replaced, utcnow())
            if records:
                shard.commit(records, expect=Expect(existing=found))

    def add_edge(self, entity_id: str, source: str, target: str, kind: EdgeKind) -> None:
        """Add a typed memory-to-memory edge within one entity."""
        self.commit(entity_id, [{"op": "edge", "src": source, "dst": target, "kind": kind.value}])

    def touch(
        self,
        entity_id: str,
        ids: Sequence[str],
        at: datetime,
        until: Mapping[str, datetime] | None = None,
    ) -> None:
        """Count a recall of ``ids`` and renew the validity ends in ``until`` (heat):
        applied now, logged lazily with the next write."""
        self.shard(entity_id).touch(list(ids), at, until)

    # -- reading ---------------------------------------------------------------------------
    def entities(self) -> list[str]:
        """Every entity with memories in the store, from the catalog (no shard is loaded)."""
        self.check_open()
        return self.catalog.entities()

    def shards(self) -> Iterator[Shard]:
        """Every entity's shard, one at a time: resident ones as they are, the others
        loaded for the caller and dropped after (they do not displace resident shards)."""
        for entity_id in self.entities():
            with self._mu:
                shard = self._shards.get(entity_id)
            if shard is None:
                shard = Shard(self._storage(entity_id), self._settings)
            shard.refresh()
            yield shard

    def combined_graph(self) -> MemoryGraph:
        """Every entity's graph in one new graph (for pictures and exports of the whole
        store: it holds every memory at once, so it costs memory in proportion)."""
        combined = MemoryGraph()
        for shard in self.shards():
            with shard.mu:
                combined.absorb(shard.graph)
        return combined

    def stats(self) -> dict[str, EntityStats]:
        """Every entity's figures: live for resident shards, from the catalog for others."""
        recorded = self.catalog.all()
        with self._mu:
            resident = list(self._shards.values())
        for shard in resident:
            if shard.entity_id in recorded:
                with shard.mu:
                    recorded[shard.entity_id] = shard.stats()
        return recorded

    @property
    def mode(self) -> str:
        """``"postgres"`` when shards live in PostgreSQL, ``"files"`` otherwise."""
        return "files" if self._backend is None else "postgres"

    @property
    def pending_count(self) -> int:
        """Logged changes not yet confirmed in the vector index (resident shards)."""
        with self._mu:
            return sum(s.pending_count for s in self._shards.values())

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
        """Log pending recall counts, snapshot each changed shard, release Chroma."""
        with self._mu:
            if self._closed:
                return
            self._closed = True
            resident = list(self._shards.values())
            self._shards.clear()
        try:
            for shard in resident:
                try:
                    shard.flush(snapshot=True)
                    if shard.dirty:
                        self._record(shard)
                except (StoreLockedError, OSError):
                    log.exception("store %s: could not flush shard %s", self.path, shard.entity_id)
        finally:
            self.vectors.close()
            self.catalog.close()
