"""Rebuilding a damaged store from the copies it keeps of every memory, shard by shard.

Every memory lives twice in a store: as a node of its entity's shard (``graph.json`` plus
the write-ahead log in ``shards/xx/<hash>/``) and as a full item copy in the metadata of
its vector in the entity's Chroma collection (``chroma/``). `rebuild_store` finds every
entity (the catalog's rows, the shard directories, each named by its ``shard.json``, by the
items of its graph or log, or by a Chroma collection's ``entity_id``; and the collections
themselves), reads whatever survives of each side, decides per entity which side is
damaged, and rebuilds it from the other:

* shard graph lost (``graph.json`` cut short, garbled, out of date or missing): memory
  nodes come back from the index copies, then the log is replayed on top; ``mentions``
  edges come back from each item's entities and ``supersedes`` edges from
  ``superseded_by``. ``supports``, ``contradicts``, ``extends`` and ``follows`` edges and
  the history events written before the last snapshot exist only in the graph: those
  still in the log come back, the others are reported as lost.
* index lost (``chroma/`` missing or unreadable, or one collection unreadable): the
  directory is moved aside (or the collection dropped) and every memory of the graph is
  embedded again.
* log garbled: its readable records are replayed, the unreadable ones counted; a memory
  whose record was unreadable comes back from the index when its vector was written.
* ``shard.json`` garbled: written again, the entity named as above.
* catalog (``catalog.sqlite3``) missing or unreadable: built again from the shards.
* manifest missing or garbled: written again from what the store holds.

Index copies that the graph lacks are restored into it (never dropped), unless the log
deleted them. Damaged files are renamed ``<name>.corrupt-<UTC timestamp>``, never deleted,
and each repaired shard is saved as a new snapshot generation (a readable ``graph.json``
that ``--from-index`` replaces is kept as ``graph.json.replaced-<UTC timestamp>``). Shards
with nothing to repair are left as they are. An entity being forgotten (marked in the
catalog) is left for the next open to finish.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout

from memtrellis.errors import (
    EmbeddingMismatchError,
    InvalidInputError,
    StoreCorruptError,
    StoreLockedError,
)
from memtrellis.store._repair_shard import (
    LOST_EDGES,
    LOST_HISTORY,
    LOST_RECALLS,
    IndexSide,
    ShardRepair,
    aside,
    entity_in_log,
    holds_files,
    next_generation,
    read_pointer,
    read_shard,
)
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.manifest import (
    SCHEMA_VERSION,
    EmbedderInfo,
    Manifest,
    read_manifest,
    write_manifest,
)
from memtrellis.store.shard import RepairReport, Shard, ShardSettings
from memtrellis.store.shardfiles import SHARDS, FileShardStorage, shard_dir
from memtrellis.store.storage import EntityStats
from memtrellis.store.vectors import VectorIndex
from memtrellis.types import MemoryItem

__all__ = ["Source", "StoreRepairReport", "rebuild_store", "recorded_embedder"]

EmbedFn = Callable[[list[str]], list[list[float]]]
#: ``"auto"``: rebuild whichever side is damaged; ``"index"``: rebuild the graph from the
#: index even if graph.json reads; ``"graph"``: rebuild the index from the graph.
Source = Literal["auto", "index", "graph"]
CATALOG = "catalog.sqlite3"


@dataclass
class StoreRepairReport:
    """What `rebuild_store` found damaged, what it restored and what is lost.

    Counts describe the store after the repair (or as it would be, with ``dry_run``),
    summed over every shard. Paths (``damaged``, ``moved_aside``) are relative to the store.

    Examples:
        >>> report = StoreRepairReport(path="store", memories=3, tenants=1)
        >>> report.lines()[3]
        'restored: 3 memories of 1 entities, 0 entity nodes'
    """

    path: str
    dry_run: bool = False
    damaged: dict[str, str] = field(default_factory=dict)
    graph_source: str = "snapshot"
    memories: int = 0
    tenants: int = 0
    entities: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    from_snapshot: int = 0
    from_index: int = 0
    from_log: int = 0
    log_records: int = 0
    log_unreadable: int = 0
    index_unreadable: int = 0
    vectors_written: int = 0
    index_updated: int = 0
    index_removed: int = 0
    manifest_written: bool = False
    moved_aside: dict[str, str] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    #: Entity shards found, and those rewritten (or that would be).
    shards: int = 0
    shards_repaired: int = 0
    #: Entities whose graph came back from the index copies.
    graph_from_index: list[str] = field(default_factory=list)
    catalog_written: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON types (``memtrellis repair --json``)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def lines(self) -> list[str]:
        """The report as text lines, as ``memtrellis repair`` prints it."""
        head = "would restore" if self.dry_run else "restored"
        edges = ", ".join(f"{k} {v}" for k, v in sorted(self.edges.items()) if v) or "none"
        out = [f"store: {self.path}{' (dry run: nothing written)' if self.dry_run else ''}"]
        out += [f"damaged: {name}: {problem}" for name, problem in self.damaged.items()]
        if not self.damaged:
            out.append("damaged: nothing")
        out += [
            f"graph rebuilt from: {self.graph_source}",
            f"{head}: {self.memories} memories of {self.tenants} entities, "
            f"{self.entities} entity nodes",
            f"edges: {edges}",
            f"memories from the snapshot {self.from_snapshot}, from the index "
            f"{self.from_index}, changed by the log {self.from_log}",
            f"log records replayed {self.log_records}, unreadable {self.log_unreadable}; "
            f"unreadable index copies {self.index_unreadable}",
            f"index: vectors embedded {self.vectors_written}, copies updated "
            f"{self.index_updated}, removed {self.index_removed}",
            f"shards: {self.shards} found, {self.shards_repaired} repaired",
            f"manifest {'rewritten' if self.manifest_written else 'kept'}, "
            f"catalog {'rebuilt' if self.catalog_written else 'kept'}",
        ]
        out += [f"moved aside: {src} -> {dst}" for src, dst in self.moved_aside.items()]
        out += [f"lost: {what}" for what in self.lost] or ["lost: nothing"]
        return out

    def summary(self) -> str:
        """The report as one multi-line text."""
        return "\n".join(self.lines())


def _salvage_embedder(raw: bytes) -> EmbedderInfo | None:
    # A garbled manifest often still holds the embedder's name and dimension in clear.
    text = raw.decode("utf-8", "replace")
    model = re.search(r'"model_id"\s*:\s*"([^"]+)"', text)
    dimension = re.search(r'"dimension"\s*:\s*(\d+)', text)
    if model and dimension and int(dimension.group(1)) > 0:
        return EmbedderInfo(model_id=model.group(1), dimension=int(dimension.group(1)))
    return None


def recorded_embedder(path: Path) -> EmbedderInfo | None:
    """The embedder the manifest of the store at ``path`` names, even a garbled one.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> recorded_embedder(Path(tempfile.mkdtemp())) is None  # no manifest
        True
    """
    target = path / "manifest.json"
    try:
        manifest = read_manifest(target)
    except StoreCorruptError:
        return _salvage_embedder(target.read_bytes())
    return manifest.embedder if manifest is not None else None


@dataclass
class _Index:
    """The vector index as read: per-entity sides, or ``ok=False`` when all of it is lost."""

    vectors: VectorIndex | None = None
    ok: bool = False
    entities: list[str] = field(default_factory=list)
    dimension: int | None = None

    def side(self, entity_id: str, report: StoreRepairReport) -> IndexSide:
        if not self.ok or self.vectors is None:
            return IndexSide(ok=False)
        try:
            copies, unreadable = self.vectors.item_copies(entity_id)
        except Exception as exc:  # one damaged collection: rebuild that one
            report.damaged[f"chroma ({entity_id})"] = f"unreadable ({type(exc).__name__})"
            return IndexSide(ok=False)
        report.index_unreadable += unreadable
        if copies and self.dimension is None:
            sample = self.vectors.embeddings(entity_id, [next(iter(copies))])
            self.dimension = len(next(iter(sample.values()), [])) or None
        return IndexSide(copies=copies, unreadable=unreadable)

    def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
            self.vectors = None


def _open_index(directory: Path, report: StoreRepairReport) -> _Index:
    index = _Index()
    if not directory.is_dir():
        report.damaged["chroma"] = "missing"
        return index
    try:
        index.vectors = VectorIndex(directory)
        index.entities = index.vectors.entity_ids()
        index.ok = True
    except Exception as exc:  # a damaged chroma raises many kinds; all mean "rebuild it"
        cause = exc.__cause__ if isinstance(exc, StoreCorruptError) else exc
        report.damaged["chroma"] = f"unreadable ({type(cause).__name__})"
        index.close()
    return index


@dataclass
class _Catalog:
    """The catalog as read: live rows with their figures, entities being forgotten."""

    live: dict[str, EntityStats] = field(default_factory=dict)
    dropping: list[str] = field(default_factory=list)
    ok: bool = False


def _read_catalog(target: Path, report: StoreRepairReport) -> _Catalog:
    found = _Catalog()
    if not target.exists():
        if (target.parent / SHARDS).is_dir():
            report.damaged[CATALOG] = "missing"
        return found
    try:
        catalog = SqliteCatalog(target, timeout=5.0)
        try:
            # A damaged page can hide from a plain read (an index, a row not read).
            with catalog._using() as db:
                verdict = db.execute("PRAGMA quick_check").fetchall()
            if verdict != [("ok",)]:
                raise sqlite3.DatabaseError("; ".join(str(row[0]) for row in verdict[:3]))
            found.live, found.dropping = catalog.all(), catalog.dropping()
        finally:
            catalog.close()
        found.ok = True
    except (StoreCorruptError, sqlite3.DatabaseError) as exc:
        cause = exc.__cause__ if isinstance(exc, StoreCorruptError) else exc
        report.damaged[CATALOG] = f"unreadable ({type(cause).__name__}: {str(cause)[:120]})"
    return found


def _shard_dirs(root: Path) -> Iterator[Path]:
    for fan in sorted((root / SHARDS).glob("*")):
        if fan.is_dir() and len(fan.name) == 2:
            yield from sorted(d for d in fan.iterdir() if d.is_dir() and "." not in d.name)


def _graph_entity(directory: Path) -> str | None:
    """The entity the items of a shard's snapshot belong to (read loosely), if any."""
    raw = (directory / "graph.json").read_bytes() if (directory / "graph.json").exists() else b""
    found = re.search(rb'"scope":\{"entity_id":"((?:[^"\\]|\\.)*)"', raw)
    if found is None:
        return None
    try:
        return str(json.loads(b'"' + found.group(1) + b'"'))
    except ValueError:
        return None


def _discover(
    root: Path, names: list[str], report: StoreRepairReport, stamp: str, dry_run: bool
) -> dict[str, Path]:
    """Every entity with a shard directory or a name (catalog, index), by its directory."""
    by_dir = {shard_dir(root, name): name for name in names}
    entities = {name: shard_dir(root, name) for name in names}
    for directory in _shard_dirs(root):
        pointer, _ = read_pointer(directory)
        candidates = [
            pointer["entity_id"] if pointer else None,
            by_dir.get(directory),
            _graph_entity(directory),
            *(entity_in_log(log) for log in sorted(directory.glob("wal-*.jsonl"))),
        ]
        named = [c for c in candidates if c is not None and shard_dir(root, c) == directory]
        if named:
            entities.setdefault(named[0], directory)
            continue
        if not holds_files(directory):
            continue  # only a lock: nothing was ever written there
        rel = directory.relative_to(root).as_posix()
        report.damaged[rel] = "names no entity (no readable shard.json, item or collection)"
        if not dry_run:
            moved = aside(directory, stamp)
            directory.rename(moved)
            report.moved_aside[rel] = moved.relative_to(root).as_posix()
    return entities


def _embedder_info(
    manifest: Manifest | None,
    salvaged: EmbedderInfo | None,
    given: EmbedderInfo | None,
    dimension: int | None,
    report: StoreRepairReport,
) -> EmbedderInfo:
    recorded = manifest.embedder if manifest else salvaged
    if recorded is not None and given is not None and recorded != given:
        raise EmbeddingMismatchError(
            f"the store at {report.path} was built with embedder {recorded.model_id!r} "
            f"({recorded.dimension} dimensions), not {given.model_id!r}; repair it with that one"
        )
    info = recorded or given
    if info is None:
        raise InvalidInputError(
            f"the manifest of {report.path} is lost and names no embedder: pass the embedder "
            "the store was built with (memtrellis repair --embedder, or embedder=)"
        )
    if recorded is None and dimension is not None and dimension != info.dimension:
        raise InvalidInputError(
            f"the index of {report.path} holds {dimension}-dimension vectors, but "
            f"{info.model_id!r} makes {info.dimension}: pass the embedder the store was "
            "built with (memtrellis repair --embedder, or embedder=)"
        )
    return info


@contextmanager
def _locked(lock: FileLock, what: Path, timeout: float) -> Iterator[None]:
    try:
        lock.acquire(timeout=timeout)
    except Timeout as exc:
        raise StoreLockedError(
            f"another process held the lock on {what} for longer than {timeout} s; "
            "close every program using the store, then repair it"
        ) from exc
    try:
        yield
    finally:
        lock.release()


def _read_manifest(path: Path, report: StoreRepairReport) -> tuple[Manifest | None, Any]:
    target = path / "manifest.json"
    try:
        manifest = read_manifest(target)
    except StoreCorruptError as exc:
        if exc.command is None:  # written by a newer memtrellis: nothing to repair
            raise
        report.damaged[target.name] = str(exc).split(". Nothing was changed")[0]
        return None, _salvage_embedder(target.read_bytes())
    if manifest is None:
        report.damaged[target.name] = "missing"
    elif manifest.schema_version < SCHEMA_VERSION:
        raise InvalidInputError(
            f"{path} is a schema-{manifest.schema_version} store: open it with this "
            "memtrellis (or run `memtrellis migrate`) to migrate it, then repair it"
        )
    return manifest, None


def _copy_for_dry_run(path: Path, scratch: Path) -> tuple[Path, Path]:
    """Copies of ``chroma/`` and the catalog: Chroma and SQLite write even when reading."""
    chroma = path / "chroma"
    if chroma.is_dir():
        shutil.copytree(chroma, scratch / chroma.name)
    for name in (CATALOG, f"{CATALOG}-wal", f"{CATALOG}-shm"):
        if (path / name).is_file():
            shutil.copy2(path / name, scratch / name)
    return scratch / "chroma", scratch / CATALOG


def rebuild_store(
    path: Path,
    *,
    embedder: EmbedderInfo | None = None,
    embed: EmbedFn | None = None,
    source: Source = "auto",
    dry_run: bool = False,
    lock_timeout: float = 60.0,
    merged_count: Callable[[MemoryItem], int] | None = None,
) -> StoreRepairReport:
    """Repair the store at ``path`` under its locks; see the module docstring.

    Shards are read and repaired one at a time (a first pass, read-only, makes sure that
    no entity has lost both its graph and its vectors before anything is written), each
    under its own lock, so only one entity's graph is held in memory at once.

    Args:
        path: The store directory.
        embedder: The embedder the store was built with (checked against the manifest).
        embed: Embeds texts with it; needed when vectors must be written again.
        source: Which side to trust (`Source`).
        dry_run: Work out the report without writing anything.
        lock_timeout: Seconds to wait for the store's lock and each shard's.
        merged_count: How many duplicates were merged into a memory, for the catalog's
            figures (the lifecycle's count; `memtrellis.repair_store` passes it).

    Raises:
        InvalidInputError: ``path`` holds no store, or an embedder is needed and missing.
        StoreCorruptError: An entity's graph and its vectors are both damaged.
        StoreLockedError: Another process held a lock for longer than ``lock_timeout``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> path = Path(tempfile.mkdtemp()) / "store"
        >>> with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        ...     _ = memory.add("Ana lives in Porto")
        >>> (path / "catalog.sqlite3").unlink()  # lost
        >>> info = EmbedderInfo(model_id="hashing-64", dimension=64)
        >>> report = rebuild_store(path, embedder=info)
        >>> report.damaged, report.memories, report.catalog_written
        ({'catalog.sqlite3': 'missing'}, 1, True)
    """
    markers = ("manifest.json", SHARDS, CATALOG, "chroma")
    if not any((path / name).exists() for name in markers):
        raise InvalidInputError(f"{path} holds no memtrellis store")
    report = StoreRepairReport(path=str(path), dry_run=dry_run)
    lock = FileLock(str(path / "store.lock"), thread_local=False)
    with (
        _locked(lock, path, lock_timeout),
        tempfile.TemporaryDirectory(prefix="memtrellis-repair-") as scratch,
    ):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        manifest, salvaged = _read_manifest(path, report)
        chroma, catalog_file = path / "chroma", path / CATALOG
        if dry_run:
            chroma, catalog_file = _copy_for_dry_run(path, Path(scratch))
        index = _open_index(chroma, report)
        try:
            catalog = _read_catalog(catalog_file, report)
            names = list(dict.fromkeys([*catalog.live, *index.entities]))
            entities = _discover(path, names, report, stamp, dry_run)
            planner = _Planner(path, catalog, source, report)
            # Pass 1, read-only: dry-run figures, or the checks before anything is written.
            _check_all(planner, entities, index, tally=dry_run)
            info = _embedder_info(manifest, salvaged, embedder, index.dimension, report)
            report.manifest_written = manifest is None
            report.catalog_written = not catalog.ok
            if dry_run:
                return report
            report.damaged = dict(planner.first_damage)
            work = _Writer(path, stamp, report, embed, lock_timeout, merged_count)
            index, fresh = work.index(index, rebuild_all=source == "graph")
            stats = work.shards(planner, entities, index, fresh=fresh)
            _write_catalog(path, catalog, stats, stamp, report)
            if manifest is None:
                target = path / "manifest.json"
                if target.exists():
                    moved = aside(target, stamp)
                    target.rename(moved)
                    report.moved_aside[target.name] = moved.name
                write_manifest(target, Manifest(embedder=info))
            return report
        finally:
            index.close()


@dataclass
class _Planner:
    """Works out one entity's repair from what survives (nothing is written)."""

    path: Path
    catalog: _Catalog
    source: Source
    report: StoreRepairReport
    first_damage: dict[str, str] = field(default_factory=dict)

    def plan(self, entity_id: str, directory: Path, side: IndexSide) -> ShardRepair | None:
        """The entity's repair, ``None`` when it has nothing anywhere (or is being
        forgotten: the next open finishes that).

        Raises:
            StoreCorruptError: Its graph and its vectors are both damaged.
            InvalidInputError: ``source="graph"`` and its graph is damaged.
        """
        if entity_id in self.catalog.dropping:
            return None
        if not holds_files(directory) and not side.copies:
            recorded = self.catalog.live.get(entity_id)
            if side.ok or recorded is None or not recorded.memories:
                return None  # nothing of it was ever written
        found = read_shard(self.path, entity_id, directory, keep_snapshot=self.source != "index")
        if self.source == "graph" and not found.graph_ok:
            raise InvalidInputError(
                f"the graph of entity {entity_id!r} in {self.path} is damaged: it cannot "
                "rebuild the index"
            )
        rebuild_index = self.source == "graph" or not side.ok
        if rebuild_index and not found.graph_ok:
            raise StoreCorruptError(
                f"both the graph and the vector index of entity {entity_id!r} in {self.path} "
                "are damaged: nothing to rebuild it from. Restore the store from a backup or "
                "an export.",
                path=str(directory),
            )
        repair = ShardRepair(found, side, rebuild_index=rebuild_index)
        repair.build()
        self.report.damaged.update(found.damaged)
        return repair


def _check_all(planner: _Planner, entities: dict[str, Path], index: _Index, *, tally: bool) -> None:
    """Plan every entity once, one at a time; with ``tally``, sum up the report."""
    report = planner.report
    unreadable = report.index_unreadable
    for entity_id, directory in entities.items():
        repair = planner.plan(entity_id, directory, index.side(entity_id, report))
        if repair is not None and tally:
            _tally(report, entity_id, repair)
    planner.first_damage = dict(report.damaged)
    if not tally:
        report.index_unreadable = unreadable  # counted again by the pass that writes
    _lost(report)


def _tally(report: StoreRepairReport, entity_id: str, repair: ShardRepair) -> None:
    graph = repair.graph
    report.memories += len(graph)
    report.tenants += len(graph.tenants())
    report.entities += graph.entity_count()
    for kind, count in graph.edge_counts().items():
        report.edges[kind] = report.edges.get(kind, 0) + count
    for name, count in repair.tally.items():
        setattr(report, name, getattr(report, name) + count)
    report.vectors_written += len(repair.embed_now)
    report.index_updated += len(repair.update)
    report.index_removed += len(repair.removed)
    report.shards += 1
    report.shards_repaired += repair.changes_anything
    if repair.graph_from_index:
        report.graph_from_index.append(entity_id)


def _lost(report: StoreRepairReport) -> None:
    report.lost = []
    if report.graph_from_index:
        report.graph_source = "index"
        which = ", ".join(report.graph_from_index)
        for what in (LOST_EDGES, LOST_HISTORY, LOST_RECALLS):
            report.lost.append(f"{what}; entities: {which}")


def _no_embedder(texts: list[str]) -> list[list[float]]:
    raise InvalidInputError("memories need embedding: pass the embedder the store was built with")


@dataclass
class _Writer:
    """Writes the repairs: the index set up first, then each shard under its lock."""

    path: Path
    stamp: str
    report: StoreRepairReport
    embed: EmbedFn | None
    lock_timeout: float
    merged_count: Callable[[MemoryItem], int] | None

    def index(self, index: _Index, *, rebuild_all: bool) -> tuple[_Index, bool]:
        """The index to read and write, and whether it is a new, empty one."""
        directory = self.path / "chroma"
        if index.ok and rebuild_all:
            # Every vector is written again (--from-graph); the old index is kept aside.
            assert index.vectors is not None
            index.vectors.close()
            moved = aside(directory, self.stamp, "replaced")
            shutil.copytree(directory, moved)
            self.report.moved_aside[directory.name] = moved.name
            index.vectors = VectorIndex(directory)
            return index, False
        if index.ok:
            return index, False
        index.close()
        if directory.exists():
            moved = aside(directory, self.stamp)
            directory.rename(moved)
            self.report.moved_aside[directory.name] = moved.name
        return _Index(vectors=VectorIndex(directory), ok=False), True

    def shards(
        self, planner: _Planner, entities: dict[str, Path], index: _Index, *, fresh: bool
    ) -> dict[str, EntityStats]:
        """Pass 2: per entity, under its lock, read again, repair, and reopen it as the
        store would; returns every shard's figures."""
        vectors = index.vectors
        assert vectors is not None
        settings = ShardSettings(
            vectors=vectors,
            embed=self.embed or _no_embedder,
            writer=uuid.uuid4().hex[:12],
            repair=RepairReport(),
            lock_timeout=self.lock_timeout,
            store_label=str(self.path),
            merged_count=self.merged_count or (lambda item: 0),
        )
        stats: dict[str, EntityStats] = {}
        for entity_id, directory in entities.items():
            storage = FileShardStorage(self.path, entity_id)
            with storage.lock(self.lock_timeout):
                side = index.side(entity_id, self.report) if not fresh else IndexSide(ok=False)
                repair = planner.plan(entity_id, directory, side)
                if repair is None:
                    continue
                _tally(self.report, entity_id, repair)
                if repair.changes_anything:
                    repair.write_index(vectors, self.embed, drop_first=not fresh)
                    generation = next_generation(repair.found)
                    repair.write_files(generation, self.stamp, self.report.moved_aside)
                stats[entity_id] = Shard(storage, settings).stats()
        _lost(self.report)
        return stats


def _write_catalog(
    path: Path,
    found: _Catalog,
    stats: dict[str, EntityStats],
    stamp: str,
    report: StoreRepairReport,
) -> None:
    if not found.ok:
        for name in (CATALOG, f"{CATALOG}-wal", f"{CATALOG}-shm"):
            if (path / name).exists():
                moved = aside(path / name, stamp)
                (path / name).rename(moved)
                report.moved_aside[name] = moved.name
    catalog = SqliteCatalog(path / CATALOG)
    try:
        for entity_id in found.live:
            if entity_id not in stats:
                catalog.remove(entity_id)  # nothing of it is left anywhere
        for entity_id, figures in stats.items():
            listed = found.live.get(entity_id)
            if (figures.memories or listed is not None) and listed != figures:
                catalog.ensure(entity_id)
                catalog.record(entity_id, figures)
        for entity_id in found.dropping:
            catalog.mark_dropping(entity_id)
    finally:
        catalog.close()
