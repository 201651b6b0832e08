"""One entity's shard in memory: its graph, its keyword index and its writer.

A write takes the entity's lock, catches up with what other processes logged for this
entity, appends its records to the entity's log (durably), applies them, writes the
vectors, then appends an ``ok``. A change without its ``ok`` is rolled forward by the next
writer of the entity, so its graph and its vectors never disagree for longer than one
crash. Nothing here reads or waits for another entity.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memtrellis._deprecated import renamed
from memtrellis.errors import StoreLockedError, VectorIndexUnavailableError, WriteConflictError
from memtrellis.store import _open_checks as checks
from memtrellis.store._corrupt import damaged
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.keyword import KeywordIndex
from memtrellis.store.messages import MessageIndex
from memtrellis.store.storage import Catalog, EntityStats, ShardStorage
from memtrellis.store.vectors import Vectors
from memtrellis.store.wal import apply_touch, replay_record

__all__ = ["Expect", "RecoveryReport", "Shard", "ShardSettings"]

log = logging.getLogger("memtrellis.store")

EmbedFn = Callable[[list[str]], list[list[float]]]
CHANGE_OPS = frozenset({"put", "del", "drop"})
#: Records that change what the shard holds (a plan made before one of them is stale).
VERSION_OPS = frozenset({"put", "del", "drop", "edge"})
#: Seconds a read waits for the entity's lock (to reload the vector index, to log recall
#: counts) before it goes on without (see Shard.refresh and Shard.touch).
RELOAD_WAIT = 0.2
#: Recall counts kept in memory before a read tries to log them.
TOUCH_BATCH = 256


@dataclass
class RecoveryReport:
    """What opening (or catching up with) a store recovered after a crash: interrupted
    changes rolled forward, torn log records dropped.

    Recovery is automatic and needs nothing but the log; a *repair*
    ([`memtrellis.repair_store`][memtrellis.repair_store]) rebuilds damaged files from the
    store's other copy on request. ``RepairReport``, its old name, still works and warns.

    Examples:
        >>> RecoveryReport(rolled_forward=["m1"]).summary()
        'rolled forward 1 interrupted change(s), dropped 0 torn log record(s)'
    """

    rolled_forward: list[str] = field(default_factory=list)
    torn_records: int = 0
    index_retries: int = 0

    @property
    def recovered(self) -> bool:
        """Whether anything was recovered."""
        return bool(self.rolled_forward or self.torn_records)

    @property
    def repaired(self) -> bool:
        """Deprecated: `recovered`."""
        renamed("RecoveryReport.repaired", "RecoveryReport.recovered")
        return self.recovered

    def summary(self) -> str:
        """One line for logs and the CLI."""
        return (
            f"rolled forward {len(self.rolled_forward)} interrupted change(s), "
            f"dropped {self.torn_records} torn log record(s)"
        )


@dataclass(frozen=True)
class Expect:
    """What a write was planned against; `Shard.commit` refuses the write, storing none
    of it, when that no longer holds once it has caught up under the entity's lock.

    Examples:
        >>> Expect(epoch=0, existing=("m1",)).existing
        ('m1',)
    """

    #: `Shard.epoch` when the write began: a forget of the whole entity since refuses it.
    epoch: int | None = None
    #: When the write began (before ``epoch`` was read): a forget of the whole entity
    #: that began later refuses it too, though it committed before ``epoch`` was read.
    began: datetime | None = None
    #: `Shard.version` the plan read: any change since (here or in another process)
    #: refuses it, so that the plan is made again against what is stored now.
    version: int | None = None
    #: Memories the write changes (an update, a merge, a supersession): each must still
    #: be stored, so that a forget committed meanwhile is never undone.
    existing: tuple[str, ...] = ()


@dataclass
class ShardSettings:
    """What every shard of one store shares: the vectors, the embedder, the writer id."""

    vectors: Vectors
    embed: EmbedFn
    writer: str
    recovery: RecoveryReport
    lock_timeout: float = 60.0
    compact_every: int = 5000
    store_label: str = ""
    #: The catalog a shard compares itself with when it opens (see _open_checks), and
    #: whether it compares itself with the catalog and the vector index at all.
    catalog: Catalog | None = None
    verify: bool = True
    seq: list[int] = field(default_factory=lambda: [0])
    seq_lock: threading.Lock = field(default_factory=threading.Lock)

    def rid(self) -> str:
        """A record id unique to this writer."""
        with self.seq_lock:
            self.seq[0] += 1
            return f"{self.writer}:{self.seq[0]}"


class Shard:
    """One entity's graph, keyword index and log position, kept in step with its storage.

    Thread-safe: one re-entrant lock serialises reads and writes of this entity only.

    Examples:
        >>> import tempfile, uuid
        >>> from pathlib import Path
        >>> from memtrellis import MemoryItem, Scope
        >>> from memtrellis.store.shardfiles import FileShardStorage
        >>> from memtrellis.store.vectors import VectorIndex
        >>> from memtrellis.testing import HashingEmbedder
        >>> root = Path(tempfile.mkdtemp())
        >>> embedder = HashingEmbedder()
        >>> settings = ShardSettings(VectorIndex(root / "chroma"), embedder.embed_documents,
        ...                          writer=uuid.uuid4().hex[:12], recovery=RecoveryReport())
        >>> shard = Shard(FileShardStorage(root, "ana"), settings)
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> record = {"op": "put", "item": item.model_dump(mode="json"), "reembed": True}
        >>> shard.commit([record])
        >>> shard.graph.item(item.id).text
        'Ana lives in Porto.'
        >>> settings.vectors.close()
    """

    def __init__(self, storage: ShardStorage, settings: ShardSettings) -> None:
        self.entity_id = storage.entity_id
        self.storage = storage
        self.settings = settings
        self.vectors = settings.vectors
        self.mu = threading.RLock()
        self.graph = MemoryGraph()
        self.keywords = KeywordIndex()
        self.messages = MessageIndex()
        self.generation = 0
        self.position = 0
        #: Grows with every change applied (and every reload): see `Expect.version`.
        self.version = 0
        self._stamp: Any = None
        self._pending: dict[str, dict[str, Any]] = {}
        self._touches: list[tuple[str, str, dict[str, str]]] = []
        self._ops_since_snapshot = 0
        self._touches_since_snapshot = 0
        self._snapshot_size = 0
        self.dirty = False  # changed since its figures were last given to the catalog
        if storage.exists():
            with self._locked():
                self._load()
                self._catch_up(locked=True, opening=True)
                storage.cleanup()

    # -- locking -------------------------------------------------------------------------
    @contextmanager
    def _locked(self, timeout: float | None = None) -> Iterator[None]:
        with self.mu:
            wait = self.settings.lock_timeout if timeout is None else timeout
            with self.storage.lock(wait):
                yield

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the entity's lock, caught up with what others logged (see `Store.exclusive`)."""
        with self._locked():
            self._catch_up(locked=True)
            yield

    # -- loading and catching up ---------------------------------------------------------
    def _load(self) -> None:
        # Loading builds many objects that all stay alive; with the cyclic collector
        # running it rescans them over and over (3x slower on a large graph).
        collecting = gc.isenabled()
        gc.disable()
        try:
            graph, generation = self.storage.load()
        finally:
            if collecting:
                gc.enable()
        self.graph = graph
        self.keywords = KeywordIndex()
        self.messages = MessageIndex()
        for item in graph.items():
            self.keywords.add(self.entity_id, item.id, item.search_text())
            self.messages.add(item)
        self.generation = generation
        self.position = 0
        self.version += 1
        self._stamp = None
        self._ops_since_snapshot = 0
        self._touches_since_snapshot = 0
        self._snapshot_size = len(graph)

    def _catch_up(self, *, locked: bool, opening: bool = False) -> None:
        """Apply what was logged since our last look; under the lock, also repair.

        ``opening`` (under the lock, once per shard loaded): before anything is written,
        compare what was loaded with the catalog and the vector index, and compare the
        index again once interrupted changes are rolled forward (see _open_checks).
        """
        rolled, torn = len(self.settings.recovery.rolled_forward), False
        stamp = self.storage.stamp()
        if stamp != self._stamp:
            if self.storage.generation() != self.generation:
                # Another process wrote a snapshot: start again from it.
                self._load()
                self._pending.clear()
                self.vectors.stale = True
            read = self.storage.read_log(self.generation, self.position)
            foreign = False
            for record in read.records:
                checks.check_record(record, self._log_label(), self._store_path)
                foreign = foreign or record.get("w") != self.settings.writer
                self._apply(record)
            self.position = read.position
            if foreign:
                self.vectors.stale = True
            if opening:
                self._check_opening(checks.index_bounds(self.graph, self._pending))
            if locked and read.torn and self.storage.cut_torn(self.generation, self.position):
                self.settings.recovery.torn_records += 1
                torn = True
            # The stamp taken before reading: whatever was appended after it is read now
            # or, since the stamp then differs, on the next look.
            self._stamp = None if read.torn else stamp
        if locked:
            if self.vectors.stale:
                self.vectors.refresh()
            if self._pending:
                self._roll_forward()
            rolled = len(self.settings.recovery.rolled_forward) - rolled
            if opening and not self._pending and rolled:
                # What was checked before has changed since: check the index again.
                done = (
                    f"Opening rolled {rolled} interrupted change(s) forward into the index"
                    f"{' and dropped a torn last log record' if torn else ''}, as every open "
                    "does; nothing else was changed."
                )
                self._check_index((len(self.graph), len(self.graph)), done=done)

    # -- checks when opening (see _open_checks) -------------------------------------------
    @property
    def _store_path(self) -> Path:
        return Path(self.settings.store_label)

    def _log_label(self) -> Path:
        log_label = getattr(self.storage, "log_label", None)
        if callable(log_label):
            return Path(log_label(self.generation))
        return Path(f"{self.storage.label} (log of generation {self.generation})")

    def _check_opening(self, bounds: tuple[int, int] | None) -> None:
        """Nothing is written yet: the catalog's record and the index count must agree."""
        if not self.settings.verify:
            return
        if self.settings.catalog is not None:
            checks.check_catalog(
                self.settings.catalog.get(self.entity_id),
                generation=self.generation,
                position=self.position,
                memories=len(self.graph),
                shard=Path(self.storage.label),
                log=self._log_label(),
                store=self._store_path,
            )
        if bounds is not None:
            self._check_index(bounds)

    def _check_index(self, bounds: tuple[int, int], done: str | None = None) -> None:
        if not self.settings.verify:
            return
        try:
            count = self.vectors.count(self.entity_id)
        except VectorIndexUnavailableError:  # the next call that needs the index says so
            log.warning("shard %s: the vector index is unavailable to count", self.entity_id)
            return
        directory = getattr(self.vectors, "directory", None)
        checks.check_index(
            count,
            bounds,
            memories=len(self.graph),
            shard=Path(self.storage.label),
            index=Path(directory) if directory is not None else self._store_path / "chroma",
            store=self._store_path,
            done=done,
        )

    def _apply(self, record: dict[str, Any]) -> None:
        op = record["op"]
        if op == "ok":
            self._pending.pop(record["rid"], None)
            return
        if op == "touch":
            self._touches_since_snapshot += 1
        else:
            self._ops_since_snapshot += 1
            self.dirty = True
        if op in CHANGE_OPS:
            self._pending[record["rid"]] = record
        if op in VERSION_OPS:
            self.version += 1
        try:
            replay_record(self.graph, record)
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(
                Path(self.storage.label),
                f"holds a record it cannot apply ({exc})",
                Path(self.settings.store_label),
            ) from exc
        if op == "put":
            item = self.graph.item(record["item"]["id"])
            if item is not None:
                self.keywords.add(self.entity_id, item.id, item.search_text())
                self.messages.add(item)
        elif op == "del":
            for memory_id in record["ids"]:
                self.keywords.remove(memory_id)
                self.messages.remove(memory_id)
        elif op == "drop":
            self.keywords.drop_entity(self.entity_id)
            self.messages.clear()

    def index_change(self, record: dict[str, Any]) -> None:
        """Carry one logged change into the vector index (idempotent)."""
        op = record["op"]
        if op == "put":
            item = self.graph.item(record["item"]["id"])
            if item is None:  # deleted by a later record; nothing to index
                return
            if record.get("reembed", True) or not self.vectors.has(self.entity_id, [item.id]):
                self.vectors.upsert([item], self.settings.embed([item.search_text()]))
            else:
                self.vectors.update_metadata([item])
        elif op == "del":
            self.vectors.delete(self.entity_id, record["ids"])
        elif op == "drop":
            self.vectors.drop_entity(self.entity_id)

    def _roll_forward(self) -> None:
        done: list[dict[str, Any]] = []
        for rid, record in list(self._pending.items()):
            try:
                self.index_change(record)
            except Exception:
                self.settings.recovery.index_retries += 1
                log.exception(
                    "shard %s: could not index change %s; will retry", self.entity_id, rid
                )
                continue
            done.append({"op": "ok", "rid": rid, "w": self.settings.writer})
            self.settings.recovery.rolled_forward.append(rid)
            self._pending.pop(rid, None)
        if done:
            self._append(done, durable=False)

    def _append(self, records: list[dict[str, Any]], *, durable: bool = True) -> None:
        self.position = self.storage.append(self.generation, records, durable=durable)
        self._stamp = self.storage.stamp()

    # -- writing ---------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """How many times everything of this entity was forgotten (see `Expect.epoch`)."""
        return self.graph.forgotten.drops.get(self.entity_id, 0)

    def _check(self, expect: Expect) -> None:
        last = self.graph.forgotten.dropped_at.get(self.entity_id)
        began = expect.began
        later = (
            began is not None and last is not None and last > began.isoformat("T", "microseconds")
        )
        if later or (expect.epoch is not None and self.epoch != expect.epoch):
            raise WriteConflictError(
                f"everything of entity {self.entity_id!r} was forgotten while this write "
                "was under way; none of it was stored",
                forgotten=True,
            )
        missing = tuple(i for i in expect.existing if self.graph.item(i) is None)
        if missing:
            raise WriteConflictError(
                f"memory {missing[0]!r} was forgotten while this write was under way; "
                "none of it was stored",
                missing=missing,
            )
        if expect.version is not None and self.version != expect.version:
            raise WriteConflictError(
                f"entity {self.entity_id!r} changed while this write was planned; "
                "none of it was stored"
            )

    def commit(
        self,
        records: list[dict[str, Any]],
        index: Callable[[], None] | None = None,
        *,
        compact: bool = False,
        expect: Expect | None = None,
        admitted: Callable[[], None] | None = None,
    ) -> None:
        """Log ``records``, apply them, then run ``index`` (the vector-index half).

        ``expect``: what the write was planned against; when it no longer holds the
        write is refused with [`WriteConflictError`][memtrellis.errors.WriteConflictError]
        before anything is logged. ``admitted`` runs once the write is admitted, before
        it is logged.

        Change records (``put``, ``del``, ``drop``) get a record id here. If ``index``
        fails the change stays logged and pending: it is in the graph now and reaches the
        index when the next writer rolls it forward, so nothing acknowledged is lost.
        ``compact=True`` writes a snapshot and starts a new log right after (unless a
        change is still pending).
        """
        with self._locked():
            self._catch_up(locked=True)
            if expect is not None:
                self._check(expect)
            if admitted is not None:
                admitted()
            rids: list[str] = []
            for record in records:
                record["w"] = self.settings.writer
                if record["op"] in CHANGE_OPS:
                    record["rid"] = self.settings.rid()
                    rids.append(record["rid"])
            # Touches were applied when they happened; only the new records apply now.
            self._append(self._drain_touches() + records)
            for record in records:
                self._apply(record)
            try:
                if index is not None:
                    index()
                else:
                    for rid in rids:
                        self.index_change(self._pending[rid])
            except Exception:
                self.settings.recovery.index_retries += 1
                log.exception("shard %s: vector index write failed; will retry", self.entity_id)
            else:
                oks = [{"op": "ok", "rid": rid, "w": self.settings.writer} for rid in rids]
                if oks:
                    self._append(oks, durable=False)
                for rid in rids:
                    self._pending.pop(rid, None)
            # A snapshot costs O(shard); waiting for as many changes as the last snapshot
            # held keeps ingest linear overall.
            logged = self._ops_since_snapshot + self._touches_since_snapshot
            if compact or logged >= max(self.settings.compact_every, self._snapshot_size):
                self._compact()
            if compact and self._pending:
                log.warning(
                    "shard %s: changes are pending in the vector index, so the log was "
                    "not compacted; the next snapshot removes what it still holds",
                    self.entity_id,
                )

    def touch(
        self, ids: list[str], at: datetime, until: Mapping[str, datetime] | None = None
    ) -> None:
        """Count a recall of ``ids`` and renew the validity ends in ``until`` (heat):
        applied now, logged lazily with the next write."""
        with self.mu:
            apply_touch(self.graph, ids, at, until or {})
            ends = {k: v.isoformat() for k, v in (until or {}).items()}
            self._touches.append((",".join(ids), at.isoformat(), ends))
            if len(self._touches) >= TOUCH_BATCH:
                # A read must not fail on a busy writer: the counts wait for a later call.
                wait = min(self.settings.lock_timeout, RELOAD_WAIT)
                with contextlib.suppress(StoreLockedError), self._locked(timeout=wait):
                    self._catch_up(locked=True)
                    self._append(self._drain_touches())

    def _drain_touches(self) -> list[dict[str, Any]]:
        touches, self._touches = self._touches, []
        self._touches_since_snapshot += len(touches)
        # Already applied locally; the log carries them to other processes and restarts.
        return [
            {
                "op": "touch",
                "ids": ids.split(","),
                "at": at,
                "w": self.settings.writer,
                **({"until": ends} if ends else {}),
            }
            for ids, at, ends in touches
        ]

    def _compact(self) -> None:
        """Write a new snapshot and start a new log (under the lock, nothing pending)."""
        if self._pending:
            return
        generation = self.generation + 1
        self.storage.save(self.graph, generation)
        self.generation = generation
        self.position = 0
        self._stamp = self.storage.stamp()
        self._ops_since_snapshot = 0
        self._touches_since_snapshot = 0
        self._snapshot_size = len(self.graph)

    # -- reading ---------------------------------------------------------------------------
    def refresh(self, *, wait: bool = False) -> None:
        """See what other processes wrote for this entity (one stat when nothing changed).

        The graph and keyword index catch up at once. Reloading the vector index takes
        the entity's lock; while another process keeps it busy writing, a read does not
        wait for it and the reload is retried on the next call. ``wait=True`` (before
        planning a write against the index) waits up to the lock timeout like a write.
        """
        with self.mu:
            self._catch_up(locked=False)
            if self.vectors.stale:
                timeout = None if wait else min(self.settings.lock_timeout, RELOAD_WAIT)
                try:
                    with self._locked(timeout=timeout):
                        self._catch_up(locked=True)
                except StoreLockedError:
                    if wait:
                        raise
                    log.debug("shard %s: busy; the vectors reload on a later call", self.entity_id)

    @property
    def pending_count(self) -> int:
        """Logged changes not yet confirmed in the vector index."""
        return len(self._pending)

    def stats(self) -> EntityStats:
        """This shard's figures for the catalog (one pass over its memories)."""
        return EntityStats.of(self.graph, self.generation, self.position)

    # -- closing ---------------------------------------------------------------------------
    def flush(self, *, snapshot: bool) -> None:
        """Log pending recall counts; with ``snapshot``, write one if the log holds changes."""
        with self.mu:
            if not self._touches and not (snapshot and self._ops_since_snapshot):
                return
            with self._locked():
                self._catch_up(locked=True)
                if self._touches:
                    self._append(self._drain_touches())
                # Recall counts replay cheaply: a log holding only those (say, of a
                # read-only session) does not need a new snapshot.
                if snapshot and (
                    self._ops_since_snapshot
                    or self._touches_since_snapshot >= self.settings.compact_every
                ):
                    self._compact()
