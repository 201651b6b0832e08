"""Repairing a damaged store from the copies it keeps of every memory, shard by shard.

The vocabulary: a *repair* (`repair_files`, [`memtrellis.repair_store`][memtrellis.repair_store],
``memtrellis repair``) is asked for, and rebuilds each damaged copy from the other (the
graph *rebuilt from* the index, or the index from the graph), moving damaged files aside;
its report is `StoreRepairReport`. *Recovery* is what every open does by itself from the
log after a crash (`memtrellis.store.RecoveryReport`); it needs no repair.

Every memory lives twice in a store: as a node of its entity's shard (``graph.json`` plus
the write-ahead log in ``shards/xx/<hash>/``) and as a full item copy in the metadata of
its vector in the entity's Chroma collection (``chroma/``). `repair_files` finds every
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

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from filelock import FileLock

from memtrellis._deprecated import module_aliases
from memtrellis.errors import (
    EmbeddingMismatchError,
    InvalidInputError,
    StoreCorruptError,
)
from memtrellis.store._corrupt import NOTHING_CHANGED, repair_command
from memtrellis.store._files import holding
from memtrellis.store._repair_found import (
    CATALOG,
    Catalog,
    Index,
    copy_for_dry_run,
    discover,
    open_index,
    read_catalog,
    read_manifest_for_repair,
    recorded_embedder,
)
from memtrellis.store._repair_report import StoreRepairReport
from memtrellis.store._repair_shard import (
    LOST_EDGES,
    LOST_HISTORY,
    LOST_RECALLS,
    IndexSide,
    ShardRepair,
    aside,
    holds_files,
    next_generation,
    read_shard,
)
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.manifest import EmbedderInfo, Manifest, write_manifest
from memtrellis.store.shard import RecoveryReport, Shard, ShardSettings
from memtrellis.store.shardfiles import SHARDS, FileShardStorage
from memtrellis.store.storage import EntityStats
from memtrellis.store.vectors import VectorIndex

__all__ = ["Source", "StoreRepairReport", "recorded_embedder", "repair_files"]

__getattr__ = module_aliases(__name__, {"rebuild_store": f"{__name__}:repair_files"})

EmbedFn = Callable[[list[str]], list[list[float]]]
#: ``"auto"``: rebuild whichever side is damaged; ``"index"``: rebuild the graph from the
#: index even if graph.json reads; ``"graph"``: rebuild the index from the graph.
Source = Literal["auto", "index", "graph"]


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
    with holding(lock, timeout, what, "; close every program using the store, then repair it"):
        yield


def repair_files(
    path: Path,
    *,
    embedder: EmbedderInfo | None = None,
    embed: EmbedFn | None = None,
    source: Source = "auto",
    dry_run: bool = False,
    lock_timeout: float = 60.0,
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
        >>> report = repair_files(path, embedder=info)
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
        manifest, salvaged = read_manifest_for_repair(path, report)
        chroma, catalog_file = path / "chroma", path / CATALOG
        if dry_run:
            chroma, catalog_file = copy_for_dry_run(path, Path(scratch))
        index = open_index(chroma, report)
        try:
            catalog = read_catalog(catalog_file, report)
            names = list(dict.fromkeys([*catalog.live, *index.entities]))
            entities = discover(path, names, report, stamp, dry_run)
            planner = _Planner(path, catalog, source, report)
            # Pass 1, read-only: dry-run figures, or the checks before anything is written.
            _check_all(planner, entities, index, tally=dry_run)
            info = _embedder_info(manifest, salvaged, embedder, index.dimension, report)
            report.manifest_written = manifest is None
            report.catalog_written = not catalog.ok
            if dry_run:
                return report
            report.damaged = dict(planner.first_damage)
            work = _Writer(path, stamp, report, embed, lock_timeout)
            try:
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
            except StoreCorruptError as exc:
                raise _cut_short(exc, report) from exc
            return report
        finally:
            index.close()


def _cut_short(exc: StoreCorruptError, report: StoreRepairReport) -> StoreCorruptError:
    """``exc``, met after the repair began writing, saying what it had written."""
    moved = ", ".join(f"{a} -> {b}" for a, b in report.moved_aside.items()) or "nothing"
    message = str(exc).split(" Run `")[0].replace(f" {NOTHING_CHANGED}", "")
    return StoreCorruptError(
        f"the repair of {report.path} stopped after it had begun writing "
        f"({report.shards_repaired} shard(s) repaired, moved aside: {moved}): {message}. "
        f"Run `{exc.command or repair_command(Path(report.path))}` again: a repair cut "
        "off is finished by the next one.",
        path=exc.path,
        command=exc.command or repair_command(Path(report.path)),
    )


@dataclass
class _Planner:
    """Works out one entity's repair from what survives (nothing is written)."""

    path: Path
    catalog: Catalog
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


def _check_all(planner: _Planner, entities: dict[str, Path], index: Index, *, tally: bool) -> None:
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
    report.entities_with_memories += len(graph.entity_ids())
    report.subjects += graph.subject_count()
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

    def index(self, index: Index, *, rebuild_all: bool) -> tuple[Index, bool]:
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
        return Index(vectors=VectorIndex(directory), ok=False), True

    def shards(
        self, planner: _Planner, entities: dict[str, Path], index: Index, *, fresh: bool
    ) -> dict[str, EntityStats]:
        """Pass 2: per entity, under its lock, read again, repair, and reopen it as the
        store would; returns every shard's figures."""
        vectors = index.vectors
        assert vectors is not None
        settings = ShardSettings(
            vectors=vectors,
            embed=self.embed or _no_embedder,
            writer=uuid.uuid4().hex[:12],
            recovery=RecoveryReport(),
            lock_timeout=self.lock_timeout,
            store_label=str(self.path),
            verify=False,  # it is what is being rebuilt; the next open checks it
        )
        stats: dict[str, EntityStats] = {}
        for entity_id, directory in entities.items():
            storage = FileShardStorage(self.path, entity_id)
            existed = directory.exists()
            with storage.lock(self.lock_timeout):
                side = index.side(entity_id, self.report) if not fresh else IndexSide(ok=False)
                repair = planner.plan(entity_id, directory, side)
                if repair is None:
                    if not existed:  # made by taking the lock: nothing to keep
                        shutil.rmtree(directory, ignore_errors=True)
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
    found: Catalog,
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
