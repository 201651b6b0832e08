"""Chroma's log stays small: collections get the HNSW sync settings, old ones are brought to them.

Behaviour only; the speed that follows from it is measured by benchmarks/chroma_writes.py.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memtrellis import MemoryItem, Scope
from memtrellis._offline import chroma_settings
from memtrellis.store.vectors import (
    HNSW_CONFIGURATION,
    HNSW_EF_SEARCH,
    HNSW_SYNC_THRESHOLD,
    VectorIndex,
    collection_name,
)
from memtrellis.testing import HashingEmbedder

EMBEDDER = HashingEmbedder(dimension=8)

#: The configuration release 0.1 gave its collections (Chroma's default sync_threshold).
RELEASE_0_1 = {"hnsw": {"space": "cosine", "ef_search": 200, "ef_construction": 200}}


def _items(entity_id: str, texts: list[str]) -> tuple[list[MemoryItem], list[list[float]]]:
    items = [MemoryItem(text=t, scope=Scope(entity_id=entity_id)) for t in texts]
    return items, EMBEDDER.embed_documents(texts)


def _hnsw(client: Any, entity_id: str) -> dict[str, Any]:
    configuration = client.get_collection(collection_name(entity_id)).configuration
    return dict(configuration["hnsw"])


def _queue_rows(directory: Path) -> int:
    uri = f"file:{directory / 'chroma.sqlite3'}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        return int(db.execute("SELECT count(*) FROM embeddings_queue").fetchone()[0])


def _make_0_1_collection(client: Any, entity_id: str, n: int) -> None:
    """A collection as release 0.1 made it, holding ``n`` records."""
    collection = client.create_collection(
        collection_name(entity_id),
        configuration=RELEASE_0_1,
        metadata={"entity_id": entity_id, "memtrellis": 1},
        embedding_function=None,
    )
    items, vectors = _items(entity_id, [f"{entity_id} fact {i}" for i in range(n)])
    collection.upsert(ids=[i.id for i in items], embeddings=vectors)


def _embedded(path: Path) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=str(path), settings=chroma_settings())


def test_a_new_collection_has_the_sync_settings(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path)
    index.upsert(*_items("ana", ["Ana lives in Porto."]))
    index.close()
    client = _embedded(tmp_path)
    hnsw = _hnsw(client, "ana")
    client.close()
    assert hnsw["sync_threshold"] == HNSW_SYNC_THRESHOLD
    assert hnsw["ef_search"] == HNSW_EF_SEARCH
    assert hnsw["space"] == HNSW_CONFIGURATION["space"]


def test_a_0_1_collection_is_brought_to_the_settings_when_opened(tmp_path: Path) -> None:
    client = _embedded(tmp_path)
    _make_0_1_collection(client, "reader", 5)
    _make_0_1_collection(client, "writer", 5)
    assert _hnsw(client, "reader")["sync_threshold"] == 1000  # Chroma's default
    client.close()

    index = VectorIndex(tmp_path)
    assert index.count("reader") == 5  # opened by get_collection
    index.upsert(*_items("writer", ["one more"]))  # opened by get_or_create_collection
    index.close()

    client = _embedded(tmp_path)
    for entity_id in ("reader", "writer"):
        hnsw = _hnsw(client, entity_id)
        assert hnsw["sync_threshold"] == HNSW_SYNC_THRESHOLD
        assert hnsw["ef_search"] == HNSW_EF_SEARCH
        assert hnsw["space"] == "cosine"  # what modify cannot change stays
    client.close()


def test_a_collection_already_up_to_date_is_not_modified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = VectorIndex(tmp_path)
    index.upsert(*_items("ana", ["Ana lives in Porto."]))
    index.refresh()  # a new client: the collection is opened again
    calls: list[Any] = []
    from chromadb.api.models.Collection import Collection

    monkeypatch.setattr(Collection, "modify", lambda self, **kw: calls.append(kw))
    assert index.count("ana") == 1
    index.close()
    assert calls == []


def test_the_log_stays_bounded_under_single_writes_spread_over_many_collections(
    tmp_path: Path,
) -> None:
    # 12 collections, 20 single writes each on average: with Chroma's default settings
    # the log would keep all 240 rows; with the sync settings each collection keeps
    # at most sync_threshold of its rows (Chroma always keeps the last one).
    collections, writes = 12, 240
    index = VectorIndex(tmp_path)
    rng = random.Random(7)
    for n in range(writes):
        entity_id = f"user-{rng.randrange(collections)}"
        index.upsert(*_items(entity_id, [f"{entity_id} said thing {n}"]))
    rows = _queue_rows(tmp_path)
    assert sum(index.count(f"user-{c}") for c in range(collections)) == writes
    index.close()
    assert rows <= collections * HNSW_SYNC_THRESHOLD
    assert rows < writes / 2


def test_a_0_1_store_log_is_purged_once_its_collections_are_written(tmp_path: Path) -> None:
    client = _embedded(tmp_path)
    for c in range(5):
        _make_0_1_collection(client, f"user-{c}", 50)
    client.close()
    assert _queue_rows(tmp_path) == 250  # never purged under Chroma's defaults

    index = VectorIndex(tmp_path)
    for c in range(5):
        index.upsert(*_items(f"user-{c}", ["a new fact"]))
    rows = _queue_rows(tmp_path)
    assert [index.count(f"user-{c}") for c in range(5)] == [51] * 5
    index.close()
    assert rows <= 5 * HNSW_SYNC_THRESHOLD
    assert rows < 250  # the rows 0.1 left were purged


@pytest.mark.server
def test_server_collections_get_the_settings(tmp_path: Path, chroma_server: str) -> None:
    from urllib.parse import urlparse

    import chromadb

    url = urlparse(chroma_server)
    client = chromadb.HttpClient(host=url.hostname, port=url.port, settings=chroma_settings())
    old = "writes-old-" + tmp_path.name  # the server is shared by the session's tests
    new = "writes-new-" + tmp_path.name
    _make_0_1_collection(client, old, 3)

    index = VectorIndex(tmp_path, chroma_url=chroma_server)
    assert index.count(old) == 3
    index.upsert(*_items(new, ["a first fact"]))
    index.close()

    for entity_id in (old, new):
        hnsw = _hnsw(client, entity_id)
        assert hnsw["sync_threshold"] == HNSW_SYNC_THRESHOLD
        assert hnsw["ef_search"] == HNSW_EF_SEARCH
    for entity_id in (old, new):
        client.delete_collection(collection_name(entity_id))


def test_chromas_write_log_is_indexed_by_collection(tmp_path: Path) -> None:
    """Without the index a write walks every collection's unpurged log rows."""
    import contextlib

    index = VectorIndex(tmp_path / "chroma")
    index.close()
    database = tmp_path / "chroma" / "chroma.sqlite3"
    with contextlib.closing(sqlite3.connect(database)) as db:
        db.execute("DROP INDEX memtrellis_queue_by_topic")  # as a Chroma upgrade might
        db.commit()
    index = VectorIndex(tmp_path / "chroma")  # re-created on the next open
    try:
        with contextlib.closing(sqlite3.connect(database)) as db:
            plan = db.execute(
                "EXPLAIN QUERY PLAN SELECT * FROM embeddings_queue WHERE topic = ? AND seq_id > ?",
                ("t", 0),
            ).fetchall()
        assert any("memtrellis_queue_by_topic" in str(row) for row in plan)
    finally:
        index.close()


def _has_log_index(database: Path) -> bool:
    uri = f"file:{database}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return ("memtrellis_queue_by_topic",) in rows


def _unindexed_copy(database: Path, copy: Path) -> None:
    """``database``'s bytes, the index dropped, at ``copy`` (a file no Chroma has open)."""
    import contextlib

    copy.write_bytes(database.read_bytes())
    with contextlib.closing(sqlite3.connect(copy)) as db:
        db.execute("DROP INDEX memtrellis_queue_by_topic")
        db.commit()


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The operations each open sends to the child process on Chroma's file (run for real)."""
    from memtrellis.store import chroma_tuning

    seen: list[str] = []
    real = chroma_tuning.chroma_sql

    def counted(operation: str, database: Path, arg: Any = None, **options: Any) -> Any:
        seen.append(operation)
        return real(operation, database, arg, **options)

    monkeypatch.setattr(chroma_tuning, "chroma_sql", counted)
    return seen


def _written(index: VectorIndex, entity_id: str) -> None:
    items, vectors = _items(entity_id, [f"{entity_id} fact"])
    index.upsert(items, vectors)


def test_a_store_reopened_untouched_is_not_looked_at_again(
    tmp_path: Path, looks: list[str]
) -> None:
    """The child that finds the index runs once per file this process left indexed."""
    index = VectorIndex(tmp_path / "chroma")
    _written(index, "alice")
    index.close()
    assert looks == ["index_log"]  # the new file indexed once Chroma made it
    for entity_id in ("bob", "carol"):
        index = VectorIndex(tmp_path / "chroma")
        _written(index, entity_id)
        index.close()
    assert looks == ["index_log"]
    assert _has_log_index(tmp_path / "chroma" / "chroma.sqlite3")


def test_a_store_written_by_another_client_is_looked_at_again(
    tmp_path: Path, looks: list[str]
) -> None:
    index = VectorIndex(tmp_path / "chroma")
    index.close()
    other = _embedded(tmp_path / "chroma")  # a writer this process's index did not see
    other.create_collection("other", embedding_function=None)
    looks.clear()
    VectorIndex(tmp_path / "chroma").close()
    assert looks == ["index_log"]


@pytest.mark.parametrize("how", ["copied over it", "moved into its place"])
def test_a_restored_chroma_file_is_indexed_again(
    tmp_path: Path, looks: list[str], how: str
) -> None:
    """A file restored without the index, even with its old times and size, gets it back on
    the next open: copied over the file (same inode) or moved into its place (another)."""
    import os
    import shutil

    database = tmp_path / "chroma" / "chroma.sqlite3"
    index = VectorIndex(tmp_path / "chroma")
    _written(index, "alice")
    index.close()
    backup = tmp_path / "backup.sqlite3"
    _unindexed_copy(database, backup)
    left = database.stat()
    if how == "copied over it":
        with database.open("r+b") as out:
            out.write(backup.read_bytes())
            out.truncate()
        assert database.stat().st_ino == left.st_ino
    else:
        shutil.move(backup, database)
    os.utime(database, ns=(left.st_atime_ns, left.st_mtime_ns))  # as `cp -p` restores
    assert not _has_log_index(database)
    looks.clear()
    index = VectorIndex(tmp_path / "chroma")
    try:
        assert looks == ["index_log"]
        assert _has_log_index(database)
        assert index.count("alice") == 1
    finally:
        index.close()
