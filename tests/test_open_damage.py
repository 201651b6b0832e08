"""A damaged log or vector index never opens in silence (issue 19, items 2, 3, 7 and 8).

One store of 200 memories is built once: 160 in the snapshot, 40 more only in the
write-ahead log (their writer died without closing), all 200 in the vector index. Each
test damages a copy. Opening and using it must either raise a typed memtrellis error
naming ``memtrellis repair <store>`` (and change no file), or open with every memory; the
repair it names then brings every memory back, with graph and index agreeing.
"""

from __future__ import annotations

import shlex
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import zygote
from memtrellis import Memory, StoreCorruptError, repair_store
from memtrellis.cli import app
from memtrellis.errors import StoreInconsistentError
from memtrellis.store.shardfiles import shard_dir
from memtrellis.testing import HashingEmbedder, store_of

SNAPSHOTTED = 160
LOGGED = 40
TOTAL = SNAPSHOTTED + LOGGED

ADD_AND_DIE = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    def word(n): return "".join(chr(97 + int(d)) for d in str(n))
    m = Memory(sys.argv[1], entity_id="ana", embedder=HashingEmbedder())
    for i in range(int(sys.argv[2]), int(sys.argv[3])):
        m.add(f"ana note {word(i)}", memory_type="episode", mode="fast")
    os._exit(0)  # no close: these stay in the write-ahead log, no new snapshot
"""


def word(number: int) -> str:
    """A number spelt in letters (13 -> "bd"): numbered texts would read as changed values."""
    return "".join(chr(97 + int(digit)) for digit in str(number))


def run(code: str, *args: str) -> None:
    proc = zygote.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr


def build(path: Path, snapshotted: int = SNAPSHOTTED, logged: int = LOGGED) -> None:
    with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        for number in range(snapshotted):
            memory.add(f"ana note {word(number)}", memory_type="episode", mode="fast")
    run(ADD_AND_DIE, str(path), str(snapshotted), str(snapshotted + logged))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("damage") / "store"
    build(path)
    return path


def copy(base: Path, tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(base, store)
    return store


def the_log(store: Path) -> Path:
    [log] = shard_dir(store, "ana").glob("wal-*.jsonl")
    return log


def outside_chroma(store: Path) -> dict[str, object]:
    """Every file but Chroma's (which Chroma rewrites when it merely opens), the locks and
    the capture spool; the catalog by its rows (SQLite checkpoints its files on close)."""
    found: dict[str, object] = {
        p.relative_to(store).as_posix(): p.read_bytes()
        for p in sorted(store.rglob("*"))
        if p.is_file()
        and p.relative_to(store).parts[0] not in ("chroma", "spool")
        and not p.name.endswith(".lock")
        and not p.name.startswith("catalog.sqlite3")
    }
    if (store / "catalog.sqlite3").exists():
        with sqlite3.connect(store / "catalog.sqlite3") as db:
            found["catalog rows"] = db.execute("SELECT * FROM entities ORDER BY seq").fetchall()
    return found


def whole(store: Path, total: int = TOTAL) -> None:
    """The store opens with every memory, graph and index agreeing, dense recall working."""
    with Memory(store, entity_id="ana", embedder=HashingEmbedder()) as memory:
        texts = {item.text for item in memory.list(limit=10_000)}
        assert texts == {f"ana note {word(n)}" for n in range(total)}
        shard = store_of(memory).shard("ana")
        copies, unreadable = store_of(memory).vectors.item_copies("ana")
        assert unreadable == 0 and set(copies) == set(shard.graph.memory_ids("ana"))
        assert memory.health().pending_index_writes == 0
        last = f"ana note {word(total - 1)}"
        [hit] = [r for r in memory.recall(last, k=3).items if r.memory.text == last]
        assert hit.explanation.dense_score is not None


def refused(store: Path, error: type[StoreCorruptError] = StoreCorruptError) -> StoreCorruptError:
    """Opening and reading the entity raises ``error`` naming the store's repair, and no
    file outside Chroma's changed."""
    before = outside_chroma(store)
    with (
        pytest.raises(error) as caught,  # the open or the first read
        Memory(store, entity_id="ana", embedder=HashingEmbedder()) as memory,
    ):
        memory.list()
    exc = caught.value
    assert exc.command is not None and exc.command.startswith(f"memtrellis repair {store}")
    assert f"`{exc.command}`" in " ".join(str(exc).split())
    assert outside_chroma(store) == before
    return exc


def drop_last_lines(count: int) -> Callable[[Path], None]:
    def damage(store: Path) -> None:
        log = the_log(store)
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join(lines[:-count]))

    return damage


def halve(store: Path) -> None:
    log = the_log(store)
    raw = log.read_bytes()
    log.write_bytes(raw[: len(raw) // 2])


def garble_a_middle_line(store: Path) -> None:
    log = the_log(store)
    lines = log.read_bytes().splitlines(keepends=True)
    lines[len(lines) // 2] = b'{"op": "put", \x00\xff garbled\n'
    log.write_bytes(b"".join(lines))


LOG_DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated-to-half": halve,
    "truncated-to-0-bytes": lambda s: the_log(s).write_bytes(b""),
    "deleted": lambda s: the_log(s).unlink(),
    "last-3-lines-dropped": drop_last_lines(3),
    "a-middle-line-garbled": garble_a_middle_line,
}


@pytest.mark.parametrize("damage", list(LOG_DAMAGE), ids=list(LOG_DAMAGE))
def test_a_damaged_log_raises_naming_repair_which_restores_every_memory(
    damage: str, base: Path, tmp_path: Path
) -> None:
    store = copy(base, tmp_path)
    LOG_DAMAGE[damage](store)
    exc = refused(store)
    assert exc.command == f"memtrellis repair {store}"
    if damage != "a-middle-line-garbled":  # that one is an unreadable record, as before
        assert isinstance(exc, StoreInconsistentError)
    report = repair_store(store)
    assert report.memories == TOTAL
    whole(store)


def test_a_torn_last_line_is_still_dropped_and_the_store_opens(base: Path, tmp_path: Path) -> None:
    store = copy(base, tmp_path)
    with the_log(store).open("ab") as handle:
        handle.write(b'{"op":"put","item":{"te')  # a crash in the middle of an append
    with Memory(store, entity_id="ana", embedder=HashingEmbedder()) as memory:
        assert len(memory.list(limit=1000)) == TOTAL
        assert memory.recovery_report.torn_records == 1
        assert memory.health().pending_index_writes == 0
    whole(store)


UPDATE_AND_DIE = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    m = Memory(sys.argv[1], entity_id="ana", embedder=HashingEmbedder())
    [item] = [i for i in m.list() if i.text == "Ana lives in Lyon"]
    m.update(item.id, text="Ana lives in Porto")
    os._exit(0)
"""

READ_AND_DIE = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    m = Memory(sys.argv[1], entity_id="ana", embedder=HashingEmbedder())
    m.list()  # loads the shard: the catalog records how far its log reaches
    os._exit(0)
"""


def test_a_lost_update_is_caught_by_the_log_position_the_catalog_recorded(
    tmp_path: Path,
) -> None:
    # The index count cannot see a lost change that kept the number of memories: the
    # catalog's record of the log's length at the same generation does.
    store = tmp_path / "store"
    with Memory(store, entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.add("Ana lives in Lyon", memory_type="fact")
    run(UPDATE_AND_DIE, str(store))
    run(READ_AND_DIE, str(store))
    log = the_log(store)
    log.unlink()
    exc = refused(store, StoreInconsistentError)
    assert "the catalog recorded" in str(exc) and exc.path == str(log)
    repair_store(store)
    with Memory(store, entity_id="ana", embedder=HashingEmbedder()) as memory:
        assert [i.text for i in memory.list()] == ["Ana lives in Porto"]


def test_a_log_record_without_its_record_id_is_a_typed_error(base: Path, tmp_path: Path) -> None:
    store = copy(base, tmp_path)
    log = the_log(store)
    lines = log.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"rid":', b'"xid":')  # the last ok loses its record id
    log.write_bytes(b"".join(lines))
    exc = refused(store)
    assert exc.path == str(log) and "without a record id" in str(exc)
    report = repair_store(store)
    assert report.log_unreadable == 1
    whole(store)


def _garble(target: Path) -> None:
    raw = target.read_bytes()
    middle = len(raw) // 2
    target.write_bytes(raw[:middle] + b"\xff" * 4096 + raw[middle + 4096 :])


def _database(store: Path) -> Path:
    return store / "chroma" / "chroma.sqlite3"


INDEX_DAMAGE: dict[str, Callable[[Path], None]] = {
    "deleted": lambda s: _database(s).unlink(),
    "truncated-to-0-bytes": lambda s: _database(s).write_bytes(b""),
    "truncated-to-half": lambda s: _database(s).write_bytes(
        _database(s).read_bytes()[: _database(s).stat().st_size // 2]
    ),
    "garbled-header": lambda s: _database(s).write_bytes(
        b"\xff" * 4096 + _database(s).read_bytes()[4096:]
    ),
}


@pytest.mark.parametrize("damage", list(INDEX_DAMAGE), ids=list(INDEX_DAMAGE))
def test_a_lost_or_damaged_index_database_raises_and_one_repair_restores_it(
    damage: str, base: Path, tmp_path: Path
) -> None:
    store = copy(base, tmp_path)
    INDEX_DAMAGE[damage](store)
    exc = refused(store)
    assert exc.command == f"memtrellis repair {store} --from-graph"
    # ONE run of the command it names repairs it, and says nothing false
    result = CliRunner().invoke(app, shlex.split(exc.command)[1:])
    assert result.exit_code == 0, result.output
    assert "Nothing was changed" not in result.output
    assert "moved aside: chroma -> chroma." in result.stdout
    whole(store)


KILLED_REBUILD = """
    import os, sys
    from memtrellis import repair_store
    from memtrellis.store.vectors import VectorIndex
    def die(self, items, embeddings):
        os.kill(os.getpid(), 9)  # the old vectors are dropped; none written again yet
    VectorIndex.upsert = die
    repair_store(sys.argv[1], source="graph")
"""


def test_a_garbled_page_in_the_index_database_is_typed_or_harmless(
    base: Path, tmp_path: Path
) -> None:
    # A damaged page is met only when a read reaches it: either the store opens whole, or
    # a typed error names the repair, which one run finishes.
    store = copy(base, tmp_path)
    _garble(_database(store))
    try:
        whole(store)
    except StoreCorruptError as exc:
        assert exc.command == f"memtrellis repair {store} --from-graph"
        assert "InternalError" in str(exc)  # chromadb's error, wrapped
        repair_store(store)
        whole(store)
    report = repair_store(store)  # the repair itself finds the page (SQLite's quick_check)
    assert report.damaged == {} or "chroma" in report.damaged
    whole(store)


def test_an_index_emptied_by_a_killed_rebuild_raises_and_the_next_repair_restores(
    base: Path, tmp_path: Path
) -> None:
    store = copy(base, tmp_path)
    proc = zygote.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_REBUILD), str(store)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == -9, proc.stderr
    exc = refused(store, StoreInconsistentError)
    assert "holds 0 vectors" in str(exc)
    report = repair_store(store)
    assert report.vectors_written == TOTAL
    whole(store)


def test_a_repair_stopped_after_writing_says_what_it_changed(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtrellis.store import repair as repair_module
    from memtrellis.store._corrupt import damaged

    store = copy(base, tmp_path)
    _garble(_database(store))

    def fail(path: Path, *args: object) -> None:
        raise damaged(path / "catalog.sqlite3", "cannot be written", path)

    monkeypatch.setattr(repair_module, "_write_catalog", fail)
    with pytest.raises(StoreCorruptError) as caught:
        repair_store(store)
    message = str(caught.value)
    assert "Nothing was changed" not in message
    assert "moved aside: chroma -> chroma.corrupt-" in message
    assert f"Run `memtrellis repair {store}` again" in message
    monkeypatch.undo()
    repair_store(store)
    whole(store)


@pytest.mark.parametrize("damage", ["truncated-to-half", "garbled-page"])
def test_one_repair_run_in_a_new_process_repairs_a_corrupt_index_database(
    damage: str, base: Path, tmp_path: Path
) -> None:
    # As a user runs it: the command alone, in a process that never opened the store.
    store = copy(base, tmp_path)
    if damage == "garbled-page":
        _garble(_database(store))
    else:
        INDEX_DAMAGE[damage](store)
    proc = subprocess.run(
        [sys.executable, "-m", "memtrellis", "repair", str(store)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Nothing was changed" not in proc.stdout + proc.stderr
    assert "moved aside: chroma -> chroma.corrupt-" in proc.stdout
    whole(store)


def test_chromas_error_for_a_damaged_database_becomes_a_store_corrupt_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever call meets the damaged page: Chroma's InternalError is never what a user sees.
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    store = tmp_path / "store"
    with Memory(store, entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.add("Ana lives in Porto")
        vectors = store_of(memory).vectors

        def malformed(self: Collection, *args: object, **kwargs: object) -> None:
            raise InternalError(
                "error returned from database: (code: 11) database disk image is malformed"
            )

        monkeypatch.setattr(Collection, "query", malformed)
        with pytest.raises(StoreCorruptError) as caught:
            memory.recall("Where does Ana live?")
        assert caught.value.command == f"memtrellis repair {store} --from-graph"
        assert caught.value.path == str(store / "chroma")
        monkeypatch.setattr(Collection, "count", malformed)
        with pytest.raises(StoreCorruptError):
            vectors.count("ana")
        busy = InternalError("error returned from database: (code: 5) database is locked")
        monkeypatch.setattr(Collection, "count", lambda self: (_ for _ in ()).throw(busy))
        with pytest.raises(InternalError):  # not damage: passed on as it is
            vectors.count("ana")
        monkeypatch.undo()
