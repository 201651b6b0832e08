"""What a store repair reads first: the manifest, the index, the catalog, the shard
directories and the entities they belong to (nothing here writes, but moving aside a
shard directory no entity can be named for)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtrellis.errors import InvalidInputError, StoreCorruptError
from memtrellis.store._chroma_sql import ChromaSqlError, chroma_sql
from memtrellis.store._repair_report import StoreRepairReport
from memtrellis.store._repair_shard import (
    IndexSide,
    aside,
    entity_in_log,
    holds_files,
    read_pointer,
)
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.manifest import SCHEMA_VERSION, EmbedderInfo, Manifest, read_manifest
from memtrellis.store.shardfiles import SHARDS, shard_dir
from memtrellis.store.storage import EntityStats
from memtrellis.store.vectors import VectorIndex

__all__ = [
    "CATALOG",
    "Catalog",
    "Index",
    "copy_for_dry_run",
    "discover",
    "open_index",
    "read_catalog",
    "read_manifest_for_repair",
    "recorded_embedder",
]

CATALOG = "catalog.sqlite3"


def salvage_embedder(raw: bytes) -> EmbedderInfo | None:
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
        return salvage_embedder(target.read_bytes())
    return manifest.embedder if manifest is not None else None


@dataclass
class Index:
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
            if copies:
                # Reads a vector too: a collection whose vectors cannot be read (its HNSW
                # files lost) is rebuilt, not trusted for its metadata alone.
                sample = self.vectors.embeddings(entity_id, [next(iter(copies))])
                if self.dimension is None:
                    self.dimension = len(next(iter(sample.values()), [])) or None
        except Exception as exc:  # one damaged collection: rebuild that one
            report.damaged[f"chroma ({entity_id})"] = f"unreadable ({type(exc).__name__})"
            return IndexSide(ok=False)
        report.index_unreadable += unreadable
        return IndexSide(copies=copies, unreadable=unreadable)

    def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
            self.vectors = None


def _database_problem(directory: Path) -> str | None:
    """What SQLite finds wrong with ``chroma.sqlite3`` (checked in a child process: see
    _chroma_sql), or ``None``. A damaged page can hide from Chroma's reads until a write
    meets it, half-way through the repair."""
    database = directory / "chroma.sqlite3"
    if not database.is_file() or not database.stat().st_size:
        return None  # VectorIndex refuses a lost database itself
    try:
        verdict = chroma_sql("check", database)
    except ChromaSqlError as exc:
        return f"cannot be checked ({str(exc)[-120:]})"
    return None if verdict == ["ok"] else " ".join("; ".join(map(str, verdict)).split())[:160]


def open_index(directory: Path, report: StoreRepairReport) -> Index:
    index = Index()
    if not directory.is_dir():
        report.damaged["chroma"] = "missing"
        return index
    problem = _database_problem(directory)
    if problem is not None:
        report.damaged["chroma"] = f"unreadable (chroma.sqlite3: {problem})"
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
class Catalog:
    """The catalog as read: live rows with their figures, entities being forgotten."""

    live: dict[str, EntityStats] = field(default_factory=dict)
    dropping: list[str] = field(default_factory=list)
    ok: bool = False


def read_catalog(target: Path, report: StoreRepairReport) -> Catalog:
    found = Catalog()
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


def _names_for(directory: Path, by_dir: dict[Path, str]) -> Iterator[str | None]:
    """Who a shard directory may belong to: its shard.json, a name known elsewhere (the
    catalog, a collection), the items of its snapshot, then of its logs."""
    pointer, _ = read_pointer(directory)
    yield pointer["entity_id"] if pointer else None
    yield by_dir.get(directory)
    yield _graph_entity(directory)
    for log in sorted(directory.glob("wal-*.jsonl")):
        yield entity_in_log(log)


def discover(
    root: Path, names: list[str], report: StoreRepairReport, stamp: str, dry_run: bool
) -> dict[str, Path]:
    """Every entity with a shard directory or a name (catalog, index), by its directory."""
    by_dir = {shard_dir(root, name): name for name in names}
    entities = {name: shard_dir(root, name) for name in names}
    for directory in _shard_dirs(root):
        # A name counts only if it hashes to this directory; the costlier reads come last.
        named = next(
            (
                name
                for name in _names_for(directory, by_dir)
                if name is not None and shard_dir(root, name) == directory
            ),
            None,
        )
        if named is not None:
            entities.setdefault(named, directory)
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


def read_manifest_for_repair(path: Path, report: StoreRepairReport) -> tuple[Manifest | None, Any]:
    target = path / "manifest.json"
    try:
        manifest = read_manifest(target)
    except StoreCorruptError as exc:
        if exc.command is None:  # written by a newer memtrellis: nothing to repair
            raise
        report.damaged[target.name] = str(exc).split(". Nothing was changed")[0]
        return None, salvage_embedder(target.read_bytes())
    if manifest is None:
        report.damaged[target.name] = "missing"
    elif manifest.schema_version < SCHEMA_VERSION:
        raise InvalidInputError(
            f"{path} is a schema-{manifest.schema_version} store: open it with this "
            "memtrellis (or run `memtrellis migrate`) to migrate it, then repair it"
        )
    return manifest, None


def copy_for_dry_run(path: Path, scratch: Path) -> tuple[Path, Path]:
    """Copies of ``chroma/`` and the catalog: Chroma and SQLite write even when reading."""
    chroma = path / "chroma"
    if chroma.is_dir():
        shutil.copytree(chroma, scratch / chroma.name)
    for name in (CATALOG, f"{CATALOG}-wal", f"{CATALOG}-shm"):
        if (path / name).is_file():
            shutil.copy2(path / name, scratch / name)
    return scratch / "chroma", scratch / CATALOG
