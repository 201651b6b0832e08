"""Rebuilding a damaged store from the copies it keeps of every memory.

Every memory lives twice in a store: as a node of the graph (``graph.json`` plus the
write-ahead log) and as a full item copy in the metadata of its vector in the index
(``chroma/``). `rebuild_store` reads whatever survives of each, decides which side
is damaged, and rebuilds it from the other:

* graph lost (``graph.json`` cut short or garbled): memory nodes come back from the index
  copies, then the log is replayed on top; ``mentions`` edges come back from each item's
  entities and ``supersedes`` edges from ``superseded_by``. ``supports``, ``contradicts``,
  ``extends`` and ``follows`` edges and the history events written before the last
  snapshot exist only in the graph: those still in the log come back, the others are
  reported as lost.
* index lost (``chroma/`` missing or unreadable): the directory is moved aside and every
  memory of the graph is embedded again.
* log garbled: its readable records are replayed, the unreadable ones counted; a memory
  whose record was unreadable comes back from the index when its vector was written.
* manifest missing or garbled: written again from what the store holds.

Index copies that the graph lacks are restored into it (never dropped), unless the log
deleted them. Damaged files are renamed ``<name>.corrupt-<UTC timestamp>``, never deleted,
and the graph is saved as a new snapshot generation (a readable ``graph.json`` that
``--from-index`` replaces is kept as ``graph.json.replaced-<UTC timestamp>``).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
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
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.manifest import EmbedderInfo, Manifest, read_manifest, write_manifest
from memtrellis.store.vectors import VectorIndex
from memtrellis.store.wal import replay_record, wal_path
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem, utcnow

__all__ = ["Source", "StoreRepairReport", "rebuild_store", "recorded_embedder"]

EmbedFn = Callable[[list[str]], list[list[float]]]
#: ``"auto"``: rebuild whichever side is damaged; ``"index"``: rebuild the graph from the
#: index even if graph.json reads; ``"graph"``: rebuild the index from the graph.
Source = Literal["auto", "index", "graph"]

_WAL = re.compile(r"^wal-(\d+)\.jsonl$")
_BATCH = 256
_LOST_EDGES = (
    "supports, contradicts, extends and follows edges not in the log "
    "(they are kept only in graph.json)"
)
_LOST_HISTORY = "history events written before the last snapshot (kept only in graph.json)"
_LOST_RECALLS = "recall counts since each memory last changed (kept only in graph.json)"


@dataclass
class StoreRepairReport:
    """What `rebuild_store` found damaged, what it restored and what is lost.

    Counts describe the store after the repair (or as it would be, with ``dry_run``).
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
            f"manifest {'rewritten' if self.manifest_written else 'kept'}",
        ]
        out += [f"moved aside: {src} -> {dst}" for src, dst in self.moved_aside.items()]
        out += [f"lost: {what}" for what in self.lost] or ["lost: nothing"]
        return out

    def summary(self) -> str:
        """The report as one multi-line text."""
        return "\n".join(self.lines())


@dataclass
class _Found:
    """What survives on disk, read without writing anything."""

    manifest: Manifest | None = None
    salvaged_embedder: EmbedderInfo | None = None
    snapshot: MemoryGraph | None = None
    generation: int = 0
    index: dict[str, MemoryItem] = field(default_factory=dict)
    index_ok: bool = False
    dimension: int | None = None  # of the vectors in the index, when it holds any
    logs: list[tuple[int, Path]] = field(default_factory=list)


def _aside(target: Path, stamp: str, why: str = "corrupt") -> Path:
    return target.with_name(f"{target.name}.{why}-{stamp}")


def _salvage_embedder(raw: bytes) -> EmbedderInfo | None:
    # A garbled manifest often still holds the embedder's name and dimension in clear.
    text = raw.decode("utf-8", "replace")
    model = re.search(r'"model_id"\s*:\s*"([^"]+)"', text)
    dimension = re.search(r'"dimension"\s*:\s*(\d+)', text)
    if model and dimension and int(dimension.group(1)) > 0:
        return EmbedderInfo(model_id=model.group(1), dimension=int(dimension.group(1)))
    return None


def recorded_embedder(path: Path) -> EmbedderInfo | None:
    """The embedder the manifest of the store at ``path`` names, even a garbled one."""
    target = path / "manifest.json"
    try:
        manifest = read_manifest(target)
    except StoreCorruptError:
        return _salvage_embedder(target.read_bytes())
    return manifest.embedder if manifest is not None else None


def _read_manifest(path: Path, found: _Found, report: StoreRepairReport) -> None:
    target = path / "manifest.json"
    try:
        found.manifest = read_manifest(target)
    except StoreCorruptError as exc:
        report.damaged[target.name] = str(exc).split(". Nothing was changed")[0]
        found.salvaged_embedder = _salvage_embedder(target.read_bytes())
        return
    if found.manifest is None:
        report.damaged[target.name] = "missing"


def _read_snapshot(path: Path, found: _Found, report: StoreRepairReport, source: Source) -> None:
    target = path / "graph.json"
    if not target.exists():
        never_compacted = (
            found.manifest.generation == 0
            if found.manifest is not None
            else wal_path(path, 0).exists()  # a compaction removes the log it replaces
        )
        if never_compacted:
            found.snapshot = MemoryGraph()  # the log holds every change since the start
        else:
            report.damaged[target.name] = "missing"
        return
    try:
        graph, generation = MemoryGraph.load(target)
    except StoreCorruptError as exc:
        cause = exc.__cause__
        report.damaged[target.name] = f"unreadable ({type(cause).__name__}: {str(cause)[:120]})"
        return
    if found.manifest is not None and generation < found.manifest.generation:
        report.damaged[target.name] = (
            f"out of date (generation {generation}, manifest {found.manifest.generation})"
        )
        return
    if source != "index":
        found.snapshot, found.generation = graph, generation


def _read_index(path: Path, found: _Found, report: StoreRepairReport) -> None:
    directory = path / "chroma"
    if not directory.is_dir():
        report.damaged[directory.name] = "missing"
        return
    if report.dry_run:
        # Chroma writes to its files even when only read: a dry run reads a copy.
        with tempfile.TemporaryDirectory(prefix="memtrellis-repair-") as scratch:
            copy = Path(scratch) / directory.name
            shutil.copytree(directory, copy)
            _read_index_at(copy, found, report)
        return
    _read_index_at(directory, found, report)


def _read_index_at(directory: Path, found: _Found, report: StoreRepairReport) -> None:
    vectors: VectorIndex | None = None
    try:
        vectors = VectorIndex(directory)
        for entity_id in vectors.entity_ids():
            copies, unreadable = vectors.item_copies(entity_id)
            found.index.update(copies)
            report.index_unreadable += unreadable
            if copies and found.dimension is None:
                sample = vectors.embeddings(entity_id, [next(iter(copies))])
                found.dimension = len(next(iter(sample.values()), [])) or None
        found.index_ok = True
    except Exception as exc:  # a damaged chroma raises many kinds; all mean "rebuild it"
        cause = exc.__cause__ if isinstance(exc, StoreCorruptError) else exc
        report.damaged["chroma"] = f"unreadable ({type(cause).__name__})"
        found.index.clear()
    finally:
        if vectors is not None:
            vectors.close()


def _read_logs(path: Path, found: _Found) -> None:
    logs = sorted(
        (int(m.group(1)), p) for p in path.glob("wal-*.jsonl") if (m := _WAL.match(p.name))
    )
    if found.snapshot is not None:
        start = found.generation
    elif found.manifest is not None:
        start = found.manifest.generation
    else:
        start = logs[-1][0] if logs else 0
    found.logs = [(gen, p) for gen, p in logs if gen >= start]


def _log_records(log: Path, report: StoreRepairReport) -> list[dict[str, Any]]:
    """The readable records of one log; a torn last line is not damage."""
    lines = log.read_bytes().split(b"\n")
    lines.pop()  # after the last newline: empty, or a torn last record (not damage)
    records: list[dict[str, Any]] = []
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("op"), str):
                raise ValueError("not a log record")
        except ValueError:
            bad += 1
            continue
        records.append(record)
    if bad:
        report.damaged[log.name] = f"{bad} unreadable record(s)"
        report.log_unreadable += bad
    return records


def _replay(
    graph: MemoryGraph, found: _Found, report: StoreRepairReport
) -> tuple[set[str], set[str], set[str]]:
    """Replay the logs; returns ids the log changed, ids it deleted, tenants it dropped."""
    changed: set[str] = set()
    deleted: set[str] = set()
    dropped: set[str] = set()
    from_index = found.snapshot is None
    for _, log in found.logs:
        for record in _log_records(log, report):
            op = record["op"]
            if op == "ok" or (from_index and op == "touch"):
                continue  # touches on top of index copies would count some recalls twice
            try:
                if op == "drop":
                    deleted.update(graph.tenant_ids(str(record["entity_id"])))
                    dropped.add(str(record["entity_id"]))
                replay_record(graph, record)
            except (ValueError, KeyError, TypeError):
                report.log_unreadable += 1
                report.damaged[log.name] = "records that cannot be applied"
                continue
            report.log_records += 1
            if op == "put":
                changed.add(str(record["item"]["id"]))
                deleted.discard(str(record["item"]["id"]))
            elif op == "del":
                deleted.update(str(i) for i in record["ids"])
    return changed, deleted, dropped


def _build_graph(found: _Found, report: StoreRepairReport) -> tuple[MemoryGraph, set[str]]:
    """The repaired graph and the ids whose index entries the log deleted."""
    restored = HistoryEvent(at=utcnow(), action="restored", detail={"from": "index"})
    if found.snapshot is not None:
        graph = found.snapshot
        report.from_snapshot = len(graph)
    else:
        report.graph_source = "index"
        graph = MemoryGraph()
        # Creation order stands in for the order memories were first stored (list order).
        for item in sorted(found.index.values(), key=lambda i: (i.created_at, i.id)):
            graph.put(item.model_copy(deep=True), restored)
        report.lost += [_LOST_EDGES, _LOST_HISTORY, _LOST_RECALLS]
    before = {i.id for i in graph.items()}
    changed, deleted, dropped = _replay(graph, found, report)
    for memory_id, item in found.index.items():
        tenant_gone = item.scope.entity_id in dropped and memory_id not in changed
        gone = memory_id in deleted or tenant_gone
        if memory_id not in graph and not gone:
            graph.put(item.model_copy(deep=True), restored)  # never drop what the index holds
            before.discard(memory_id)
            report.from_index += 1
    if found.snapshot is None:
        report.from_index = sum(1 for i in graph.items() if i.id in found.index)
    report.from_log = sum(1 for i in changed if i in graph)
    for item in list(graph.items()):
        if item.superseded_by is not None:
            graph.add_edge(item.superseded_by, item.id, EdgeKind.SUPERSEDES)
    removed = {i for i in found.index if i not in graph}
    return graph, removed


def _embedder_info(
    found: _Found, given: EmbedderInfo | None, report: StoreRepairReport
) -> EmbedderInfo:
    recorded = found.manifest.embedder if found.manifest else found.salvaged_embedder
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
    if recorded is None and found.dimension is not None and found.dimension != info.dimension:
        raise InvalidInputError(
            f"the index of {report.path} holds {found.dimension}-dimension vectors, but "
            f"{info.model_id!r} makes {info.dimension}: pass the embedder the store was "
            "built with (memtrellis repair --embedder, or embedder=)"
        )
    return info


def _fix_index(
    path: Path,
    graph: MemoryGraph,
    found: _Found,
    removed: set[str],
    embed: EmbedFn | None,
    report: StoreRepairReport,
    stamp: str,
) -> None:
    rebuild = not found.index_ok
    items = list(graph.items())
    if rebuild:
        embed_now = items
        update: list[MemoryItem] = []
    else:
        embed_now = [i for i in items if i.id not in found.index]
        update = [
            i
            for i in items
            if i.id in found.index and found.index[i.id].model_dump() != i.model_dump()
        ]
    report.vectors_written = len(embed_now)
    report.index_updated = len(update)
    report.index_removed = len(removed)
    if report.dry_run or not (embed_now or update or removed or rebuild):
        return
    if embed_now and embed is None:
        raise InvalidInputError(
            f"{len(embed_now)} memories of {path} need embedding: pass the embedder the "
            "store was built with"
        )
    directory = path / "chroma"
    if rebuild and directory.exists():
        moved = _aside(directory, stamp, "corrupt" if "chroma" in report.damaged else "replaced")
        directory.rename(moved)
        report.moved_aside[directory.name] = moved.name
    vectors = VectorIndex(directory)
    try:
        for start in range(0, len(embed_now), _BATCH):
            batch = embed_now[start : start + _BATCH]
            assert embed is not None
            vectors.upsert(batch, embed([i.search_text() for i in batch]))
        if update:
            vectors.update_metadata(update)
        for memory_id in removed:
            vectors.delete(found.index[memory_id].scope.entity_id, [memory_id])
    finally:
        vectors.close()


def rebuild_store(
    path: Path,
    *,
    embedder: EmbedderInfo | None = None,
    embed: EmbedFn | None = None,
    source: Source = "auto",
    dry_run: bool = False,
    lock_timeout: float = 60.0,
) -> StoreRepairReport:
    """Repair the store at ``path`` under its write lock; see the module docstring.

    Args:
        path: The store directory.
        embedder: The embedder the store was built with (checked against the manifest).
        embed: Embeds texts with it; needed when vectors must be written again.
        source: Which side to trust (`Source`).
        dry_run: Work out the report without writing anything.
        lock_timeout: Seconds to wait for the store's write lock.

    Raises:
        InvalidInputError: ``path`` holds no store, or an embedder is needed and missing.
        StoreLockedError: Another process held the lock for longer than ``lock_timeout``.
    """
    if not any((path / name).exists() for name in ("manifest.json", "graph.json", "chroma")):
        raise InvalidInputError(f"{path} holds no memtrellis store")
    report = StoreRepairReport(path=str(path), dry_run=dry_run)
    lock = FileLock(str(path / "store.lock"), timeout=lock_timeout, thread_local=False)
    try:
        lock.acquire()
    except Timeout as exc:
        raise StoreLockedError(
            f"another process held the lock on {path} for longer than {lock_timeout} s; "
            "close every program using the store, then repair it"
        ) from exc
    try:
        found = _Found()
        _read_manifest(path, found, report)
        _read_snapshot(path, found, report, source)
        _read_index(path, found, report)
        if source == "graph":
            if found.snapshot is None:
                raise InvalidInputError(
                    f"the graph of {path} is damaged: it cannot rebuild the index"
                )
            # Every vector is written again; copies the graph lacks are still restored.
            found.index_ok = False
        if found.snapshot is None and not found.index_ok:
            raise StoreCorruptError(
                f"both the graph and the vector index of {path} are damaged: nothing to "
                "rebuild from. Restore the store from a backup or an export.",
                path=str(path),
            )
        info = _embedder_info(found, embedder, report)
        _read_logs(path, found)
        graph, removed = _build_graph(found, report)
        if source == "graph":
            removed = set()
        report.memories = len(graph)
        report.tenants = len(graph.tenants())
        report.entities = graph.entity_count()
        report.edges = graph.edge_counts()
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        _fix_index(path, graph, found, removed, embed, report, stamp)
        generation = max([found.generation, *(g for g, _ in found.logs)]) + 1
        if found.manifest is not None:
            generation = max(generation, found.manifest.generation + 1)
        report.manifest_written = found.manifest is None
        if dry_run:
            return report
        for name in ("graph.json", "manifest.json", *(p.name for _, p in found.logs)):
            target = path / name
            if name in report.damaged and target.exists():
                moved = _aside(target, stamp)
                target.rename(moved)
                report.moved_aside[name] = moved.name
        if found.snapshot is None and (path / "graph.json").exists():
            moved = _aside(path / "graph.json", stamp, "replaced")  # readable (--from-index)
            (path / "graph.json").rename(moved)
            report.moved_aside["graph.json"] = moved.name
        graph.save(path / "graph.json", generation)
        manifest = found.manifest or Manifest(embedder=info)
        manifest.generation = generation
        write_manifest(path / "manifest.json", manifest)
        return report
    finally:
        lock.release()
