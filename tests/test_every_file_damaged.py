"""Every file of a store, deleted, cut in half or garbled: the store either refuses to
open with a typed error naming the repair that cures it, or opens with every memory.

The store (two entities, each with memories in its snapshot and more only in its log,
as a writer that died leaves it) is built once; its files are listed as they are on
disk, so a file the layout gains is covered without editing this test. A refusal is
then repaired with the command it names and the store must hold every memory again.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from memtrellis import MemtrellisError, StoreCorruptError, repair_store
from memtrellis.testing import HashingEmbedder
from test_open_damage import build, whole

ACTIONS = ("deleted", "truncated", "garbled")
#: Chroma's native HNSW reader crashes the process (SIGSEGV) on some garbled segment
#: files, and loads a segment whose id map (index_metadata.pickle) is gone as an empty one:
#: neither can be caught from Python (docs/reliability.md states these limits).
BEYOND_REACH = {
    ("data_level0.bin", "garbled"): "Chroma's HNSW reader crashes the process",
    ("header.bin", "garbled"): "Chroma's HNSW reader crashes the process",
    ("index_metadata.pickle", "deleted"): "Chroma loads the segment as an empty one",
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("every-file") / "store"
    build(path, snapshotted=20, logged=10)
    return path


def store_files(base: Path) -> list[str]:
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())


#: Every kind of file the store above holds (checked against the real listing below).
CASE_FILES = (
    "manifest.json",
    "catalog.sqlite3",
    "catalog.sqlite3-wal",
    "catalog.sqlite3-shm",
    "store.lock",
    "spool/<writer>.jsonl",
    "spool/<writer>.jsonl.lock",
    "shards/<ana>/shard.json",
    "shards/<ana>/graph.json",
    "shards/<ana>/wal-<generation>.jsonl",
    "shards/<ana>/shard.lock",
    "chroma/chroma.sqlite3",
    "chroma/<segment>/header.bin",
    "chroma/<segment>/data_level0.bin",
    "chroma/<segment>/length.bin",
    "chroma/<segment>/link_lists.bin",
    "chroma/<segment>/index_metadata.pickle",
)


def _cases() -> list[tuple[str, str]]:
    return [(f, a) for f in CASE_FILES for a in ACTIONS]


def _pattern(relative: str) -> str:
    """A file's path with what varies between stores (the shard's hash, its generation,
    Chroma's segment id, the spool's writer id) named instead."""
    parts = relative.split("/")
    if parts[0] == "shards":
        name = parts[-1]
        if name.startswith("wal-"):
            name = "wal-<generation>.jsonl"
        return f"shards/<ana>/{name}"
    if parts[0] == "spool":
        return "spool/<writer>.jsonl" + (".lock" if parts[-1].endswith(".lock") else "")
    if parts[0] == "chroma" and len(parts) == 3:
        return f"chroma/<segment>/{parts[-1]}"
    return relative


def test_the_cases_cover_every_file_of_the_store(base: Path) -> None:
    assert sorted({_pattern(f) for f in store_files(base)}) == sorted(CASE_FILES)


def _damage(target: Path, action: str) -> None:
    raw = target.read_bytes()
    if action == "deleted":
        target.unlink()
    elif action == "truncated":
        target.write_bytes(raw[: len(raw) // 2])
    else:
        middle = len(raw) // 2
        target.write_bytes(raw[:middle] + b"\x00\xffgarbage{{[" + raw[middle + 11 :])


@pytest.mark.parametrize(("kind", "action"), _cases(), ids=[f"{f}-{a}" for f, a in _cases()])
def test_a_damaged_file_is_refused_with_its_repair_or_loses_nothing(
    kind: str, action: str, base: Path, tmp_path: Path
) -> None:
    reason = BEYOND_REACH.get((kind.rsplit("/", 1)[-1], action))
    if reason is not None:
        pytest.skip(reason)
    store = tmp_path / "store"
    shutil.copytree(base, store)
    [target] = [f for f in store_files(store) if _pattern(f) == kind]
    _damage(store / target, action)
    try:
        whole(store, 30)
    except StoreCorruptError as exc:
        assert exc.command is not None and exc.command.startswith(f"memtrellis repair {store}")
        flags = shlex.split(exc.command)[3:]
        repair_store(
            store,
            embedder=HashingEmbedder() if "--embedder" in flags else None,
            source="graph" if "--from-graph" in flags else "auto",
        )
        whole(store, 30)
    except MemtrellisError as exc:  # typed, but it must name its cure
        pytest.fail(f"{type(exc).__name__} without a repair command: {exc}")
