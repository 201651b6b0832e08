"""benchmarks/scale.py at a toy size, so that the script cannot rot (no timings asserted).

The script's parent part runs in this process (``scale.main``); every build, row and
capture still runs in a ``scale.py --child`` process of its own as in a real run, forked
from the tests' zygote (tests/zygote.py) rather than started fresh. A fresh Python
process pays ~1.3 CPU-s of imports (Chroma, memtrellis), which was most of what these
runs cost: that is saved for the children, as are the parent's own start and the
argument checks' processes, and the interleaved recall asks 3 questions, not 200.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import zygote
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "scale.py"
TINY = ["--per-entity", "20", "--adds", "2", "--queries", "3", "--store-capture", "2"]
TINY += ["--build-workers", "0", "--warmup", "1", "--interleaved", "3"]


@pytest.fixture(scope="module")
def scale() -> Iterator[ModuleType]:
    """benchmarks/scale.py as a module (its helpers import each other by name), whose child
    processes fork from this process's zygote (tests/zygote.py): each is still a process
    of its own running ``scale.py --child``, without ~1.3 CPU-s of imports first."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        module = importlib.import_module("scale")
    finally:
        sys.path.remove(str(SCRIPT.parent))
    forked = zygote.forked_module()
    with pytest.MonkeyPatch.context() as patch:
        for helper in ("_scale_build", "_scale_servers"):
            patch.setattr(sys.modules[helper], "subprocess", forked)
        yield module


def run(
    scale: ModuleType,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    monkeypatch: pytest.MonkeyPatch | None = None,
    tmpdir: Path | None = None,
) -> str:
    """``scale.py`` with the tiny settings and ``args``; what it printed."""
    if tmpdir is not None:  # this process's temp directory and its children's
        assert monkeypatch is not None
        monkeypatch.setenv("TMPDIR", str(tmpdir))
        monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    capsys.readouterr()
    scale.main([*TINY, *args])
    return capsys.readouterr().out


def refused(scale: ModuleType, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The script refuses ``args`` as a usage error (exit 2); what it told stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        scale.main([*TINY, *args])
    assert exit_.value.code == 2
    return capsys.readouterr().err


# A hang guard, not a speed bound: each of these tests starts 9 fresh Python processes (a
# build, a row, ... each), which a loaded two-core machine may take minutes to get through.
SLOW_RUN = pytest.mark.timeout(600)


def figures(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@SLOW_RUN
def test_builds_measures_and_reuses_its_cache(
    scale: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cache, out = tmp_path / "cache", tmp_path / "scale.json"
    first = run(
        scale,
        capsys,
        "--sizes",
        "40,60",
        "--capture-turns",
        "3",
        "--cache",
        str(cache),
        "--build-workers",
        "1",
        "--json",
        str(out),
        "--plot",
        str(tmp_path / "scale.png"),
    )
    data = figures(out)
    rows = data["rows"]
    assert [(r["memories"], r["entities"]) for r in rows] == [(40, 2), (60, 3)]
    for row in rows:
        for figure in ("open_s", "rss_mb", "add_p50_ms", "recall_p99_ms", "close_s"):
            assert row[figure] >= 0
        assert 0 <= row["recall_hit_at_10"] <= 1
        assert row["capture_hash"]["drained"]
    assert rows[0]["build"]["written"] == 40
    # the 60 store started as a copy of the 40 one and wrote only the entity it lacked
    assert rows[1]["build"]["extended_from"] == 40
    assert rows[1]["build"]["written"] == 20
    # both sizes asked the same questions in one process
    interleaved = rows[1]["interleaved"]
    assert interleaved["queries"] == 3 and set(interleaved["sizes"]) == {"40", "60"}
    assert interleaved["recall_p50_ratio"] > 0
    [_, larger] = data["ratios"]
    assert {c["label"] for c in larger["targets"]} >= {"open", "RSS", "add p50", "close"}
    assert data["capture"]["turns"] == 3
    assert data["capture"]["stored"] == 3
    assert (tmp_path / "scale.png").stat().st_size > 0
    assert "against 40 memories" in first

    run(
        scale,
        capsys,
        "--sizes",
        "60",
        "--capture-turns",
        "0",
        "--cache",
        str(cache),
        "--json",
        str(out),
    )
    [row] = figures(out)["rows"]
    assert row["build"]["cached"]
    # what the rows wrote into the cached store was deleted again
    [store] = [p for p in cache.iterdir() if p.is_dir() and "-60-" in p.name]
    memory = Memory(store, embedder=HashingEmbedder(384))
    try:
        assert memory.health().total_memories == 60
        assert len(memory.list(entity_id="user-0000", limit=100)) == 20
    finally:
        memory.close()


def test_public_builder(
    scale: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    out, scratch = tmp_path / "scale.json", tmp_path / "tmp"
    scratch.mkdir()
    run(
        scale,
        capsys,
        "--sizes",
        "20",
        "--builder",
        "add",
        "--capture-turns",
        "0",
        "--json",
        str(out),
        monkeypatch=monkeypatch,
        tmpdir=scratch,
    )
    [row] = figures(out)["rows"]
    assert row["build"]["written"] == 20
    assert not list(scratch.iterdir())  # without --cache the built store is removed


@pytest.mark.skipif(
    "postgres_url" in inspect.signature(Memory).parameters, reason="Memory has a PostgreSQL mode"
)
def test_postgres_flag_errors_clearly_without_that_mode(
    scale: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    error = refused(
        scale,
        capsys,
        "--sizes",
        "20",
        "--postgres-url",
        "postgresql://nobody@localhost/none",
        "--chroma-url",
        "http://127.0.0.1:9",
    )
    assert "postgres_url" in error


@SLOW_RUN
@pytest.mark.server
@pytest.mark.postgres
def test_postgres_mode_rows(
    scale: ModuleType,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    postgres_url: str,
    chroma_server: str,
) -> None:
    out, scratch = tmp_path / "scale.json", tmp_path / "tmp"
    scratch.mkdir()
    done = run(
        scale,
        capsys,
        "--sizes",
        "20,40",
        "--postgres-url",
        postgres_url,
        "--chroma-url",
        chroma_server,
        "--capture-turns",
        "0",
        "--visibility-writes",
        "3",
        "--json",
        str(out),
        monkeypatch=monkeypatch,
        tmpdir=scratch,
    )
    data = figures(out)
    assert data["postgres"] == "given servers"
    assert "postgres_url" not in data["settings"]  # a URL may hold a password
    rows = data["rows"]
    assert [r["build"]["written"] for r in rows] == [20, 40]  # sizes share no entity
    for row in rows:
        assert 0 <= row["recall_hit_at_10"] <= 1
        assert row["visibility"]["writes"] == 3
        assert row["add_warmup_p50_ms"] > 0 and row["recall_warmup_p50_ms"] > 0
        assert row["visible_p99_ms"] >= row["visible_p50_ms"] >= 0
    assert set(rows[1]["interleaved"]["sizes"]) == {"20", "40"}
    assert "visible_p50_ms" in data["ratios"][1]
    assert "commit to visibility" in done
    assert not list(scratch.iterdir())  # both processes' directories are removed
    # the 40 store's entities are its own, beside the 20 store's, in the one database
    memory = Memory(
        tmp_path / "check",
        embedder=HashingEmbedder(384),
        chroma_url=chroma_server,
        postgres_url=postgres_url,
    )
    try:
        assert len(memory.list(entity_id="n40-user-0001", limit=100)) == 20
        # the served entity: 20 built, 1 + 2 added by the row (warm-up and timed), 3 by
        # the visibility writes
        assert len(memory.list(entity_id="n20-user-0000", limit=100)) == 26
    finally:
        memory.close()


def test_postgres_options_are_checked(
    scale: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    error = refused(
        scale, capsys, "--sizes", "20", "--postgres-url", "postgresql://nobody@localhost/none"
    )
    assert "--chroma-url" in error
    assert "--cache" in refused(scale, capsys, "--postgres", "--cache", "x")
