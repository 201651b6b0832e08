"""Corruption and repair: each kind of damage names its path and cure; the repair restores.

One real store (Chroma PersistentClient, written through ``Memory``: two entities, each
in its own shard, supersession, a merged duplicate, a conversation) is built once; each
test damages a copy (mostly ana's shard, so bob's must come through untouched), checks
the error opening and using the store gives, runs the repair that error names (through
the CLI) or :func:`memtrellis.repair_store`, and reopens it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import zygote
from memtrellis import Memory, StoreCorruptError, repair_store
from memtrellis.cli import app
from memtrellis.store import EmbedderInfo
from memtrellis.store.repair import repair_files
from memtrellis.store.shardfiles import shard_dir
from memtrellis.testing import HashingEmbedder, store_of

TENANTS = ("ana", "bob")
GRAPH_ONLY_EDGES = ("contradicts", "follows", "supports", "extends")

ADD_AND_DIE = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    m = Memory(sys.argv[1], entity_id="ana", embedder=HashingEmbedder())
    m.add("Ana's bike is red", entities=["Ana"])
    m.add("Ana swims on Tuesdays", entities=["Ana"])
    os._exit(0)  # no close: the changes stay in the write-ahead log, no new snapshot
"""


def _build(path: Path) -> None:
    with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.add("Ana lives in Lyon", memory_type="fact", entities=["Ana", "Lyon"])
        memory.add("Ana moved to Porto", memory_type="fact", entities=["Ana", "Porto"])
        memory.add("Ana's cat is called Miso", entities=["Miso"])
        memory.add("Ana's cat is called Miso")  # merged into the first
        memory.add(
            [
                {"role": "user", "content": "I start at the bakery on Monday", "id": "c1"},
                {"role": "assistant", "content": "Good luck with the new job", "id": "c2"},
            ]
        )
        memory.add("Bob is vegan", entity_id="bob", entities=["Bob"])
        memory.add("Bob plays the cello", entity_id="bob", entities=["Bob"])


@dataclass
class Snapshot:
    """What a healthy store holds: every item, entity and edge count, the catalog's rows."""

    items: dict[str, dict[str, Any]]
    entities: int
    edges: dict[str, int]
    by_tenant: dict[str, set[str]]


def _open(path: Path) -> Memory:
    return Memory(path, entity_id="ana", embedder=HashingEmbedder())


def _use(path: Path) -> None:
    """Open the store and read every entity (a shard is read on its first use)."""
    with _open(path) as memory:
        for tenant in TENANTS:
            memory.list(entity_id=tenant)


def _ana(store: Path) -> Path:
    return shard_dir(store, "ana")


def _rel(store: Path, target: Path) -> str:
    return target.relative_to(store).as_posix()


def _figures(stats: Any) -> dict[str, Any]:
    return {k: v for k, v in stats.to_dict().items() if k != "generation"}


def _state(
    path: Path, *, exact_catalog: bool = True, tenants: tuple[str, ...] = TENANTS
) -> Snapshot:
    """Open the store, check graph, index and catalog agree, and return what it holds.

    ``exact_catalog=False``: a store whose writer was killed may hold catalog rows older
    than its shards (the store brings a row up to date when it loads the shard).
    """
    with _open(path) as memory:
        store = store_of(memory)
        rows = store.catalog.all()  # read before any shard is loaded
        assert sorted(store.entities()) == sorted(tenants)
        items: dict[str, dict[str, Any]] = {}
        edges: dict[str, int] = {}
        entities = 0
        by_tenant: dict[str, set[str]] = {}
        for tenant in tenants:
            with store.reading(tenant) as shard:
                graph = shard.graph
                assert graph.entity_ids() == [tenant]  # one entity per shard
                graph_items = {i.id: i.model_dump(mode="json") for i in graph.items(tenant)}
                entities += graph.subject_count()
                for kind, count in graph.edge_counts().items():
                    edges[kind] = edges.get(kind, 0) + count
                if exact_catalog:
                    assert _figures(rows[tenant]) == _figures(shard.stats()), tenant
            copies, unreadable = store.vectors.item_copies(tenant)
            assert unreadable == 0
            assert {k: v.model_dump(mode="json") for k, v in copies.items()} == graph_items
            assert store.vectors.count(tenant) == len(graph_items)
            items.update(graph_items)
            by_tenant[tenant] = set(graph_items)
        assert memory.health().total_memories == len(items)
        return Snapshot(items, entities, edges, by_tenant)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Snapshot]:
    path = tmp_path_factory.mktemp("healthy") / "store"
    _build(path)
    probe = path.parent / "probe"
    shutil.copytree(path, probe)
    return path, _state(probe)


@pytest.fixture(scope="module")
def logged(healthy: tuple[Path, Snapshot]) -> tuple[Path, Snapshot]:
    """The healthy store plus two memories only in the write-ahead log (a crash)."""
    path = healthy[0].parent.parent / "logged" / "store"
    shutil.copytree(healthy[0], path)
    proc = zygote.run(
        [sys.executable, "-c", textwrap.dedent(ADD_AND_DIE), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    probe = path.parent / "probe"
    shutil.copytree(path, probe)
    return path, _state(probe, exact_catalog=False)


def _garble(target: Path) -> None:
    raw = target.read_bytes()
    middle = len(raw) // 2
    target.write_bytes(raw[:middle] + b"\x00\xffgarbage{{[" + raw[middle + 11 :])


def _garble_log_put(store: Path) -> None:
    [log] = _ana(store).glob("wal-*.jsonl")
    lines = log.read_bytes().split(b"\n")
    [number] = [n for n, line in enumerate(lines) if b'"op":"put"' in line and b"bike" in line]
    lines[number] = b'{"op": "put", "item": {"id": \x00\x00 garbled'
    log.write_bytes(b"\n".join(lines))


def _ana_file(name: str) -> Callable[[Path], str]:
    return lambda store: _rel(store, _ana(store) / name)


def _ana_log(store: Path) -> str:
    [log] = _ana(store).glob("wal-*.jsonl")
    return _rel(store, log)


@dataclass(frozen=True)
class Damage:
    name: str
    damage: Callable[[Path], None]
    target: Callable[[Path], str]  # the path the error names, relative to the store
    flags: tuple[str, ...]
    graph_rebuilt: bool  # ana's graph comes back from the index copies
    index_rebuilt: bool  # every vector is embedded again
    logged: bool = False  # starts from the store with changes in its log


def _at(name: str) -> Callable[[Path], str]:
    return lambda store: name


DAMAGES = [
    Damage(
        "graph-truncated",
        lambda s: (_ana(s) / "graph.json").write_bytes((_ana(s) / "graph.json").read_bytes()[:300]),
        _ana_file("graph.json"),
        (),
        graph_rebuilt=True,
        index_rebuilt=False,
    ),
    Damage(
        "graph-garbled",
        lambda s: _garble(_ana(s) / "graph.json"),
        _ana_file("graph.json"),
        (),
        graph_rebuilt=True,
        index_rebuilt=False,
    ),
    Damage(
        "shard-missing",
        lambda s: shutil.rmtree(_ana(s)),
        lambda s: _rel(s, _ana(s)),
        (),
        graph_rebuilt=True,
        index_rebuilt=False,
    ),
    Damage(
        "pointer-garbled",
        lambda s: _garble(_ana(s) / "shard.json"),
        _ana_file("shard.json"),
        (),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "catalog-missing",
        lambda s: (s / "catalog.sqlite3").unlink(),
        _at("catalog.sqlite3"),
        (),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "catalog-garbled",
        lambda s: _garble(s / "catalog.sqlite3"),
        _at("catalog.sqlite3"),
        (),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "manifest-garbled",
        lambda s: _garble(s / "manifest.json"),
        _at("manifest.json"),
        ("--embedder", "hashing"),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "manifest-missing",
        lambda s: (s / "manifest.json").unlink(),
        _at("manifest.json"),
        ("--embedder", "hashing"),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "log-garbled",
        _garble_log_put,
        _ana_log,
        (),
        graph_rebuilt=False,
        index_rebuilt=False,
        logged=True,
    ),
    Damage(
        "index-missing",
        lambda s: shutil.rmtree(s / "chroma"),
        _at("chroma"),
        ("--from-graph",),
        graph_rebuilt=False,
        index_rebuilt=True,
    ),
    Damage(
        "index-corrupt",
        lambda s: _garble(s / "chroma" / "chroma.sqlite3"),
        _at("chroma"),
        ("--from-graph",),
        graph_rebuilt=False,
        index_rebuilt=True,
    ),
]


def _files(store: Path) -> dict[str, bytes]:
    return {
        _rel(store, p): p.read_bytes()
        for p in sorted(store.rglob("*"))
        if p.is_file() and p.name not in ("store.lock", "shard.lock")
    }


@pytest.mark.parametrize("via", ["cli", "api"])
@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
def test_damage_names_path_and_command_and_repair_restores_everything(
    damage: Damage,
    via: str,
    healthy: tuple[Path, Snapshot],
    logged: tuple[Path, Snapshot],
    tmp_path: Path,
) -> None:
    source, before = logged if damage.logged else healthy
    store = tmp_path / "store"
    shutil.copytree(source, store)
    target = damage.target(store)
    bob_files = _files(shard_dir(store, "bob"))
    damage.damage(store)
    original = _files(store)
    existed = (store / target).exists()

    with pytest.raises(StoreCorruptError) as caught:
        _use(store)
    error = caught.value
    command = " ".join(["memtrellis", "repair", shlex.quote(str(store)), *damage.flags])
    assert error.path == str(store / target)
    assert error.command == command
    message = " ".join(str(error).split())
    assert str(store / target) in message and f"`{command}`" in message

    if via == "cli":
        result = CliRunner().invoke(app, ["--json", *shlex.split(command)[1:]])
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
    else:
        # the API reads the embedder from the manifest; a lost one needs it given
        given = HashingEmbedder() if "--embedder" in damage.flags else None
        report = repair_store(store, embedder=given).to_dict()

    after = _state(store)
    assert after.items.keys() == before.items.keys()
    for memory_id, item in before.items.items():
        got = after.items[memory_id]
        for name in ("text", "scope", "valid_from", "valid_until", "sources", "superseded_by"):
            assert got[name] == item[name], (memory_id, name)
        assert got == item, memory_id  # and every other field (tags, metadata: merges...)
    assert after.entities == before.entities

    # the report's counts are exact
    n = len(before.items)
    n_ana = len(before.by_tenant["ana"])
    assert report["memories"] == n
    assert report["entities_with_memories"] == len(TENANTS) == report["shards"]
    assert report["subjects"] == before.entities
    # the old --json keys stay for one release
    assert (report["tenants"], report["entities"]) == (len(TENANTS), before.entities)
    assert report["edges"] == after.edges
    assert target in report["damaged"]
    assert report["vectors_written"] == (n if damage.index_rebuilt else 0)
    assert report["manifest_written"] == target.startswith("manifest")
    assert report["catalog_written"] == target.startswith("catalog")
    if damage.graph_rebuilt:
        assert report["graph_source"] == "index" and report["graph_from_index"] == ["ana"]
        assert report["from_index"] == n_ana
        assert report["from_snapshot"] == n - n_ana  # bob's shard read as it was
        for kind in GRAPH_ONLY_EDGES:  # not in the index copies, not in the log: lost
            assert report["edges"][kind] == 0
        assert before.edges["contradicts"] == 1 and before.edges["follows"] == 1
        assert any("contradicts" in lost and lost.endswith("ana") for lost in report["lost"])
        assert report["edges"]["supersedes"] == before.edges["supersedes"] == 1
        assert report["edges"]["mentions"] == before.edges["mentions"]
    else:
        assert report["graph_source"] == "snapshot" and report["lost"] == []
        assert after.edges == before.edges
    if damage.logged:
        # the garbled record's memory came back from its index copy; its put event is lost
        assert report["log_unreadable"] == 1 and report["from_index"] == 1
        assert report["log_records"] > 0
    if not damage.index_rebuilt:  # bob's shard had nothing to repair: left as it was
        assert _files(shard_dir(store, "bob")) == bob_files
        in_ana = target.startswith(_rel(store, _ana(store)))
        assert report["shards_repaired"] == int(in_ana)

    # damaged files were moved aside, byte for byte, never deleted
    for name, moved in report["moved_aside"].items():
        if name in original:
            assert (store / moved).read_bytes() == original[name]
        else:
            assert (store / moved).is_dir()
    assert (target in report["moved_aside"]) == existed


def test_dry_run_reports_the_same_and_writes_nothing(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    _garble(_ana(store) / "graph.json")
    files = _files(store)
    result = CliRunner().invoke(app, ["repair", str(store), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert _files(store) == files
    out = result.stdout
    assert "dry run: nothing written" in out
    assert f"would repair: {len(healthy[1].items)} memories of 2 entities" in out
    assert "lost: supports, contradicts, extends and follows edges" in out
    with pytest.raises(StoreCorruptError):
        _use(store)
    report = repair_store(store)
    assert report.memories == len(healthy[1].items) and not report.dry_run
    assert (
        f"{_rel(store, _ana(store))}/graph.json.corrupt-"
        in report.moved_aside[f"{_rel(store, _ana(store))}/graph.json"]
    )


def test_index_copies_the_graph_lacks_are_restored_not_dropped(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    # graph.json replaced by an older, readable one: the index still holds newer memories
    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    before = healthy[1]
    info = EmbedderInfo(model_id="hashing-64", dimension=64)
    embedder = HashingEmbedder()
    with _open(store) as memory:
        [extra] = memory.add("Ana plants tomatoes in May")
    # forget the new memory in the graph only, as an old backup of graph.json would
    with _open(store) as memory:
        shard = store_of(memory).shard("ana")
        with shard._locked():
            shard.graph.remove(extra.id)
            shard._compact()
    report = repair_files(store, embedder=info, embed=embedder.embed_documents)
    assert report.damaged == {} and report.from_index == 1 and report.shards_repaired == 1
    assert report.memories == len(before.items) + 1
    after = _state(store)
    assert after.items[extra.id]["text"] == "Ana plants tomatoes in May"


NEVER_COMPACTED = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    m = Memory(sys.argv[1], entity_id="ana", embedder=HashingEmbedder())
    m.add("Ana lives in Lyon", memory_type="fact", entities=["Ana", "Lyon"])
    m.add("Ana moved to Porto", memory_type="fact", entities=["Ana", "Porto"])
    m.add([{"role": "user", "content": "I start at the bakery on Monday", "id": "c1"},
           {"role": "assistant", "content": "Good luck with the new job", "id": "c2"}])
    os._exit(0)  # no snapshot yet: every change is in wal-000000.jsonl
"""


def test_a_lost_manifest_of_a_never_compacted_store_comes_back_whole_from_the_log(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    proc = zygote.run(
        [sys.executable, "-c", textwrap.dedent(NEVER_COMPACTED), str(store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (_ana(store) / "graph.json").exists()
    assert [p.name for p in _ana(store).glob("wal-*.jsonl")] == ["wal-000000.jsonl"]
    probe = tmp_path / "probe"
    shutil.copytree(store, probe)
    before = _state(probe, exact_catalog=False, tenants=("ana",))
    (store / "manifest.json").unlink()
    with pytest.raises(StoreCorruptError, match="is missing but the store holds data"):
        _open(store)
    report = repair_store(store, embedder=HashingEmbedder())
    # the log held every change: edges only the graph keeps came back too, nothing lost
    assert report.graph_source == "snapshot" and report.lost == []
    assert report.damaged == {"manifest.json": "missing"} and report.manifest_written
    assert report.memories == len(before.items) == 4
    assert report.edges == before.edges and before.edges["follows"] == 1
    after = _state(store, tenants=("ana",))
    assert after.items == before.items and after.edges == before.edges


def test_repair_takes_the_write_lock_and_refuses_what_is_no_store(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    from filelock import FileLock

    from memtrellis import StoreLockedError

    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    graph = _ana(store) / "graph.json"
    _garble(graph)

    def outside_chroma() -> dict[str, bytes]:  # Chroma rewrites its files when read
        return {k: v for k, v in _files(store).items() if not k.startswith("chroma/")}

    garbled = outside_chroma()
    busy = FileLock(str(store / "store.lock"))  # another process opens the store
    with busy, pytest.raises(StoreLockedError):
        repair_store(store, lock_timeout=0.2)
    busy = FileLock(str(_ana(store) / "shard.lock"))  # another process writes ana
    with busy, pytest.raises(StoreLockedError):
        repair_store(store, lock_timeout=0.2)
    assert outside_chroma() == garbled  # untouched while locked
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(app, ["repair", str(empty)])
    assert result.exit_code == 2 and "holds no memtrellis store" in result.stderr


@pytest.mark.parametrize("flag", ["--from-index", "--from-graph"])
def test_a_forced_rebuild_of_a_healthy_store_keeps_every_memory(
    flag: str, healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    result = CliRunner().invoke(app, ["--json", "repair", str(store), flag])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    before = healthy[1]
    assert report["damaged"] == {} and report["memories"] == len(before.items)
    if flag == "--from-index":
        for tenant in TENANTS:
            rebuilt = f"{_rel(store, shard_dir(store, tenant))}/graph.json"
            assert report["moved_aside"][rebuilt].startswith(f"{rebuilt}.replaced-")
        assert sorted(report["graph_from_index"]) == sorted(TENANTS)
    else:
        assert report["moved_aside"]["chroma"].startswith("chroma.replaced-")
    assert report["shards_repaired"] == len(TENANTS)
    assert report["vectors_written"] == (len(before.items) if flag == "--from-graph" else 0)
    after = _state(store)
    assert after.items == before.items


def test_a_shard_that_lost_its_pointer_and_graph_is_named_by_its_collection(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    # shard.json gone, graph.json garbled, catalog gone: only Chroma's metadata names ana
    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    (_ana(store) / "shard.json").unlink()
    _garble(_ana(store) / "graph.json")
    (store / "catalog.sqlite3").unlink()
    report = repair_store(store)
    graph = f"{_rel(store, _ana(store))}/graph.json"
    assert set(report.damaged) == {"catalog.sqlite3", graph}
    assert report.graph_from_index == ["ana"] and report.catalog_written
    assert report.memories == len(healthy[1].items)
    after = _state(store)
    assert after.by_tenant == healthy[1].by_tenant


def test_a_shard_without_pointer_or_collection_is_named_by_its_items(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    # shard.json, the catalog and ana's collection gone: ana's own graph names it, and
    # its vectors are embedded again from it
    import chromadb
    from chromadb.config import Settings

    from memtrellis.store import collection_name

    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    (_ana(store) / "shard.json").unlink()
    (store / "catalog.sqlite3").unlink()
    client = chromadb.PersistentClient(
        path=str(store / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    client.delete_collection(collection_name("ana"))
    client.close()
    report = repair_store(store)
    assert report.damaged == {"catalog.sqlite3": "missing"}
    assert report.graph_source == "snapshot" and report.lost == []
    assert report.vectors_written == len(healthy[1].by_tenant["ana"])
    after = _state(store)
    assert after.items == healthy[1].items and after.edges == healthy[1].edges


def test_a_directory_no_entity_can_be_named_for_is_moved_aside(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    stray = store / "shards" / "zz" / ("z" * 32)
    stray.mkdir(parents=True)
    (stray / "graph.json").write_bytes(b"\x00garbage")
    report = repair_store(store)
    rel = _rel(store, stray)
    assert rel in report.damaged and report.moved_aside[rel].startswith(f"{rel}.corrupt-")
    assert (store / report.moved_aside[rel] / "graph.json").read_bytes() == b"\x00garbage"
    assert _state(store).items == healthy[1].items
