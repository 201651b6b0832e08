"""``Memory(vector_process=True)``: the embedded Chroma served by a child process.

The child owns the same ``chroma`` directory the in-process index would, so a store opened
either way is the same store; it dies with its parent, restarts after a crash without
losing a write, and carries typed errors back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memtrellis import Memory, StoreCorruptError, VectorIndexUnavailableError
from memtrellis.store.vectorproc import VectorProcess
from memtrellis.testing import HashingEmbedder, store_of


def _open(path: Path, **kwargs: object) -> Memory:
    return Memory(path, embedder=HashingEmbedder(), **kwargs)  # type: ignore[arg-type]


def _gone(pid: int, within: float = 30.0) -> bool:
    """Whether process ``pid`` exited (or is a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def _child(memory: Memory) -> VectorProcess:
    vectors = store_of(memory).vectors
    assert isinstance(vectors, VectorProcess)
    return vectors


def test_the_child_serves_the_store_that_opens_in_process_afterwards(tmp_path: Path) -> None:
    memory = _open(tmp_path, vector_process=True)
    vectors = _child(memory)
    pid = vectors.pid
    assert pid is not None and pid != os.getpid()
    memory.add("Ana's daughter Mia starts school in Porto in September.", entity_id="ana")
    memory.add("Ana plays the cello on Sundays.", entity_id="ana")
    memory.add("Bo keeps bees on a roof in Lyon.", entity_id="bo")
    [school] = [m for m in memory.list(entity_id="ana") if "school" in m.text]
    hits = memory.recall("Where does Mia go to school?", entity_id="ana", k=1)
    assert [m.id for m in hits.memories] == [school.id]
    assert all(m.scope.entity_id == "ana" for m in memory.recall("bees", entity_id="ana").memories)
    assert memory.forget(school.id, entity_id="ana") == 1
    memory.close()
    assert _gone(pid)

    again = _open(tmp_path)  # in this process: the very same Chroma data
    try:
        ana = store_of(again).vectors
        texts = sorted(m.text for m in again.list(entity_id="ana"))
        assert texts == ["Ana plays the cello on Sundays."]
        assert set(ana.item_copies("ana")[0]) == {m.id for m in again.list(entity_id="ana")}
        assert ana.count("bo") == 1
    finally:
        again.close()


def test_a_killed_child_is_replaced_unseen_and_no_write_is_lost(tmp_path: Path) -> None:
    memory = _open(tmp_path, vector_process=True)
    try:
        memory.add("Ana lives in Porto.", entity_id="ana")
        vectors = _child(memory)
        first = vectors.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert _gone(first)
        memory.add("Ana works night shifts at the harbour.", entity_id="ana")
        assert vectors.pid not in (None, first)
        stored = {m.id for m in memory.list(entity_id="ana")}
        assert len(stored) == 2
        assert vectors.has("ana", sorted(stored)) == stored
        hits = memory.recall("harbour shifts", entity_id="ana", k=1)
        assert [m.text for m in hits.memories] == ["Ana works night shifts at the harbour."]
    finally:
        memory.close()


def test_a_child_that_cannot_come_back_raises_typed_errors(tmp_path: Path) -> None:
    index = VectorProcess(tmp_path / "chroma")
    try:
        pid = index.pid
        assert pid is not None
        (tmp_path / "chroma" / "chroma.sqlite3").write_bytes(b"not a database" * 100)
        os.kill(pid, signal.SIGKILL)
        assert _gone(pid)
        with pytest.raises(StoreCorruptError):  # the restart met the damaged file
            index.count("ana")
    finally:
        index.close()
    with pytest.raises(VectorIndexUnavailableError, match="closed"):
        index.count("ana")


def test_the_child_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from memtrellis import Memory
        from memtrellis.testing import HashingEmbedder, store_of
        memory = Memory({str(tmp_path)!r}, embedder=HashingEmbedder(), vector_process=True)
        memory.add("Ana lives in Porto.", entity_id="ana")
        print(store_of(memory).vectors.pid, flush=True)
        time.sleep(120)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert not _gone(child, within=0.2)
        parent.kill()
        parent.wait(30)
        assert _gone(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(30)
        if parent.stdout is not None:
            parent.stdout.close()


def test_a_damaged_index_is_reported_typed_through_the_child(tmp_path: Path) -> None:
    memory = _open(tmp_path)
    memory.add("Ana lives in Porto.", entity_id="ana")
    memory.close()
    database = tmp_path / "chroma" / "chroma.sqlite3"
    database.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreCorruptError) as raised:
        _open(tmp_path, vector_process=True)
    assert raised.value.path == str(tmp_path / "chroma")
    assert raised.value.command is not None and "memtrellis repair" in raised.value.command


def test_async_users_share_one_child_and_keep_to_their_own_memories(tmp_path: Path) -> None:
    users = [f"user-{n}" for n in range(6)]

    async def scenario(memory: Memory) -> dict[str, list[str]]:
        async def user(entity: str) -> list[str]:
            seen: list[str] = []
            for turn in range(4):
                hits = await memory.arecall("where do I live", entity_id=entity)
                seen.extend(m.scope.entity_id for m in hits.memories)
                await memory.acapture(
                    {"role": "user", "content": f"{entity} note {turn}: I live on street {turn}."},
                    entity_id=entity,
                )
            return seen

        results = await asyncio.gather(*(user(e) for e in users))
        assert await memory.aflush(timeout=120)
        return dict(zip(users, results, strict=True))

    memory = _open(tmp_path, vector_process=True)
    try:
        seen = asyncio.run(scenario(memory))
        for entity in users:
            assert set(seen[entity]) <= {entity}
            texts = sorted(m.text for m in memory.list(entity_id=entity))
            assert texts == [f"{entity} note {t}: I live on street {t}." for t in range(4)]
            assert _child(memory).count(entity) == 4
    finally:
        memory.close()
