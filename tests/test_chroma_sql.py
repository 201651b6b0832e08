"""The child that runs our statements on Chroma's SQLite file (store/_chroma_sql.py): one
child answers the operations in turn, and whatever becomes of it, each operation is
answered as a child of its own would answer it."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memtrellis.store import _chroma_sql
from memtrellis.store._chroma_sql import ChromaSqlError, chroma_sql

INDEX = "memtrellis_queue_by_topic"


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A file shaped like Chroma's where the operations look: a write log and a segment."""
    path = tmp_path / "chroma.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE embeddings_queue (seq_id INTEGER, topic TEXT)")
        db.execute("CREATE TABLE collections (id TEXT, name TEXT)")
        db.execute("CREATE TABLE segments (id TEXT, collection TEXT)")
        db.execute("INSERT INTO collections VALUES ('c1', 'alice')")
        db.execute("INSERT INTO segments VALUES ('s1', 'c1')")
    db.close()
    return path


@pytest.fixture
def fresh() -> Iterator[None]:
    """No answering child at the start (one left by another test is let go) nor after."""
    _chroma_sql._close()
    yield
    _chroma_sql._close()


def _pid() -> int:
    child = _chroma_sql._child
    assert child is not None and child.process.poll() is None
    return child.process.pid


def _indexes(path: Path) -> set[str]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        db.close()


def _exited(pid: int, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def test_one_child_answers_every_operation_in_turn(database: Path, fresh: None) -> None:
    assert chroma_sql("index_log", database, INDEX) is True
    pid = _pid()
    assert INDEX in _indexes(database)
    assert chroma_sql("index_log", database, INDEX) is True  # there already
    assert chroma_sql("segments", database, {"name": "alice", "collection_id": None}) == ["s1"]
    assert chroma_sql("segments", database, {"name": "x", "collection_id": "c1"}) == ["s1"]
    assert chroma_sql("check", database) == ["ok"]
    assert chroma_sql("vacuum", database) is True
    assert _pid() == pid
    with pytest.raises(ChromaSqlError, match="unable to open database file"):
        chroma_sql("index_log", database.parent / "none.sqlite3", INDEX)
    assert chroma_sql("check", database) == ["ok"]
    assert _pid() == pid


def test_an_operation_s_error_is_typed_and_the_child_answers_on(
    database: Path, fresh: None
) -> None:
    chroma_sql("check", database)
    pid = _pid()
    with pytest.raises(ChromaSqlError, match="unknown operation 'drop'"):
        chroma_sql("drop", database)
    with pytest.raises(ChromaSqlError, match=r"(?s)index_log on .*chroma\.sqlite3: .*syntax error"):
        chroma_sql("index_log", database, "bad name!")
    assert chroma_sql("check", database) == ["ok"]
    assert _pid() == pid


def test_a_relative_path_is_the_caller_s_at_each_call(
    database: Path, fresh: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(database.parent)
    assert chroma_sql("check", Path("chroma.sqlite3")) == ["ok"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    [problem] = chroma_sql("check", Path("chroma.sqlite3"))  # no such file here
    assert "unable to open database file" in problem
    assert not (elsewhere / "chroma.sqlite3").exists()


def test_a_killed_child_is_replaced_unseen(database: Path, fresh: None) -> None:
    chroma_sql("check", database)
    pid = _pid()
    os.kill(pid, signal.SIGKILL)
    assert _exited(pid)
    assert chroma_sql("index_log", database, INDEX) is True
    assert _pid() != pid
    assert INDEX in _indexes(database)


def test_the_child_exits_when_idle_and_the_next_operation_starts_another(
    database: Path, fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_chroma_sql, "_IDLE", 0.2)
    chroma_sql("check", database)
    pid = _pid()
    assert _exited(pid)
    assert chroma_sql("check", database) == ["ok"]
    assert _pid() != pid


def test_closing_its_end_ends_the_child(database: Path, fresh: None) -> None:
    chroma_sql("check", database)
    child = _chroma_sql._child
    assert child is not None
    _chroma_sql._close()  # as at this process's exit
    assert child.process.returncode == 0
    assert _chroma_sql._child is None


def test_another_temp_directory_gets_another_child(
    database: Path, fresh: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chroma_sql("check", database)
    pid = _pid()
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where SQLite writes VACUUM's copy
    assert chroma_sql("vacuum", database) is True
    assert _pid() != pid
    assert _exited(pid)


def test_a_busy_child_leaves_the_operation_to_a_child_of_its_own(
    database: Path, fresh: None
) -> None:
    chroma_sql("check", database)
    pid = _pid()
    with _chroma_sql._lock:  # another thread's operation is being answered
        assert chroma_sql("index_log", database, INDEX) is True
        with pytest.raises(ChromaSqlError, match="unknown operation"):
            chroma_sql("drop", database)
    assert INDEX in _indexes(database)
    assert _pid() == pid
