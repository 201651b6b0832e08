"""``Memory(engine_process=True)``: the whole engine in a child process, the same facade.

The same calls on the same inputs give the same results as in process, with the same
public types and typed errors; scope blocks, hooks and adapters' counters stay in the
app's process; a killed engine gives a typed error (never a hang) and the next call starts
a new one; closing, exiting or dying leaves no process behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memtrellis import (
    EmbeddingMismatchError,
    EngineProcessError,
    InvalidInputError,
    Memory,
    MemoryItem,
    MemoryNotFoundError,
    RecallResult,
    Scope,
    StoreClosedError,
)
from memtrellis.testing import HashingEmbedder

FACTS = [
    ("ana", "Ana's daughter Mia starts school in Porto in September."),
    ("ana", "Ana plays the cello on Sundays."),
    ("ana", "Ana moved from Lyon to Porto in 2023."),
    ("bo", "Bo keeps bees on a roof in Lyon."),
]


def _open(path: Path, **kwargs: Any) -> Memory:
    return Memory(path, embedder=HashingEmbedder(), **kwargs)


def _gone(pid: int, within: float = 30.0) -> bool:
    """Whether process ``pid`` exited within ``within`` seconds: reaped, or a zombie whose
    threads have all ended (a killed process's leader is a zombie before its threads are)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            status = Path(f"/proc/{pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X") and "\nThreads:\t1\n" in status:
            return True
        time.sleep(0.05)
    return False


def _pid(memory: Memory) -> int:
    pid = getattr(memory, "pid", None)
    assert isinstance(pid, int) and pid != os.getpid()
    return pid


def _seed(memory: Memory) -> None:
    for entity, text in FACTS:
        memory.add(text, entity_id=entity, memory_type="fact")


def _view(result: RecallResult) -> list[tuple[str, str, float]]:
    return [(h.memory.text, h.memory.scope.entity_id, round(h.score, 6)) for h in result.items]


def _calls(memory: Memory) -> dict[str, Any]:
    ana = memory.list(entity_id="ana")
    [school] = [m for m in ana if "school" in m.text]
    return {
        "recall": _view(memory.recall("Where does Mia go to school?", entity_id="ana")),
        "recall_k1": _view(memory.recall("bees", entity_id="bo", k=1)),
        "list": [(m.text, m.memory_type.value) for m in ana],
        "get": memory.get(school.id).text,
        "history": [e.action for e in memory.history(school.id)],
        "entities": memory.entities(),
        "relate": [p.describe() for p in memory.relate("Ana", "Porto", entity_id="ana").paths],
        "total": memory.health().total_memories,
    }


def test_the_same_calls_give_the_same_results_as_in_process(tmp_path: Path) -> None:
    local = _open(tmp_path / "local")
    remote = _open(tmp_path / "remote", engine_process=True)
    try:
        _seed(local)
        _seed(remote)
        assert _calls(remote) == _calls(local)
        hits = remote.recall("cello", entity_id="ana")
        assert isinstance(hits, RecallResult) and isinstance(hits.items[0].memory, MemoryItem)
        assert hits.items[0].memory.scope == Scope(entity_id="ana")
        [old] = remote.add("Bo lives in Lyon", entity_id="bo", memory_type="fact")
        [new] = remote.add("Bo moved to Nantes", entity_id="bo", memory_type="fact")
        assert [v.text for v in remote.versions(old.id)] == [old.text, new.text]
        assert remote.update(new.id, tags=["moved"]).tags == ["moved"]
        assert remote.forget(new.id) == 1
    finally:
        local.close()
        remote.close()


def test_async_calls_match_sync_calls_and_scope_blocks_stay_in_the_app(tmp_path: Path) -> None:
    memory = _open(tmp_path, engine_process=True)

    async def scenario() -> tuple[list[Any], list[str]]:
        with memory.scope(entity_id="ana"):
            await memory.aadd("Ana likes green tea", memory_type="preference")
            await memory.acapture({"role": "user", "content": "I bake bread on Fridays."})
            assert await memory.aflush(timeout=120)
        with memory.scope(entity_id="bo"):
            await memory.aadd("Bo likes black coffee", memory_type="preference")
        results = await asyncio.gather(
            *(memory.arecall("what does she drink?", entity_id="ana") for _ in range(12))
        )
        texts = [m.text for m in await memory.alist(entity_id="ana")]
        return [_view(r) for r in results], texts

    try:
        views, texts = asyncio.run(scenario())
        assert texts == ["Ana likes green tea", "I bake bread on Fridays."]
        # each recall counts towards the memories' heat, so compare what was found
        found = {text for text, _entity, _score in views[0]}
        assert all({text for text, _e, _s in view} == found for view in views)
        again = memory.recall("what does she drink?", entity_id="ana")
        assert {h.memory.text for h in again.items} == found == set(texts)
        assert {m.scope.entity_id for m in memory.list(entity_id="bo")} == {"bo"}
        with memory.scope(entity_id="bo"):
            assert [h.memory.text for h in memory.recall("coffee").items] == [
                "Bo likes black coffee"
            ]
        memory.count_adapter("call", source="my_app")
        memory.report_failure("recall", source="my_app")
        health = memory.health()
        assert health.adapter_counts == {"my_app.call": 1}
        assert health.adapter_failures == {"my_app.recall": 1}
        assert health.total_memories == 3
    finally:
        memory.close()


def test_errors_come_back_with_their_types(tmp_path: Path) -> None:
    memory = _open(tmp_path, engine_process=True)
    try:
        with pytest.raises(MemoryNotFoundError):
            memory.get("no-such-id")
        with pytest.raises(InvalidInputError):
            memory.recall("tea", k=0)
        with pytest.raises(InvalidInputError, match="forget"):
            memory.forget()
        with pytest.raises(InvalidInputError):  # a function cannot be sent to the engine
            memory.add({"role": "user", "content": lambda: None})  # type: ignore[dict-item]

        async def failing() -> None:
            with pytest.raises(MemoryNotFoundError):
                await memory.aget("no-such-id")
            with pytest.raises(InvalidInputError):
                await memory.arecall("")

        asyncio.run(failing())
        memory.add("Still works", entity_id="ana")  # a failed call leaves the channel usable
        assert [m.text for m in memory.list(entity_id="ana")] == ["Still works"]
    finally:
        memory.close()
    with pytest.raises(StoreClosedError):
        memory.list()


def test_an_llm_that_cannot_be_pickled_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    class Local:
        def __init__(self) -> None:
            self.lock = threading.Lock()

        def complete(self, messages: object) -> str:
            return '{"memories": []}'

    with pytest.raises(InvalidInputError, match="llm= must be picklable"):
        _open(tmp_path, llm=Local(), engine_process=True)
    assert not (tmp_path / "graph").exists() and list(tmp_path.iterdir()) == []


def test_a_killed_engine_raises_typed_errors_and_the_next_call_starts_a_new_one(
    tmp_path: Path,
) -> None:
    memory = _open(tmp_path, engine_process=True)
    try:
        memory.add("Ana lives in Porto.", entity_id="ana")
        first = _pid(memory)

        async def during_a_burst() -> list[object]:
            calls = [memory.arecall("Porto", entity_id="ana") for _ in range(40)]
            burst = asyncio.gather(*calls, return_exceptions=True)
            await asyncio.sleep(0)
            os.kill(first, signal.SIGKILL)
            return await asyncio.wait_for(burst, 120)  # a guard against a hang, not a timing

        outcomes = asyncio.run(during_a_burst())
        assert _gone(first)
        assert all(isinstance(o, (RecallResult, EngineProcessError)) for o in outcomes)
        assert any(isinstance(o, EngineProcessError) for o in outcomes)
        memory.add("x", entity_id="ana")  # the next call started a new engine
        second = _pid(memory)
        assert second != first
        os.kill(second, signal.SIGKILL)  # between calls: the next call starts a new one
        assert _gone(second)
        texts = sorted(m.text for m in memory.list(entity_id="ana"))
        assert texts == ["Ana lives in Porto.", "x"]
    finally:
        memory.close()


def test_close_leaves_no_process_and_the_store_opens_in_process(tmp_path: Path) -> None:
    memory = _open(tmp_path, engine_process=True)
    memory.capture({"role": "user", "content": "Ana plays the cello on Sundays."}, entity_id="ana")
    pid = _pid(memory)
    memory.close()
    memory.close()  # twice is fine
    assert _gone(pid, within=5.0)
    again = _open(tmp_path)  # the turn was drained on close, into the same store
    try:
        assert [m.text for m in again.list(entity_id="ana")] == ["Ana plays the cello on Sundays."]
    finally:
        again.close()


def test_streams_and_files_export_and_import_through_the_engine(tmp_path: Path) -> None:
    source = _open(tmp_path / "a", engine_process=True)
    target = _open(tmp_path / "b", engine_process=True)
    try:
        _seed(source)
        stream = io.StringIO()
        assert source.export(stream) == len(FACTS)
        assert source.export(tmp_path / "dump.jsonl", entity_id="bo") == 1
        report = target.import_(io.StringIO(stream.getvalue()))
        assert report.imported == len(FACTS)
        assert sorted(m.text for m in target.list(entity_id="ana")) == sorted(
            t for e, t in FACTS if e == "ana"
        )
        assert target.import_(tmp_path / "dump.jsonl", entity_id="bee").imported == 1
        page = source.export_graph(tmp_path / "ana.graphml", format="graphml", entity_id="ana")
        assert page == tmp_path / "ana.graphml" and page.stat().st_size > 0
        assert source.embedder.dimension == len(source.embedder.embed_query("tea"))
    finally:
        source.close()
        target.close()


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_the_engine_exits_when_the_app_exits_or_dies(tmp_path: Path, how: str) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from memtrellis import Memory
        from memtrellis.testing import HashingEmbedder
        memory = Memory({str(tmp_path)!r}, embedder=HashingEmbedder(), engine_process=True)
        memory.capture("Ana lives in Porto.", entity_id="ana")
        print(memory.pid, flush=True)
        if {how!r} == "kill":
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
        if how == "kill":
            parent.kill()
        parent.wait(60)
        assert _gone(child)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(30)
        if parent.stdout is not None:
            parent.stdout.close()
    again = _open(tmp_path)  # the captured turn was stored, or is extracted on this open
    try:
        assert again.flush(timeout=60)
        assert [m.text for m in again.list(entity_id="ana")] == ["Ana lives in Porto."]
    finally:
        again.close()


def test_an_error_while_opening_comes_back_typed_and_leaves_no_process(tmp_path: Path) -> None:
    with _open(tmp_path, entity_id="ana") as memory:
        memory.add("Ana lives in Porto.")
    with pytest.raises(EmbeddingMismatchError):  # the store is pinned to another embedder
        Memory(tmp_path, embedder=HashingEmbedder(32), engine_process=True)
    with pytest.raises(TypeError, match="colour"):
        _open(tmp_path, engine_process=True, colour="blue")


def test_the_constructor_signature_is_the_facade_s(tmp_path: Path) -> None:
    parameters = inspect.signature(Memory).parameters
    assert list(parameters)[:2] == ["path", "entity_id"]
    assert parameters["engine_process"].default is False
    assert "postgres_url" in parameters


def _children() -> set[int]:
    """This process's live child processes."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            found |= {int(pid) for pid in (task / "children").read_text().split()}
    return {pid for pid in found if not _gone(pid, within=0.0)}


@pytest.mark.fresh_children  # this process's own children are counted
def test_closing_after_the_engine_died_leaves_no_process(tmp_path: Path) -> None:
    before = _children()
    memory = _open(tmp_path, engine_process=True)
    memory.add("Ana lives in Porto.", entity_id="ana")
    pid = _pid(memory)
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    memory.close()
    assert _children() <= before


@pytest.mark.skipif(not hasattr(os, "nice"), reason="CPU priority is a POSIX feature")
@pytest.mark.parametrize("configured", [None, "0", "3"])
@pytest.mark.fresh_children  # the priority a new process takes
def test_the_engine_yields_the_cpu_to_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configured: str | None
) -> None:
    if configured is None:
        monkeypatch.delenv("MEMTRELLIS_ENGINE_NICE", raising=False)
    else:
        monkeypatch.setenv("MEMTRELLIS_ENGINE_NICE", configured)
    expected = 10 if configured is None else int(configured)
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    with _open(tmp_path, engine_process=True) as memory:
        memory.add("Ana lives in Porto.", entity_id="ana")  # the engine serves calls as before
        assert os.getpriority(os.PRIO_PROCESS, _pid(memory)) == min(ours + expected, 19)
        assert [m.text for m in memory.list(entity_id="ana")] == ["Ana lives in Porto."]
    assert os.getpriority(os.PRIO_PROCESS, 0) == ours  # the app's own priority is unchanged


@pytest.mark.parametrize("configured", ["high", "-5", "20"])
def test_a_bad_engine_priority_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configured: str
) -> None:
    monkeypatch.setenv("MEMTRELLIS_ENGINE_NICE", configured)
    with pytest.raises(InvalidInputError, match="MEMTRELLIS_ENGINE_NICE"):
        _open(tmp_path, engine_process=True)
