"""benchmarks/scale.py at a toy size, so that the script cannot rot (no timings asserted)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "scale.py"
TINY = ["--per-entity", "20", "--adds", "2", "--queries", "3", "--store-capture", "2"]
TINY += ["--build-workers", "0", "--warmup", "1"]


def run(*args: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ.copy()
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )


def figures(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_builds_measures_and_reuses_its_cache(tmp_path: Path) -> None:
    cache, out = tmp_path / "cache", tmp_path / "scale.json"
    first = run(
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
    assert first.returncode == 0, first.stdout + first.stderr
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
    [_, larger] = data["ratios"]
    assert {c["label"] for c in larger["targets"]} >= {"open", "RSS", "add p50", "close"}
    assert data["capture"]["turns"] == 3
    assert data["capture"]["stored"] == 3
    assert (tmp_path / "scale.png").stat().st_size > 0
    assert "against 40 memories" in first.stdout

    again = run("--sizes", "60", "--capture-turns", "0", "--cache", str(cache), "--json", str(out))
    assert again.returncode == 0, again.stdout + again.stderr
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


def test_public_builder(tmp_path: Path) -> None:
    out, scratch = tmp_path / "scale.json", tmp_path / "tmp"
    scratch.mkdir()
    done = run(
        "--sizes",
        "20",
        "--builder",
        "add",
        "--capture-turns",
        "0",
        "--json",
        str(out),
        tmpdir=scratch,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = figures(out)["rows"]
    assert row["build"]["written"] == 20
    assert not list(scratch.iterdir())  # without --cache the built store is removed


@pytest.mark.skipif(
    "postgres_url" in inspect.signature(Memory).parameters, reason="Memory has a PostgreSQL mode"
)
def test_postgres_flag_errors_clearly_without_that_mode() -> None:
    done = run(
        "--sizes",
        "20",
        "--postgres-url",
        "postgresql://nobody@localhost/none",
        "--chroma-url",
        "http://127.0.0.1:9",
    )
    assert done.returncode == 2
    assert "postgres_url" in done.stderr


@pytest.mark.server
@pytest.mark.postgres
def test_postgres_mode_rows(tmp_path: Path, postgres_url: str, chroma_server: str) -> None:
    out, scratch = tmp_path / "scale.json", tmp_path / "tmp"
    scratch.mkdir()
    done = run(
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
        tmpdir=scratch,
    )
    assert done.returncode == 0, done.stdout + done.stderr
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
    assert "visible_p50_ms" in data["ratios"][1]
    assert "commit to visibility" in done.stdout
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


def test_postgres_options_are_checked() -> None:
    done = run("--sizes", "20", "--postgres-url", "postgresql://nobody@localhost/none")
    assert done.returncode == 2
    assert "--chroma-url" in done.stderr
    done = run("--postgres", "--cache", "x")
    assert done.returncode == 2
    assert "--cache" in done.stderr
