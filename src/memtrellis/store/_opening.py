"""What opening a store reads first, under its ``store.lock``: the manifest (migrating a
0.1 store) and the catalog from files, or both from PostgreSQL.

Opening reads nothing else: the shards load on their entity's first use
([`Store`][memtrellis.store.Store]).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from memtrellis.errors import InvalidInputError
from memtrellis.store._corrupt import FROM_GRAPH, damaged, embedder_flags
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.manifest import EmbedderInfo, Manifest, read_manifest, write_manifest
from memtrellis.store.shard import EmbedFn
from memtrellis.store.storage import Catalog

if TYPE_CHECKING:
    from memtrellis.store.postgres import PostgresBackend

__all__ = ["open_files", "open_postgres"]

log = logging.getLogger("memtrellis.store")


def _has_data(path: Path) -> bool:
    return any(
        (path / name).exists() for name in ("graph.json", "chroma", "shards", "catalog.sqlite3")
    ) or any(path.glob("wal-*.jsonl"))


def open_files(
    path: Path, embedder: EmbedderInfo, chroma_url: str | None, embed: EmbedFn, lock_timeout: float
) -> tuple[Manifest, Catalog]:
    """The manifest (written for a new store; a 0.1 store migrated) and the SQLite catalog
    of the store directory ``path``.

    Raises:
        StoreCorruptError: The manifest, the Chroma data or the catalog is missing while
            the store holds data.
        EmbeddingMismatchError: The store was built with another embedder.

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> embedder = HashingEmbedder()
        >>> info = EmbedderInfo(model_id=embedder.model_id, dimension=embedder.dimension)
        >>> manifest, catalog = open_files(
        ...     Path(tempfile.mkdtemp()), info, None, embedder.embed_documents, 5.0
        ... )
        >>> manifest.embedder.model_id == embedder.model_id, catalog.entities()
        (True, [])
    """
    manifest = _open_manifest(path, embedder, chroma_url, embed, lock_timeout)
    catalog_path = path / "catalog.sqlite3"
    if not catalog_path.exists() and (path / "shards").is_dir():
        # A new, empty catalog would hide every entity from listings and health.
        raise damaged(catalog_path, "is missing but the store holds shards", path)
    return manifest, SqliteCatalog(catalog_path, timeout=lock_timeout)


def _open_manifest(
    path: Path, embedder: EmbedderInfo, chroma_url: str | None, embed: EmbedFn, lock_timeout: float
) -> Manifest:
    manifest_path = path / "manifest.json"
    flags = embedder_flags(embedder.model_id)
    manifest = read_manifest(manifest_path, flags=flags)
    if manifest is None:
        if _has_data(path):
            # Starting a new store over old data would hide it: repair instead.
            raise damaged(manifest_path, "is missing but the store holds data", path, *flags)
        manifest = Manifest(embedder=embedder)
        write_manifest(manifest_path, manifest)
        return manifest
    manifest.check_embedder(embedder.model_id, embedder.dimension, path)
    if chroma_url is None and not (path / "chroma").is_dir():
        raise damaged(path / "chroma", "is missing", path, FROM_GRAPH)
    from memtrellis.store.migrate import migrate_store, needs_migration

    if needs_migration(path):  # a 0.1 store, or what a crashed migration left
        report = migrate_store(
            path,
            embed=embed,
            embedder=embedder,
            chroma_url=chroma_url,
            lock_timeout=lock_timeout,
            lock_held=True,
        )
        if report.migrated:
            log.warning("store %s: %s", path, report.summary())
        manifest = read_manifest(manifest_path, flags=flags) or manifest
    return manifest


def open_postgres(
    path: Path, postgres_url: str, chroma_url: str | None, embedder: EmbedderInfo
) -> tuple[PostgresBackend, Manifest, Catalog]:
    """The PostgreSQL backend of ``postgres_url``, its manifest (made on first use) and
    catalog; ``path`` names the store in errors.

    Several machines: shards, logs, catalog and locks in PostgreSQL, the vectors in a
    Chroma server; the local directory keeps only this machine's capture spool.

    Raises:
        InvalidInputError: No ``chroma_url``.
        EmbeddingMismatchError: The store was built with another embedder.

    Examples:
        >>> info = EmbedderInfo(model_id="hashing", dimension=8)
        >>> open_postgres(Path("."), "postgresql://localhost/x", None, info)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: postgres_url needs chroma_url: ...
    """
    if chroma_url is None:
        raise InvalidInputError(
            "postgres_url needs chroma_url: the machines that share the graph in "
            "PostgreSQL must share the vectors too (run `chroma run` and pass its URL)"
        )
    from memtrellis.store.postgres import PostgresBackend

    backend = PostgresBackend(postgres_url)
    try:
        proposed = Manifest(embedder=embedder).model_dump_json()
        manifest = Manifest.model_validate_json(backend.manifest(proposed))
        manifest.check_embedder(embedder.model_id, embedder.dimension, path)
    except BaseException:
        backend.close()
        raise
    return backend, manifest, backend.catalog()
