"""The PostgreSQL shard storage and catalog on a real server, shared by real OS processes.

The server is the pgserver wheel's (a session fixture in conftest.py); every test gets a
database of its own. The other processes are tests/postgres_child.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import PoolTimeout

import zygote
from memtrellis.errors import StoreCorruptError, StoreLockedError
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.pgshard import PostgresShardStorage
from memtrellis.store.postgres import PostgresBackend, PostgresCatalog
from memtrellis.store.shard import RecoveryReport, Shard, ShardSettings
from memtrellis.store.shardfiles import FileShardStorage
from memtrellis.store.storage import Catalog, EntityStats, ShardStorage
from memtrellis.store.vectors import VectorIndex
from memtrellis.testing import HOSTILE_TEXTS, HashingEmbedder
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem, Scope

pytestmark = pytest.mark.postgres

CHILD = Path(__file__).with_name("postgres_child.py")
TABLES = ("memtrellis_log", "memtrellis_snapshots", "memtrellis_shards", "memtrellis_entities")


@pytest.fixture
def backend(postgres_url: str) -> Iterator[PostgresBackend]:
    opened = PostgresBackend(postgres_url)
    try:
        yield opened
    finally:
        opened.close()


def child(*args: str) -> subprocess.Popen[str]:
    return zygote.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line:
        proc.wait(timeout=30)
        pytest.fail(f"child exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
    return line


def finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out.strip()


def rows_of(url: str, entity_id: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {
            table: conn.execute(
                f"SELECT count(*) FROM {table} WHERE entity_id = %s", (entity_id,)
            ).fetchone()[0]
            for table in TABLES
        }


def sample_graph() -> MemoryGraph:
    """Ana's memories with entities, history events and typed edges between them."""
    graph = MemoryGraph()
    scope = Scope(entity_id="ana")
    at = datetime(2025, 9, 14, 18, 30, tzinfo=timezone.utc)
    first = MemoryItem(text="Ana lives in Porto.", scope=scope, entities=["Ana", "Porto"])
    second = MemoryItem(text="Ana moved to Lyon.", scope=scope, entities=["Ana", "Lyon"])
    third = MemoryItem(text=HOSTILE_TEXTS[0] or "x", scope=scope, entities=["Mia"])
    graph.put(first, HistoryEvent(at=at, action="created"))
    graph.put(second, HistoryEvent(at=at, action="created", detail={"source": "chat"}))
    graph.put(third)
    graph.put(first, HistoryEvent(at=at, action="superseded", detail={"by": second.id}))
    graph.add_edge(second.id, first.id, EdgeKind.SUPERSEDES)
    graph.add_edge(third.id, second.id, EdgeKind.SUPPORTS)
    return graph


def canonical(graph: MemoryGraph) -> dict[str, Any]:
    """The node-link data in an order that does not depend on insertion."""
    data = graph.to_node_link(0)
    return {
        "nodes": sorted(data["nodes"], key=lambda node: str(node["id"])),
        "edges": sorted((e["source"], e["target"], e["key"]) for e in data["edges"]),
    }


def test_implementations_match_the_protocols(backend: PostgresBackend) -> None:
    storage: ShardStorage = backend.storage("ana")
    catalog: Catalog = backend.catalog()
    assert isinstance(storage, PostgresShardStorage) and isinstance(catalog, PostgresCatalog)
    assert "secret" not in storage.label and "'ana'" in storage.label


def test_schema_is_created_once_and_reopening_changes_nothing(postgres_url: str) -> None:
    for _ in range(2):
        PostgresBackend(postgres_url).close()
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM memtrellis_schema").fetchall() == [(1,)]
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'memtrellis_%' ORDER BY 1"
        ).fetchall()
    assert [t for (t,) in tables] == sorted([*TABLES, "memtrellis_meta", "memtrellis_schema"])


def test_processes_starting_together_create_the_schema_once(postgres_url: str) -> None:
    start = f"{time.time() + 3:.3f}"
    procs = [child("schema", postgres_url, start) for _ in range(4)]
    assert [finish(proc) for proc in procs] == ["1"] * 4
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM memtrellis_schema").fetchall() == [(1,)]


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    PostgresBackend(postgres_url).close()
    with psycopg.connect(postgres_url) as conn:
        conn.execute("UPDATE memtrellis_schema SET version = 2")
    with pytest.raises(StoreCorruptError, match="newer memtrellis") as caught:
        PostgresBackend(postgres_url)
    assert caught.value.command is None and "version 2" in str(caught.value)


def test_positions_are_record_numbers(backend: PostgresBackend) -> None:
    storage = backend.storage("ana")
    assert storage.read_log(0, 0).records == [] and storage.read_log(0, 0).position == 0
    assert not storage.exists() and storage.generation() == 0
    one = {"op": "put", "item": {"text": "a"}}
    assert storage.append(0, [one, {"op": "ok", "rid": "1"}], durable=True) == 2
    assert storage.append(0, [{"op": "ok", "rid": "2"}], durable=False) == 3
    assert storage.append(0, [], durable=True) == 3
    assert storage.exists()
    tail = storage.read_log(0, 1)
    assert tail.records == [{"op": "ok", "rid": "1"}, {"op": "ok", "rid": "2"}]
    assert (tail.position, tail.torn) == (3, False)
    assert storage.read_log(0, 3).records == [] and storage.read_log(0, 3).position == 3
    assert storage.read_log(1, 0).records == []
    assert storage.cut_torn(0, 3) is False
    assert backend.storage("bob").read_log(0, 0).records == []


def test_hostile_texts_come_back_unchanged_from_the_log(backend: PostgresBackend) -> None:
    storage = backend.storage("ana")
    records = [{"op": "put", "text": text, "n": 0.1} for text in HOSTILE_TEXTS]
    records.append({"op": "put", "text": "nul \x00 and \u2028 and \U0001f600"})
    storage.append(0, records, durable=True)
    assert storage.read_log(0, 0).records == records


def test_a_record_appended_in_one_process_is_read_in_another_after_its_stamp_changed(
    postgres_url: str,
) -> None:
    PostgresBackend(postgres_url).close()
    follower = child("follow", postgres_url, "ana", "3")
    assert first_line(follower) == "ready"
    writer = child("append", postgres_url, "ana", "3")
    assert finish(writer) == "3"
    seen = json.loads(finish(follower))
    assert [r["rid"] for r in seen["records"]] == ["ana-0", "ana-1", "ana-2"]
    assert seen["position"] == 3 and seen["reads"] >= 1


def test_appends_racing_from_two_processes_get_dense_positions(
    backend: PostgresBackend, postgres_url: str
) -> None:
    procs = [child("append", postgres_url, "ana", "40") for _ in range(2)]
    last = sorted(int(finish(proc)) for proc in procs)
    assert last[1] == 80
    records = backend.storage("ana").read_log(0, 0).records
    assert len(records) == 80 and len({r["rid"] for r in records}) == 40


def test_a_second_process_times_out_on_the_lock_and_a_killed_holder_releases_it(
    backend: PostgresBackend, postgres_url: str
) -> None:
    holder = child("hold", postgres_url, "ana")
    try:
        assert first_line(holder) == "locked"
        storage = backend.storage("ana")
        for timeout in (0.0, 0.3):
            with pytest.raises(StoreLockedError, match="'ana'"), storage.lock(timeout=timeout):
                pass
        with backend.storage("bob").lock(timeout=1):  # another entity never waits
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        with storage.lock(timeout=30):
            storage.append(0, [{"op": "ok", "rid": "after"}], durable=True)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.communicate()
    # the pool took back every connection the lock and the timeouts used
    with storage.lock(timeout=1), backend.storage("bob").lock(timeout=1):
        pass


def test_the_lock_is_reentrant_and_serialises_threads(backend: PostgresBackend) -> None:
    storage = backend.storage("ana")
    inside: list[int] = []
    overlap: list[bool] = []

    def write(number: int) -> None:
        with storage.lock(timeout=30), storage.lock(timeout=30):
            overlap.append(bool(inside))
            inside.append(number)
            storage.append(0, [{"op": "ok", "rid": str(number)}], durable=False)
            time.sleep(0.01)
            inside.remove(number)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlap == [False] * 4
    assert storage.read_log(0, 0).position == 4
    other = PostgresBackend(backend.url)
    try:
        with other.storage("ana").lock(timeout=1):  # released at the outer exit
            pass
    finally:
        other.close()


def test_a_snapshot_round_trips_and_matches_the_file_storage(
    backend: PostgresBackend, tmp_path: Path
) -> None:
    graph = sample_graph()
    storage = backend.storage("ana")
    storage.append(0, [{"op": "ok", "rid": "before"}], durable=True)
    before = storage.stamp()
    with storage.lock(timeout=5):
        storage.save(graph, 1)
    assert storage.stamp() != before and storage.generation() == 1
    assert storage.read_log(0, 0).records == []  # the older log went with the commit
    loaded, generation = storage.load()
    assert generation == 1
    files = FileShardStorage(tmp_path, "ana")
    files.save(graph, 1)
    from_files, file_generation = files.load()
    assert file_generation == 1
    assert loaded.to_node_link(1) == from_files.to_node_link(1)
    assert canonical(loaded) == canonical(graph)
    with psycopg.connect(backend.url) as conn:
        row = conn.execute("SELECT graph FROM memtrellis_snapshots").fetchone()
    assert row is not None and bytes(row[0]) == (files.path / "graph.json").read_bytes()
    assert loaded.history(next(iter(graph.memory_ids("ana"))))[-1].action == "superseded"
    storage.append(1, [{"op": "ok", "rid": "after"}], durable=True)
    with storage.lock(timeout=5):
        storage.save(loaded, 2)
        storage.cleanup()
    left = rows_of(backend.url, "ana")
    assert (left["memtrellis_snapshots"], left["memtrellis_shards"], left["memtrellis_log"]) == (
        1,
        1,
        0,
    )


def test_an_unreadable_or_missing_snapshot_is_reported(backend: PostgresBackend) -> None:
    storage = backend.storage("ana")
    assert storage.load()[0].entity_ids() == []
    storage.save(sample_graph(), 1)
    with psycopg.connect(backend.url) as conn:
        conn.execute("UPDATE memtrellis_snapshots SET graph = 'not json'::bytea")
    with pytest.raises(StoreCorruptError, match="cannot be read"):
        storage.load()
    with psycopg.connect(backend.url) as conn:
        conn.execute("DELETE FROM memtrellis_snapshots")
    with pytest.raises(StoreCorruptError, match="generation 1 is missing"):
        storage.load()
    with psycopg.connect(backend.url) as conn:
        conn.execute("INSERT INTO memtrellis_log VALUES ('ana', 1, 1, '[1]')")
    with pytest.raises(StoreCorruptError, match="log record 1"):
        storage.read_log(1, 0)


def test_catalog_lists_records_and_drops_entities(
    backend: PostgresBackend, postgres_url: str
) -> None:
    catalog = backend.catalog()
    for entity in ("ana", "bob", "cy", "ana"):
        catalog.ensure(entity)
    assert catalog.entities() == ["ana", "bob", "cy"]
    stats = EntityStats(memories=3, superseded=1, edges={"mentions": 4}, validity=[(1.5, True)])
    catalog.record("bob", stats)
    assert catalog.get("bob") == stats and catalog.get("ana") == EntityStats()
    assert catalog.get("nobody") is None
    catalog.mark_dropping("bob")
    assert catalog.entities() == ["ana", "cy"] and catalog.dropping() == ["bob"]
    assert catalog.get("bob") is None and list(catalog.all()) == ["ana", "cy"]
    other = PostgresBackend(postgres_url).catalog()  # another pool sees the same rows
    try:
        assert other.dropping() == ["bob"]
        other.remove("bob")
        other.record("dee", EntityStats(memories=1))
    finally:
        other.close()
    assert catalog.dropping() == [] and catalog.entities() == ["ana", "cy", "dee"]
    catalog.close()
    assert backend.closed


def test_destroy_leaves_no_row_of_the_entity(backend: PostgresBackend) -> None:
    for entity in ("ana", "bob"):
        storage = backend.storage(entity)
        storage.append(0, [{"op": "ok", "rid": "r"}], durable=True)
        storage.save(sample_graph(), 1)
        storage.append(1, [{"op": "ok", "rid": "r"}], durable=True)
        backend.catalog().ensure(entity)
    ana = backend.storage("ana")
    stamp = ana.stamp()
    with ana.lock(timeout=5):
        ana.destroy()
    backend.catalog().remove("ana")
    assert rows_of(backend.url, "ana") == dict.fromkeys(TABLES, 0)
    assert not ana.exists() and ana.generation() == 0 and ana.stamp() != stamp
    assert rows_of(backend.url, "bob") == dict.fromkeys(TABLES, 1)


def test_a_writer_whose_session_was_lost_cannot_write_as_if_it_held_the_lock(
    backend: PostgresBackend,
) -> None:
    storage = backend.storage("ana")
    with storage.lock(timeout=5):
        with psycopg.connect(backend.url, autocommit=True) as admin:
            (holder,) = admin.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
            ).fetchone() or (None,)
            admin.execute("SELECT pg_terminate_backend(%s)", (holder,))
        with pytest.raises(psycopg.OperationalError):
            storage.append(0, [{"op": "ok", "rid": "lost"}], durable=True)
    with storage.lock(timeout=5):  # the broken connection left the pool
        assert storage.append(0, [{"op": "ok", "rid": "again"}], durable=True) == 1


def test_an_unreachable_server_is_named_without_its_password() -> None:
    with pytest.raises(PoolTimeout, match=r"postgresql://ana@127\.0\.0\.1:1/memories") as caught:
        PostgresBackend("postgresql://ana:secret@127.0.0.1:1/memories", connect_timeout=0.5)
    assert "secret" not in str(caught.value)


def test_store_shards_on_two_backends_share_one_memory(
    backend: PostgresBackend, postgres_url: str, tmp_path: Path
) -> None:
    """The store's own `Shard` on PostgreSQL, as two machines (two pools) and one Chroma."""
    embedder = HashingEmbedder()
    vectors = VectorIndex(tmp_path / "chroma")
    other = PostgresBackend(postgres_url)

    def settings(writer: str) -> ShardSettings:
        return ShardSettings(
            vectors, embedder.embed_documents, writer=writer, recovery=RecoveryReport()
        )

    def put(text: str) -> tuple[MemoryItem, dict[str, Any]]:
        item = MemoryItem(text=text, scope=Scope(entity_id="ana"))
        return item, {"op": "put", "item": item.model_dump(mode="json"), "reembed": True}

    try:
        a = Shard(backend.storage("ana"), settings("machine-a"))
        first, record = put("Ana's daughter Mia starts school in Porto in September.")
        a.commit([record])
        b = Shard(other.storage("ana"), settings("machine-b"))
        assert b.graph.item(first.id) is not None
        # A writer on A logged a change and died before the vector index and its ``ok``.
        cut, record = put("Ana moved to Lyon.")
        record.update(rid="dead:1", w="machine-dead")
        a.storage.append(a.generation, [record], durable=True)
        b.refresh()  # sees a foreign change: takes the lock and rolls it forward
        assert b.graph.item(cut.id) is not None and b.pending_count == 0
        assert vectors.has("ana", [cut.id]) == {cut.id}
        last = b.storage.read_log(b.generation, 0).records[-1]
        assert last == {"op": "ok", "rid": "dead:1", "w": "machine-b"}
        later, record = put("Ana adopted a cat.")
        b.commit([record])
        a.refresh()
        assert a.graph.item(later.id) is not None and a.pending_count == 0
        a.commit([put("Ana runs on Sundays.")[1]], compact=True)  # a new snapshot
        b.refresh()
        assert b.generation == a.generation == 1 and len(b.graph) == len(a.graph) == 4
    finally:
        other.close()
        vectors.close()
