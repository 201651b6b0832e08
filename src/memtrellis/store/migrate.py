"""Migrating a store written by memtrellis 0.1 (schema 1) to entity shards (schema 2).

A 0.1 store keeps every entity in one ``graph.json`` and one log ``wal-<gen>.jsonl``;
schema 2 keeps one shard per entity under ``shards/`` (see
`memtrellis.store.shardfiles`) and lists the entities in ``catalog.sqlite3``. The
vectors stay where they are: ``chroma/`` already holds one collection per entity, under
the same names, so nothing is embedded again except a change that a 0.1 process logged
and never wrote to the index.

`migrate_store` does it in steps, holding ``store.lock`` throughout:

1. remove what a crashed migration left (``shards.migrating/``, a ``shards/`` or
   ``catalog.sqlite3`` that a schema-1 manifest does not name);
2. load ``graph.json`` and replay the log, as 0.1 opens a store;
3. roll the changes logged without their ``ok`` forward into the vector index, as the
   next 0.1 process would, and log their ``ok``;
4. write each entity's shard (generation 1) and its catalog row into the staging
   directory ``shards.migrating/`` (``shards/`` and ``catalog.sqlite3`` inside), one
   entity at a time, and flush them to disk;
5. rename them to ``shards/`` and ``catalog.sqlite3``;
6. write the schema-2 manifest: the commit point;
7. delete ``graph.json`` and the logs of the 0.1 layout.

A crash before step 6 leaves a schema-1 store that 0.1 still opens and that the next
migration starts again from scratch (step 3 only ever does what the next 0.1 process
would have done). A crash after it leaves a schema-2 store with old files beside it:
`needs_migration` says so, and `migrate_store` removes them.

The old files are deleted rather than moved aside: forgetting an entity promises that no
file of the store holds its memories afterwards, and a copy of the 0.1 graph kept beside
the shards would keep every entity's memories on disk whatever is forgotten later. They
hold nothing the shards do not: the shards are on disk (fsync'd) before the manifest
names them. To keep a copy, copy the store directory (or ``memtrellis export`` it) first.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from memtrellis.errors import InvalidInputError, StoreCorruptError
from memtrellis.store._corrupt import FROM_GRAPH, FROM_INDEX, damaged
from memtrellis.store._files import flushed_at_exit, fsync_dir, holding
from memtrellis.store._migration_report import (
    SHARD_SCHEMA,
    MigrationReport,
    StoreMigrationError,
    migrate_command,
)
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.manifest import EmbedderInfo, Manifest, write_manifest
from memtrellis.store.shardfiles import SHARDS, FileShardStorage
from memtrellis.store.storage import EntityStats
from memtrellis.store.vectors import VectorIndex
from memtrellis.store.wal import WalReader, append_records, replay_record, wal_path
from memtrellis.types import EdgeKind, MemoryItem, utcnow

__all__ = [
    "SHARD_SCHEMA",
    "MigrationReport",
    "StoreMigrationError",
    "migrate_command",
    "migrate_store",
    "needs_migration",
]

log = logging.getLogger("memtrellis.store")

EmbedFn = Callable[[list[str]], list[list[float]]]
#: The schema of the 0.1 layout (one graph and one log for every entity).
V01_SCHEMA = 1
#: The generation each migrated shard starts at (its snapshot holds everything).
SHARD_GENERATION = 1
STAGING = "shards.migrating"
CATALOG = "catalog.sqlite3"
_CHANGE_OPS = frozenset({"put", "del", "drop"})
_WRITER = "migrate"


# -- reading the manifest ------------------------------------------------------------------
def _raw_manifest(root: Path) -> dict[str, Any] | None:
    target = root / "manifest.json"
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("format") != "memtrellis-store":
            raise ValueError("not a memtrellis store manifest")
        int(data.get("schema_version", V01_SCHEMA))
    except (ValueError, TypeError) as exc:
        raise damaged(target, f"cannot be read ({exc.__class__.__name__})", root) from exc
    return data


def _schema(data: dict[str, Any]) -> int:
    return int(data.get("schema_version", V01_SCHEMA))


def _leftovers(root: Path) -> list[Path]:
    """Files of the 0.1 layout (and a staging directory) in a store."""
    found = [root / "graph.json", root / STAGING]
    found += sorted(root.glob("wal-*.jsonl"))
    found += sorted(root.glob(".graph.json.*.tmp"))
    return [p for p in found if p.exists()]


def needs_migration(path: str | os.PathLike[str]) -> bool:
    """Whether the store at ``path`` was written by 0.1, or is a migrated one whose 0.1
    files a crash kept from being removed (`migrate_store` finishes either).

    ``False`` for a directory without a store, or with an unreadable manifest (opening
    the store reports that).

    Examples:
        >>> import json, tempfile
        >>> from pathlib import Path
        >>> store = Path(tempfile.mkdtemp())
        >>> needs_migration(store)
        False
        >>> manifest = {"format": "memtrellis-store", "schema_version": 1,
        ...             "embedder": {"model_id": "hashing-64", "dimension": 64}}
        >>> _ = (store / "manifest.json").write_text(json.dumps(manifest))
        >>> needs_migration(store)
        True
    """
    root = Path(path)
    try:
        data = _raw_manifest(root)
    except StoreCorruptError:
        return False
    if data is None:
        return False
    schema = _schema(data)
    return schema == V01_SCHEMA or (schema == SHARD_SCHEMA and bool(_leftovers(root)))


# -- the steps -------------------------------------------------------------------------------
@contextmanager
def _store_lock(root: Path, timeout: float, *, held: bool) -> Iterator[None]:
    if held:
        yield
        return
    lock = FileLock(str(root / "store.lock"), timeout=timeout, thread_local=False)
    advice = f"; close every program using the store and run `{migrate_command(root)}`"
    with holding(lock, timeout, root, advice):
        yield


def _remove(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)


def _clear_staging(root: Path) -> None:
    """Step 1: remove what a migration that died before its manifest left behind.

    Under a schema-1 manifest, ``shards/`` and ``catalog.sqlite3`` can only come from
    such a migration (0.1 writes neither).
    """
    for name in (STAGING, SHARDS, CATALOG + "-wal", CATALOG + "-shm", CATALOG):
        if (root / name).exists():
            log.info("store %s: removing %s left by an interrupted migration", root, name)
            _remove(root / name)
    # Manifests are written under the lock we hold: a temporary one is a dead writer's.
    for stale in root.glob(".manifest.json.*.tmp"):
        stale.unlink(missing_ok=True)


@dataclass
class _Loaded:
    """The 0.1 graph with its log replayed, and the changes still owed to the index."""

    graph: MemoryGraph
    log: WalReader
    generation: int
    pending: dict[str, dict[str, Any]]
    torn: bool


def _load_v01(root: Path, manifest: Manifest) -> _Loaded:
    """Step 2: ``graph.json`` and its log, read as a 0.1 process reads them."""
    graph_path = root / "graph.json"
    graph, generation = MemoryGraph.load(graph_path)
    if generation < manifest.generation:
        expects = f"the manifest expects generation {manifest.generation}"
        problem = (
            f"is out of date (generation {generation}; {expects})"
            if graph_path.exists()
            else f"is missing ({expects})"
        )
        raise damaged(graph_path, problem, root, FROM_INDEX)
    # A snapshot newer than the manifest: a compaction died before its manifest. Its log
    # is the (empty) one that follows it, as 0.1 would conclude.
    generation = max(generation, manifest.generation)
    reader = WalReader(wal_path(root, generation))
    pending: dict[str, dict[str, Any]] = {}
    for record in reader.read_new():
        try:
            op = record["op"]
            if op == "ok":
                pending.pop(record["rid"], None)
                continue
            if op in _CHANGE_OPS:
                pending[record["rid"]] = record
            replay_record(graph, record)
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(reader.path, f"holds a record it cannot apply ({exc})", root) from exc
    return _Loaded(graph, reader, generation, pending, reader.torn_tail)


def _roll_forward(
    root: Path, loaded: _Loaded, embed: EmbedFn | None, chroma_url: str | None, model: str
) -> int:
    """Step 3: carry the changes logged without ``ok`` into the vector index.

    Works out first what needs embedding and embeds it in one call, so that a missing or
    failing embedder leaves the index as it was.
    """
    if not loaded.pending:
        return 0
    if chroma_url is None and not (root / "chroma").is_dir():
        raise damaged(root / "chroma", "is missing", root, FROM_GRAPH)
    vectors = VectorIndex(root / "chroma", chroma_url=chroma_url)
    try:
        graph = loaded.graph
        upserts: list[MemoryItem] = []
        for record in loaded.pending.values():
            if record["op"] != "put":
                continue
            item = graph.item(str(record["item"]["id"]))
            if item is None:  # deleted by a later record: nothing to index
                continue
            if record.get("reembed", True) or not vectors.has(item.scope.entity_id, [item.id]):
                upserts.append(item)  # the others keep their vector: metadata only
        embeddings: list[list[float]] = []
        if upserts:
            if embed is None:
                command = migrate_command(root)
                raise StoreMigrationError(
                    f"the store at {root} was written by memtrellis 0.1 and "
                    f"{len(upserts)} of its changes were cut off before they reached the "
                    f"vector index; finishing them needs the embedder the store was built "
                    f"with ({model}). Run `{command}` (with --embedder if the manifest "
                    "names an embedder the command line cannot build), or open the store "
                    "with Memory(path, embedder=<that embedder>). Nothing was changed.",
                    command=command,
                )
            embeddings = embed([item.search_text() for item in upserts])
            if len(embeddings) != len(upserts):
                raise InvalidInputError("the embedder returned a wrong number of vectors")
        by_id = dict(zip((i.id for i in upserts), embeddings, strict=True))
        for record in loaded.pending.values():
            op = record["op"]
            if op == "put":
                item = graph.item(str(record["item"]["id"]))
                if item is None:
                    continue
                if item.id in by_id:
                    vectors.upsert([item], [by_id[item.id]])
                else:
                    vectors.update_metadata([item])
            elif op == "del":
                vectors.delete(str(record["entity_id"]), [str(i) for i in record["ids"]])
            elif op == "drop":
                vectors.drop_entity(str(record["entity_id"]))
    finally:
        vectors.close()
    oks = [{"op": "ok", "rid": rid, "w": _WRITER} for rid in loaded.pending]
    # A torn last line goes first (as 0.1 cuts it under the lock): appended after it, the
    # first ok would be glued to it, an unreadable record in the middle of the log.
    loaded.log.cut_torn_tail()
    append_records(loaded.log.path, oks, durable=True)
    count = len(oks)
    log.info("store %s: rolled %d interrupted 0.1 change(s) forward", root, count)
    loaded.pending = {}
    return count


def _shard_graph(graph: MemoryGraph, entity_id: str, report: MigrationReport) -> MemoryGraph:
    """One entity's part of the 0.1 graph, sharing its item and history objects."""
    shard = MemoryGraph()
    ids = graph.memory_ids(entity_id)
    mentions = EdgeKind.MENTIONS.value
    nodes = graph.g.nodes
    succ = graph.g.succ
    # Subject nodes first with their stored attributes (the name first stored for them),
    # as MemoryGraph.load rebuilds a saved graph.
    for memory_id in ids:
        for node, keys in succ[memory_id].items():
            if mentions in keys and node not in shard.g:
                shard.g.add_node(node, **nodes[node])
    for memory_id in ids:
        data = nodes[memory_id]
        shard.put(data["item"])
        shard.g.nodes[memory_id]["history"] = data["history"]
    for memory_id in ids:
        for target, keys in succ[memory_id].items():
            for key in keys:
                if key == mentions:
                    continue
                if target in shard:
                    shard.add_edge(memory_id, target, EdgeKind(key))
                else:  # 0.1 never links two entities' memories
                    report.cross_entity_edges += 1
                    log.warning(
                        "store: %s edge %s -> %s joins two entities", key, memory_id, target
                    )
    return shard


def _write_shard(staging: Path, entity_id: str, shard: MemoryGraph) -> None:
    FileShardStorage(staging, entity_id).save(shard, generation=SHARD_GENERATION)


def _write_staging(root: Path, graph: MemoryGraph, report: MigrationReport) -> None:
    """Step 4: every entity's shard and catalog row, one entity at a time."""
    staging = root / STAGING
    (staging / SHARDS).mkdir(parents=True)
    edges: dict[str, int] = {kind.value: 0 for kind in EdgeKind}
    # Nothing names the staging directory yet: one flush of the disk at the end instead
    # of four fsyncs per entity (a store of 2,000 entities would spend ~50 s in them).
    with flushed_at_exit():
        catalog = SqliteCatalog(staging / CATALOG)
        try:
            for entity_id in graph.entity_ids():
                shard = _shard_graph(graph, entity_id, report)
                catalog.ensure(entity_id)
                _write_shard(staging, entity_id, shard)
                stats = EntityStats.of(shard, SHARD_GENERATION)
                catalog.record(entity_id, stats)
                report.entities += 1
                report.memories += stats.memories
                for kind, count in stats.edges.items():
                    edges[kind] = edges.get(kind, 0) + count
        finally:
            catalog.close()  # checkpoints its log into catalog.sqlite3
        # Where the flush at the end is not to be trusted, the fan-out directories and
        # the staging root are flushed one by one (the shards flushed their own).
        for fan_out in (staging / SHARDS).iterdir():
            fsync_dir(fan_out)
        fsync_dir(staging / SHARDS)
        fsync_dir(staging)
    report.edges = edges


def _move(source: Path, target: Path) -> None:
    source.replace(target)


def _install_staging(root: Path) -> None:
    """Step 5: the staged shards and catalog take their places."""
    staging = root / STAGING
    _move(staging / SHARDS, root / SHARDS)
    # SQLite's own log first, should one remain, so the database never arrives without it.
    for name in (CATALOG + "-wal", CATALOG + "-shm", CATALOG):
        if (staging / name).exists():
            _move(staging / name, root / name)
    fsync_dir(root)
    shutil.rmtree(staging)


def _commit_manifest(root: Path, manifest: Manifest, generation: int) -> None:
    """Step 6: the schema-2 manifest; from here on the store is in the shard layout."""
    data = manifest.model_dump(mode="json")
    data.update(
        schema_version=SHARD_SCHEMA,
        generation=0,  # each shard counts its own generations now
        migrated_from={
            "schema_version": V01_SCHEMA,
            "generation": generation,
            "at": utcnow().isoformat(),
        },
    )
    write_manifest(root / "manifest.json", Manifest.model_validate(data))


def _remove_leftovers(root: Path) -> list[str]:
    """Step 7 (and the cleanup after a crash past step 6): the 0.1 files go."""
    removed: list[str] = []
    for target in _leftovers(root):
        _remove(target)
        removed.append(target.name)
    if removed:
        fsync_dir(root)
    return removed


# -- the whole migration ---------------------------------------------------------------------
def _migrate_v01(
    root: Path,
    data: dict[str, Any],
    report: MigrationReport,
    *,
    embed: EmbedFn | None,
    embedder: EmbedderInfo | None,
    chroma_url: str | None,
) -> None:
    try:
        manifest = Manifest.model_validate(data)
    except ValueError as exc:
        raise damaged(root / "manifest.json", "cannot be read", root) from exc
    if embedder is not None:
        manifest.check_embedder(embedder.model_id, embedder.dimension, root)
    started = time.perf_counter()
    _clear_staging(root)
    # Loading builds an object per memory that stays alive; the cyclic collector would
    # rescan them all over and over (see Store._load_snapshot).
    collecting = gc.isenabled()
    gc.disable()
    try:
        loaded = _load_v01(root, manifest)
        report.torn_records = int(loaded.torn)
        log.info(
            "store %s: migrating %d memories of the 0.1 layout (loaded in %.1f s)",
            root,
            len(loaded.graph),
            time.perf_counter() - started,
        )
        report.rolled_forward = _roll_forward(
            root, loaded, embed, chroma_url, manifest.embedder.model_id
        )
        _write_staging(root, loaded.graph, report)
        del loaded.graph
    finally:
        if collecting:
            gc.enable()
    _install_staging(root)
    _commit_manifest(root, manifest, loaded.generation)
    report.migrated = True
    report.leftovers_removed = _remove_leftovers(root)


def migrate_store(
    path: str | os.PathLike[str],
    *,
    embed: EmbedFn | None = None,
    embedder: EmbedderInfo | None = None,
    chroma_url: str | None = None,
    lock_timeout: float = 60.0,
    lock_held: bool = False,
) -> MigrationReport:
    """Migrate a store written by memtrellis 0.1 to entity shards; returns the report.

    Crash-safe and idempotent (see the module text): run it again after any failure; on
    a store already migrated it only removes 0.1 files a crash left, and does nothing
    else. Only changes that a 0.1 process logged but never wrote to the vector index
    need ``embed``.

    Args:
        path: The store directory.
        embed: Embeds texts with the embedder the store was built with; needed only when
            a cut-off 0.1 change must be embedded.
        embedder: The embedder ``embed`` stands for, checked against the manifest.
        chroma_url: The Chroma server of a store opened with ``chroma_url=`` (needed
            only to roll changes forward; the server's collections are not moved).
        lock_timeout: Seconds to wait for another process to release the store.
        lock_held: The caller holds ``store.lock`` already (a store being opened).

    Raises:
        InvalidInputError: ``path`` holds no memtrellis store.
        StoreMigrationError: A cut-off change needs ``embed`` and none was given.
        EmbeddingMismatchError: ``embedder`` is not the one the store was built with.
        StoreCorruptError: A file of the store cannot be read (the message names the
            ``memtrellis repair`` command), or the store is newer than this memtrellis.
        StoreLockedError: Another process kept the store locked.

    Examples:
        >>> import json, tempfile
        >>> from pathlib import Path
        >>> store = Path(tempfile.mkdtemp())
        >>> manifest = {"format": "memtrellis-store", "schema_version": 1,
        ...             "embedder": {"model_id": "hashing-64", "dimension": 64}}
        >>> _ = (store / "manifest.json").write_text(json.dumps(manifest))
        >>> report = migrate_store(store)
        >>> report.migrated, report.memories, needs_migration(store)
        (True, 0, False)
        >>> migrate_store(store).migrated  # a second run has nothing to do
        False
    """
    root = Path(path)
    started = time.perf_counter()
    report = MigrationReport(path=str(root))
    if not root.is_dir():
        raise InvalidInputError(f"{root} is not a directory holding a memtrellis store")
    with _store_lock(root, lock_timeout, held=lock_held):
        data = _raw_manifest(root)
        if data is None:
            raise InvalidInputError(f"{root} holds no memtrellis store (no manifest.json)")
        schema = _schema(data)
        if schema == SHARD_SCHEMA:
            report.leftovers_removed = _remove_leftovers(root)
        elif schema == V01_SCHEMA:
            _migrate_v01(root, data, report, embed=embed, embedder=embedder, chroma_url=chroma_url)
        else:
            raise StoreCorruptError(
                f"the store at {root} uses schema {schema}; this memtrellis migrates schema "
                f"{V01_SCHEMA} to {SHARD_SCHEMA}. Upgrade memtrellis."
            )
    report.seconds = time.perf_counter() - started
    if report.migrated:
        log.info("store %s: %s", root, " / ".join(report.lines()[1:]))
    return report
