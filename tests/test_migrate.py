"""Migrating a store written by release 0.1 to entity shards, on stores the 0.1 code built.

The 0.1 sources come from the git history (release 0.1 is commit ``f7b168f``, the last
one before the shard work); ``tests/v01_store_builder.py`` runs under them in a
subprocess, builds a store through the 0.1 API, records what each entity holds as 0.1
reports it, leaves changes pending in its log and dies by SIGKILL in the middle of a
vector write. The migrated store is then read through the shard layout directly
(``FileShardStorage``, ``SqliteCatalog``, ``VectorIndex``) and compared field by field.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from typer.testing import CliRunner

from memtrellis import Memory
from memtrellis.cli import app
from memtrellis.errors import EmbeddingMismatchError, StoreLockedError
from memtrellis.store import migrate as migration
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.manifest import EmbedderInfo
from memtrellis.store.migrate import (
    MigrationReport,
    StoreMigrationError,
    migrate_store,
    needs_migration,
)
from memtrellis.store.shardfiles import FileShardStorage
from memtrellis.store.vectors import VectorIndex
from memtrellis.testing import HashingEmbedder, store_of
from memtrellis.types import EdgeKind, MemoryItem

#: Release 0.1: the last commit before the entity-shard work.
V01_COMMIT = "f7b168f"
REPO = Path(__file__).resolve().parents[1]
BUILDER = Path(__file__).with_name("v01_store_builder.py")


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is needed to take the 0.1 sources from the history; install git")
    return subprocess.run([git, "-C", str(REPO), *args], capture_output=True, check=False)


@pytest.fixture(scope="session")
def v01_sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``src/`` of release 0.1, extracted from the git history."""
    if _git("cat-file", "-e", f"{V01_COMMIT}^{{commit}}").returncode != 0:
        pytest.fail(
            f"release 0.1 (commit {V01_COMMIT}) is not in the git history of {REPO}: the "
            "migration tests build their store with it. In a shallow clone, run "
            "`git fetch --unshallow`."
        )
    archive = _git("archive", "--format=tar", V01_COMMIT, "src")
    if archive.returncode != 0:
        pytest.fail(f"git archive {V01_COMMIT} failed: {archive.stderr.decode()[-500:]}")
    target = tmp_path_factory.mktemp("memtrellis-0.1")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target)
    return target / "src"


def run_v01(
    sources: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the builder under the 0.1 sources (the venv has every dependency)."""
    env = dict(os.environ, **(env or {}), PYTHONPATH=str(sources), V01_SOURCES=str(sources))
    env["ANONYMIZED_TELEMETRY"] = "False"
    return subprocess.run(
        [sys.executable, str(BUILDER), *args],
        env=env,
        cwd=str(sources.parent),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def built_v01(
    v01_sources: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    """One 0.1 store (built once; tests get copies) and what 0.1 said it held."""
    root = tmp_path_factory.mktemp("v01-store")
    store, out = root / "store", root / "expected.json"
    proc = run_v01(v01_sources, "full", str(store), str(out))
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-4000:]
    return store, json.loads(out.read_text())


@pytest.fixture
def v01(built_v01: tuple[Path, dict[str, Any]], tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    store, expected = built_v01
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    return copy, expected


EMBEDDER = HashingEmbedder()
INFO = EmbedderInfo(model_id=EMBEDDER.model_id, dimension=EMBEDDER.dimension)


def migrate(path: Path) -> MigrationReport:
    return migrate_store(path, embed=EMBEDDER.embed_documents, embedder=INFO)


def tree(path: Path) -> dict[str, bytes]:
    """Every file of a store but Chroma's, with its bytes."""
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and "chroma" not in p.relative_to(path).parts
    }


def manifest(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "manifest.json").read_text())
    return data


def versions(graph: MemoryGraph, memory_id: str) -> list[str]:
    """The supersession chain through a memory, as 0.1's Memory.versions walks it."""
    chain, seen = [memory_id], {memory_id}
    for direction in (1, 0):
        current = memory_id
        while True:
            out, into = graph.edges_of(current, EdgeKind.SUPERSEDES)
            step = [n for n in (into if direction else out) if n not in seen]
            if not step:
                break
            current = step[0]
            seen.add(current)
            chain.insert(len(chain) if direction else 0, current)
    return chain


def assert_migrated(path: Path, expected: dict[str, Any], chroma_url: str | None = None) -> None:
    """The store is in the shard layout and holds exactly what 0.1 said it held."""
    assert manifest(path)["schema_version"] == 2
    assert manifest(path)["embedder"] == {"model_id": "hashing-64", "dimension": 64}
    assert not needs_migration(path)
    assert not (path / "graph.json").exists() and not list(path.glob("wal-*.jsonl"))
    assert not (path / "shards.migrating").exists()
    entities: dict[str, Any] = expected["entities"]
    catalog = SqliteCatalog(path / "catalog.sqlite3")
    vectors = VectorIndex(path / "chroma", chroma_url=chroma_url)
    try:
        assert sorted(catalog.entities()) == sorted(entities)
        for forgotten in expected["forgotten"]:
            assert not FileShardStorage(path, forgotten).exists()
            assert catalog.get(forgotten) is None
            assert vectors.count(forgotten) == 0
        ours = [e for e in vectors.entity_ids() if e.startswith(expected["prefix"])]
        assert sorted(ours) == sorted(entities)
        for entity, held in entities.items():
            storage = FileShardStorage(path, entity)
            graph, generation = storage.load()
            assert generation == 1 and storage.generation() == 1
            assert graph.entity_ids() == [entity]
            assert graph.memory_ids(entity) == held["ids"]  # stored order kept
            for memory_id in held["ids"]:
                item = graph.item(memory_id)
                assert item is not None
                # what 0.1 wrote, read by today's model (fields added since take defaults)
                as_written = MemoryItem.model_validate(held["items"][memory_id])
                assert item.model_dump(mode="json") == as_written.model_dump(mode="json")
                history = [e.model_dump(mode="json") for e in graph.history(memory_id)]
                assert history == held["history"][memory_id]
                assert versions(graph, memory_id) == held["versions"][memory_id]
            edges = sorted([s, t, k] for s, t, k in graph.g.edges(keys=True))
            # 0.1 named subject nodes ``entity:...``; read, they are ``subject:...``
            renamed = [[s, _subject_id(t), k] for s, t, k in held["edges"]]
            assert edges == sorted(renamed)
            assert graph.subject_names(entity) == held["entity_names"]
            stats = catalog.get(entity)
            assert stats is not None and stats.generation == 1
            assert stats.memories == len(held["ids"])
            assert stats.edges == graph.edge_counts()
            assert stats.superseded == sum(
                1 for i in held["items"].values() if i["superseded_by"] is not None
            )
            # The index holds every memory and nothing else; its item copies match the
            # graph (recall counts live in the graph only, as in 0.1).
            copies, unreadable = vectors.item_copies(entity)
            assert unreadable == 0 and set(copies) == set(held["ids"])
            recall = {"recall_count", "last_recalled_at"}
            for memory_id, copy in copies.items():
                stored = graph.item(memory_id)
                assert stored is not None
                assert copy.model_dump(exclude=recall) == stored.model_dump(exclude=recall)
        # The change that died inside its vector write was embedded like 0.1 embeds it.
        owner = expected["pending"]["put_entity"]
        pending = graph_item(path, owner, expected["pending"]["put"])
        [vector] = vectors.embeddings(owner, [pending.id]).values()
        assert vector == pytest.approx(EMBEDDER.embed_documents([pending.search_text()])[0])
    finally:
        catalog.close()
        vectors.close()


def graph_item(path: Path, entity: str, memory_id: str) -> Any:
    graph, _ = FileShardStorage(path, entity).load()
    item = graph.item(memory_id)
    assert item is not None
    return item


def test_the_store_is_what_0_1_writes_with_changes_cut_off(
    v01: tuple[Path, dict[str, Any]],
) -> None:
    path, expected = v01
    assert manifest(path)["schema_version"] == 1
    assert (path / "graph.json").is_dir() is False and (path / "graph.json").exists()
    assert (path / "chroma").is_dir() and (path / "spool").is_dir()
    [log] = path.glob("wal-*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    done = {r["rid"] for r in records if r["op"] == "ok"}
    cut = [r for r in records if "rid" in r and r["op"] != "ok" and r["rid"] not in done]
    assert sorted(r["op"] for r in cut) == ["del", "drop", "put", "put"]
    assert expected["pending_count"] == 4
    assert {"touch", "edge"} <= {r["op"] for r in records}
    assert expected["entities"]["bob"]["entity_names"]["coffee"] == "COFFEE"
    kinds = {k for held in expected["entities"].values() for _, _, k in held["edges"]}
    assert kinds == {kind.value for kind in EdgeKind}
    assert needs_migration(path)


def test_migration_keeps_every_memory_history_edge_and_vector(
    v01: tuple[Path, dict[str, Any]],
) -> None:
    path, expected = v01
    spool = {p.name: p.read_bytes() for p in (path / "spool").iterdir()}
    report = migrate(path)
    assert report.migrated and report.rolled_forward == 4 and report.torn_records == 0
    assert report.entities == len(expected["entities"])
    assert report.memories == sum(len(e["ids"]) for e in expected["entities"].values())
    assert report.cross_entity_edges == 0
    assert set(report.leftovers_removed) == {"graph.json", "wal-000002.jsonl"}
    assert_migrated(path, expected)
    assert {p.name: p.read_bytes() for p in (path / "spool").iterdir()} == spool
    assert manifest(path)["migrated_from"]["schema_version"] == 1


def test_a_second_migration_changes_nothing(v01: tuple[Path, dict[str, Any]]) -> None:
    path, expected = v01
    migrate(path)
    before = tree(path)
    again = migrate_store(path)
    assert not again.migrated and again.leftovers_removed == []
    assert tree(path) == before
    assert_migrated(path, expected)


def test_a_cut_off_write_needing_the_embedder_is_refused_clearly_and_changes_nothing(
    v01: tuple[Path, dict[str, Any]],
) -> None:
    path, expected = v01
    before = tree(path)
    with pytest.raises(StoreMigrationError) as caught:
        migrate_store(path)
    assert f"memtrellis migrate {path}" in str(caught.value)
    assert "Nothing was changed" in str(caught.value)
    assert caught.value.command == f"memtrellis migrate {path}"
    assert tree(path) == before and needs_migration(path)
    with pytest.raises(EmbeddingMismatchError):
        migrate_store(
            path,
            embed=EMBEDDER.embed_documents,
            embedder=EmbedderInfo(model_id="other", dimension=64),
        )
    assert tree(path) == before
    migrate(path)
    assert_migrated(path, expected)


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("simulated crash")


def _after(count: int, original: Any) -> Any:
    """``original`` for the first ``count`` calls, then a crash."""
    calls = [0]

    def step(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] > count:
            raise RuntimeError("simulated crash")
        return original(*args, **kwargs)

    return step


CRASHES = {
    "loading": ("_load_v01", _boom),
    "rolling forward": ("_roll_forward", _boom),
    "after two shards": ("_write_shard", _after(2, migration._write_shard)),
    "after the shards were staged": ("_install_staging", _boom),
    "between the two renames": ("_move", _after(1, migration._move)),
    "writing the manifest": ("_commit_manifest", _boom),
    "after the manifest": ("_remove_leftovers", _boom),
}


@pytest.mark.parametrize("where", list(CRASHES))
def test_a_crash_at_any_step_leaves_a_store_that_migrates_fully_on_the_next_try(
    v01: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path, expected = v01
    name, crash = CRASHES[where]
    monkeypatch.setattr(migration, name, crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        migrate(path)
    monkeypatch.undo()
    assert needs_migration(path)
    if where == "after the manifest":
        assert manifest(path)["schema_version"] == 2 and (path / "graph.json").exists()
    else:
        assert manifest(path)["schema_version"] == 1
        assert (path / "graph.json").exists() and list(path.glob("wal-*.jsonl"))
    report = migrate(path)
    assert report.migrated is (where != "after the manifest")
    assert_migrated(path, expected)


def test_a_store_a_migration_died_in_still_opens_with_0_1(
    v01: tuple[Path, dict[str, Any]], v01_sources: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between the two renames (shards in place, no catalog, schema 1): release
    0.1 opens the store and reports all of it, and a migration then finishes."""
    path, expected = v01
    monkeypatch.setattr(migration, "_move", _after(1, migration._move))
    with pytest.raises(RuntimeError):
        migrate(path)
    monkeypatch.undo()
    assert (path / "shards").is_dir() and not (path / "catalog.sqlite3").exists()
    out = path.parent / "seen-by-0.1.json"
    proc = run_v01(v01_sources, "check", str(path), str(out))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert json.loads(out.read_text())["entities"] == expected["entities"]
    migrate_store(path)  # 0.1 finished the roll-forward: no embedder needed now
    assert_migrated(path, expected)


KILL = """
import os, signal, sys
from memtrellis.store import migrate as m
from memtrellis.testing import HashingEmbedder
step, keep, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
original, calls = getattr(m, step), [0]
def die(*args, **kwargs):
    calls[0] += 1
    if calls[0] > keep:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)
setattr(m, step, die)
m.migrate_store(path, embed=HashingEmbedder().embed_documents)
"""


@pytest.mark.parametrize(("step", "keep"), [("_write_shard", 2), ("_remove", 1)])
def test_a_migration_killed_by_sigkill_is_finished_by_the_next_one(
    v01: tuple[Path, dict[str, Any]], step: str, keep: int
) -> None:
    """Killed after two shards were staged, or after the manifest and the first of the
    0.1 files were removed."""
    path, expected = v01
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), ANONYMIZED_TELEMETRY="False")
    proc = subprocess.run(
        [sys.executable, "-c", KILL, step, str(keep), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-4000:]
    assert needs_migration(path)
    if step == "_write_shard":
        assert (path / "shards.migrating").is_dir()  # stale staging, removed next time
        assert manifest(path)["schema_version"] == 1
    else:
        assert manifest(path)["schema_version"] == 2 and list(path.glob("wal-*.jsonl"))
    migrate_store(path, lock_timeout=5)  # the lock died with its holder
    assert_migrated(path, expected)


def test_a_torn_last_log_line_is_dropped_as_0_1_drops_it(
    v01: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also when the migration dies after logging its roll-forward: the ``ok`` records
    must not be glued to the torn line, or the log would be damaged in the middle."""
    path, expected = v01
    [log] = path.glob("wal-*.jsonl")
    with log.open("ab") as handle:
        handle.write(b'{"op":"put","item":{"id":"never-acknowledged"')
    monkeypatch.setattr(migration, "_write_shard", _boom)
    with pytest.raises(RuntimeError):
        migrate(path)
    monkeypatch.undo()
    assert log.read_bytes().endswith(b"\n") and b"never-acknowledged" not in log.read_bytes()
    report = migrate(path)
    assert report.rolled_forward == 0  # done by the first try
    assert_migrated(path, expected)


def test_migration_waits_for_the_store_lock_and_refuses_what_is_no_store(
    v01: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, _ = v01
    with FileLock(str(path / "store.lock")), pytest.raises(StoreLockedError):
        migrate_store(path, lock_timeout=0.1)
    assert needs_migration(path)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not needs_migration(empty)
    result = CliRunner().invoke(app, ["migrate", str(empty)])
    assert result.exit_code == 2
    assert "holds no memtrellis store" in " ".join(result.output.split())


def test_memtrellis_migrate_prints_the_report(v01: tuple[Path, dict[str, Any]]) -> None:
    path, expected = v01
    # The manifest names the hashing embedder: the command builds it for the cut-off put.
    result = CliRunner().invoke(app, ["migrate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["migrated"] and report["rolled_forward"] == 4
    assert report["memories"] == sum(len(e["ids"]) for e in expected["entities"].values())
    assert_migrated(path, expected)
    again = CliRunner().invoke(app, ["migrate", str(path)])
    assert again.exit_code == 0 and "nothing to do" in again.output


def test_staged_files_are_flushed_once_at_the_end_not_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtrellis.store import _files

    calls: list[str] = []
    real_fsync, real_sync = os.fsync, os.sync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "sync", lambda: calls.append("sync") or real_sync())
    monkeypatch.setattr(sys, "platform", "linux")
    with _files.flushed_at_exit():
        _files.atomic_write_bytes(tmp_path / "a", b"a")
        _files.atomic_write_bytes(tmp_path / "b", b"b")
        assert calls == []
    assert calls == ["sync"]
    _files.atomic_write_bytes(tmp_path / "c", b"c")  # outside: durable one by one again
    assert calls == ["sync", "fsync", "fsync"]
    with pytest.raises(RuntimeError), _files.flushed_at_exit():
        raise RuntimeError("a failed staging is not flushed: it is thrown away")
    assert calls == ["sync", "fsync", "fsync"]
    monkeypatch.setattr(sys, "platform", "darwin")  # sync() may return early there
    with _files.flushed_at_exit():
        _files.atomic_write_bytes(tmp_path / "d", b"d")
    assert calls[-2:] == ["fsync", "fsync"] and calls.count("sync") == 1


def test_a_0_1_store_on_a_chroma_server_migrates_and_its_cut_off_changes_reach_the_server(
    v01_sources: Path, chroma_server: str, tmp_path: Path
) -> None:
    """0.1's ``chroma_url=`` mode: the graph and log on the local disk, the vectors in the
    server; the migration moves the graph into shards and rolls the four cut-off changes
    forward into the server's collections."""
    store, out = tmp_path / "store", tmp_path / "expected.json"
    env = {"V01_CHROMA_URL": chroma_server, "V01_PREFIX": f"migrate-{os.getpid()}-"}
    proc = run_v01(v01_sources, "full", str(store), str(out), env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-4000:]
    expected = json.loads(out.read_text())
    assert not (store / "chroma").exists()
    with pytest.raises(StoreMigrationError):
        migrate_store(store, chroma_url=chroma_server)  # the put needs the embedder
    report = migrate_store(store, embed=EMBEDDER.embed_documents, chroma_url=chroma_server)
    assert report.migrated and report.rolled_forward == 4
    assert_migrated(store, expected, chroma_url=chroma_server)


def test_opening_a_0_1_store_migrates_it(v01: tuple[Path, dict[str, Any]]) -> None:
    path, expected = v01
    with Memory(path, embedder=EMBEDDER) as memory:
        assert sorted(store_of(memory).entities()) == sorted(expected["entities"])
        for entity, held in expected["entities"].items():
            listed = memory.list(entity_id=entity, limit=10_000)
            assert [i.id for i in listed] == held["ids"]
            live = [i for i in listed if i.superseded_by is None]
            if live:
                top = memory.recall(live[0].text, entity_id=entity, k=50).items
                assert live[0].id in {hit.memory.id for hit in top}
        assert memory.health().total_memories == sum(
            len(held["ids"]) for held in expected["entities"].values()
        )
    assert not needs_migration(path)
    assert manifest(path)["schema_version"] == 2


def _subject_id(node: str) -> str:
    return "subject:" + node.removeprefix("entity:") if node.startswith("entity:") else node
