"""Corruption and repair: each kind of damage names its path and cure; the repair restores.

One real store (Chroma PersistentClient, written through ``Memory``: two entities,
supersession, a merged duplicate, a conversation) is built once; each test damages a
copy, checks the error a plain open gives, runs the repair that error names (through the
CLI) or :func:`memtrellis.repair_store`, and reopens it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memtrellis import Memory, StoreCorruptError, repair_store
from memtrellis.cli import app
from memtrellis.store import EmbedderInfo
from memtrellis.store.repair import rebuild_store
from memtrellis.testing import HashingEmbedder

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
    """What a healthy store holds: every item, entity and edge count."""

    items: dict[str, dict[str, Any]]
    entities: int
    edges: dict[str, int]


def _open(path: Path) -> Memory:
    return Memory(path, entity_id="ana", embedder=HashingEmbedder())


def _state(path: Path) -> Snapshot:
    """Open the store, check graph and index agree, and return what it holds."""
    with _open(path) as memory:
        store = memory._store
        items: dict[str, dict[str, Any]] = {}
        for tenant in TENANTS:
            graph_items = {i.id: i.model_dump(mode="json") for i in store.graph.items(tenant)}
            copies, unreadable = store.vectors.item_copies(tenant)
            assert unreadable == 0
            assert {k: v.model_dump(mode="json") for k, v in copies.items()} == graph_items
            assert store.vectors.count(tenant) == len(graph_items)
            items.update(graph_items)
        return Snapshot(items, store.graph.entity_count(), store.graph.edge_counts())


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
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ADD_AND_DIE), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    probe = path.parent / "probe"
    shutil.copytree(path, probe)
    return path, _state(probe)


def _garble(target: Path) -> None:
    raw = target.read_bytes()
    middle = len(raw) // 2
    target.write_bytes(raw[:middle] + b"\x00\xffgarbage{{[" + raw[middle + 11 :])


def _garble_log_put(store: Path) -> None:
    [log] = store.glob("wal-*.jsonl")
    lines = log.read_bytes().split(b"\n")
    [number] = [n for n, line in enumerate(lines) if b'"op":"put"' in line and b"bike" in line]
    lines[number] = b'{"op": "put", "item": {"id": \x00\x00 garbled'
    log.write_bytes(b"\n".join(lines))


@dataclass(frozen=True)
class Damage:
    name: str
    damage: Callable[[Path], None]
    target: str  # the path the error names, relative to the store
    flags: tuple[str, ...]
    graph_rebuilt: bool  # the graph comes back from the index copies
    index_rebuilt: bool  # every vector is embedded again
    logged: bool = False  # starts from the store with changes in its log


DAMAGES = [
    Damage(
        "graph-truncated",
        lambda s: (s / "graph.json").write_bytes((s / "graph.json").read_bytes()[:300]),
        "graph.json",
        ("--from-index",),
        graph_rebuilt=True,
        index_rebuilt=False,
    ),
    Damage(
        "graph-garbled",
        lambda s: _garble(s / "graph.json"),
        "graph.json",
        ("--from-index",),
        graph_rebuilt=True,
        index_rebuilt=False,
    ),
    Damage(
        "manifest-garbled",
        lambda s: _garble(s / "manifest.json"),
        "manifest.json",
        ("--embedder", "hashing"),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "manifest-missing",
        lambda s: (s / "manifest.json").unlink(),
        "manifest.json",
        ("--embedder", "hashing"),
        graph_rebuilt=False,
        index_rebuilt=False,
    ),
    Damage(
        "log-garbled",
        _garble_log_put,
        "wal-000001.jsonl",
        (),
        graph_rebuilt=False,
        index_rebuilt=False,
        logged=True,
    ),
    Damage(
        "index-missing",
        lambda s: shutil.rmtree(s / "chroma"),
        "chroma",
        ("--from-graph",),
        graph_rebuilt=False,
        index_rebuilt=True,
    ),
    Damage(
        "index-corrupt",
        lambda s: _garble(s / "chroma" / "chroma.sqlite3"),
        "chroma",
        ("--from-graph",),
        graph_rebuilt=False,
        index_rebuilt=True,
    ),
]


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
    damage.damage(store)
    original = {p.name: p.read_bytes() for p in store.iterdir() if p.is_file()}

    with pytest.raises(StoreCorruptError) as caught:
        _open(store)
    error = caught.value
    command = " ".join(["memtrellis", "repair", shlex.quote(str(store)), *damage.flags])
    assert error.path == str(store / damage.target)
    assert error.command == command
    message = " ".join(str(error).split())
    assert str(store / damage.target) in message and f"`{command}`" in message

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
    assert report["memories"] == n
    assert report["tenants"] == len(TENANTS)
    assert report["entities"] == before.entities
    assert report["edges"] == after.edges
    assert damage.target in report["damaged"]
    assert report["vectors_written"] == (n if damage.index_rebuilt else 0)
    assert report["manifest_written"] == damage.target.startswith("manifest")
    if damage.graph_rebuilt:
        assert report["graph_source"] == "index" and report["from_index"] == n
        for kind in GRAPH_ONLY_EDGES:  # not in the index copies, not in the log: lost
            assert report["edges"][kind] == 0
        assert before.edges["contradicts"] == 1 and before.edges["follows"] == 1
        assert any("contradicts" in lost for lost in report["lost"])
        assert report["edges"]["supersedes"] == before.edges["supersedes"] == 1
        assert report["edges"]["mentions"] == before.edges["mentions"]
    else:
        assert report["graph_source"] == "snapshot" and report["lost"] == []
        assert after.edges == before.edges
    if damage.logged:
        # the garbled record's memory came back from its index copy; its put event is lost
        assert report["log_unreadable"] == 1 and report["from_index"] == 1
        assert report["log_records"] > 0

    # damaged files were moved aside, byte for byte, never deleted
    for name, moved in report["moved_aside"].items():
        if name in original:
            assert (store / moved).read_bytes() == original[name]
        else:
            assert (store / moved).is_dir()
    existed = damage.target in original or (store / f"{damage.target}").is_dir()
    assert (damage.target in report["moved_aside"]) == (existed and damage.name != "index-missing")


def test_dry_run_reports_the_same_and_writes_nothing(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    _garble(store / "graph.json")

    def listing() -> dict[str, bytes]:
        return {
            str(p.relative_to(store)): p.read_bytes()
            for p in sorted(store.rglob("*"))
            if p.is_file() and p.name != "store.lock"
        }

    files = listing()
    result = CliRunner().invoke(app, ["repair", str(store), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert listing() == files
    out = result.stdout
    assert "dry run: nothing written" in out
    assert f"would restore: {len(healthy[1].items)} memories of 2 entities" in out
    assert "lost: supports, contradicts, extends and follows edges" in out
    with pytest.raises(StoreCorruptError):
        _open(store)
    report = repair_store(store)
    assert report.memories == len(healthy[1].items) and not report.dry_run


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
        memory._store.graph.remove(extra.id)
        memory._store._compact()
    report = rebuild_store(store, embedder=info, embed=embedder.embed_documents)
    assert report.damaged == {} and report.from_index == 1
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
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(NEVER_COMPACTED), str(store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (store / "graph.json").exists()
    probe = tmp_path / "probe"
    shutil.copytree(store, probe)
    before = _state(probe)
    (store / "manifest.json").unlink()
    with pytest.raises(StoreCorruptError, match="is missing but the store holds data"):
        _open(store)
    report = repair_store(store, embedder=HashingEmbedder())
    # the log held every change: edges only the graph keeps came back too, nothing lost
    assert report.graph_source == "snapshot" and report.lost == []
    assert report.damaged == {"manifest.json": "missing"} and report.manifest_written
    assert report.memories == len(before.items) == 4
    assert report.edges == before.edges and before.edges["follows"] == 1
    after = _state(store)
    assert after.items == before.items and after.edges == before.edges


def test_repair_takes_the_write_lock_and_refuses_what_is_no_store(
    healthy: tuple[Path, Snapshot], tmp_path: Path
) -> None:
    from filelock import FileLock

    from memtrellis import StoreLockedError

    store = tmp_path / "store"
    shutil.copytree(healthy[0], store)
    _garble(store / "graph.json")
    garbled = (store / "graph.json").read_bytes()
    busy = FileLock(str(store / "store.lock"))  # another writer holds the lock
    with busy, pytest.raises(StoreLockedError):
        repair_store(store, lock_timeout=0.2)
    assert (store / "graph.json").read_bytes() == garbled  # untouched while locked
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
    rebuilt = "graph.json" if flag == "--from-index" else "chroma"
    assert report["moved_aside"][rebuilt].startswith(f"{rebuilt}.replaced-")
    assert report["vectors_written"] == (len(before.items) if flag == "--from-graph" else 0)
    after = _state(store)
    assert after.items == before.items
