"""Background capture: spool, worker, flush on close, recovery after a crash."""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest

import zygote
from memtrellis import (
    CaptureConfig,
    ExtractionConfig,
    InvalidInputError,
    Memory,
    StoreClosedError,
)
from memtrellis.testing import HashingEmbedder, ScriptedLLM, store_captured

TURN = [
    {"role": "user", "content": "Remind me: the boiler service is on 3 December.", "id": "t1"},
    {"role": "assistant", "content": "Noted, boiler service on 3 December.", "id": "t2"},
]


def test_capture_returns_while_the_worker_is_busy(store_path: Path) -> None:
    """Structural proof that capture never waits for extraction: the LLM is blocked."""
    release = threading.Event()
    entered = threading.Event()

    def blocked(messages: list[dict[str, str]]) -> str:
        entered.set()
        assert release.wait(30)
        return '{"memories": [{"value": "Boiler service is on 3 December", "source_ids": ["t1"]}]}'

    llm = ScriptedLLM([blocked] * 3)
    with Memory(store_path, entity_id="u", embedder=HashingEmbedder(), llm=llm) as memory:
        first = memory.capture(TURN)
        assert entered.wait(10)  # the worker is now stuck inside the LLM call
        more = [memory.capture([{"role": "user", "content": f"note {i}"}]) for i in range(2)]
        # all three captures returned although the worker has not finished the first
        assert len({first, *more}) == 3
        health = memory.health()
        assert health.capture_queue_depth == 3 and health.capture_spooled == 3
        assert memory.list() == []
        release.set()
        assert memory.flush(timeout=30)
        texts = {i.text for i in memory.list()}
        assert "Boiler service is on 3 December" in texts
        assert memory.health().capture_spooled == 0


def test_fast_capture_stored_after_flush_with_sources(store_path: Path) -> None:
    with Memory(store_path, entity_id="u", embedder=HashingEmbedder()) as memory:
        memory.capture(TURN, session_id="s1")
        assert memory.flush(timeout=30)
        items = memory.list()
        assert [i.sources[0].message_id for i in items] == ["t1", "t2"]
        assert all("mode:fast" in i.tags and i.scope.session_id == "s1" for i in items)
        assert memory.recall("boiler service").items[0].memory.sources[0].message_id in {"t1", "t2"}


def test_close_drains_the_queue(store_path: Path) -> None:
    llm = ScriptedLLM(['{"memories": [{"value": "Sam owns a kayak"}]}'], delay=0.2)
    with Memory(store_path, entity_id="u", embedder=HashingEmbedder(), llm=llm) as memory:
        memory.capture([{"role": "user", "content": "I own a kayak", "id": "k"}])
    # the closed memory left no spool behind: everything it captured was stored
    assert not list((store_path / "spool").glob("*.jsonl"))
    with Memory(store_path, entity_id="u", embedder=HashingEmbedder()) as memory:
        assert [i.text for i in memory.list()] == ["Sam owns a kayak"]


def test_capture_rejects_bad_input_in_the_caller(store_path: Path) -> None:
    with Memory(store_path, embedder=HashingEmbedder()) as memory:
        for bad in (None, 42, [], {"role": "user"}, Path("notes.md")):
            with pytest.raises(InvalidInputError):
                memory.capture(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            memory.capture("text", mode="fine")  # no LLM configured
        assert memory.health().capture_spooled == 0
    with pytest.raises(StoreClosedError):
        memory.capture("late")


def test_failures_retry_then_fall_back_and_are_counted(store_path: Path) -> None:
    boom = RuntimeError("model overloaded")
    llm = ScriptedLLM([boom, boom, boom])
    config = CaptureConfig(attempts=3, backoff=0.01)
    with Memory(
        store_path, entity_id="u", embedder=HashingEmbedder(), llm=llm, capture=config
    ) as memory:
        memory.capture([{"role": "user", "content": "My locker code is 4411", "id": "x"}])
        assert memory.flush(timeout=60)
        [item] = memory.list()
        # the LLM never answered: the turn is kept as a fallback memory, not dropped
        assert "extraction:fallback" in item.tags and "4411" in item.text
        health = memory.health()
        assert len(llm.calls) == 3  # the whole turn tried three times, one call each
        assert health.llm_failures == 3 and health.extraction_errors == 3
        assert health.extraction_retries == 2 and health.extraction_fallbacks == 1


CRASH_WITH_QUEUED_TURNS = """
    import os, sys, threading
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder, ScriptedLLM
    never = threading.Event()
    def hang(messages):
        never.wait()
    m = Memory(sys.argv[1], entity_id="u", embedder=HashingEmbedder(), llm=ScriptedLLM([hang]))
    m.capture([{"role": "user", "content": "The spare key is under the blue pot", "id": "a"}])
    m.capture([{"role": "user", "content": "Dentist on Friday at 9", "id": "b"}], mode="fast")
    os._exit(9)  # killed with both turns captured, none stored
"""


def test_spooled_turns_are_extracted_after_a_crash(store_path: Path) -> None:
    proc = zygote.run(
        [sys.executable, "-c", textwrap.dedent(CRASH_WITH_QUEUED_TURNS), str(store_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    llm = ScriptedLLM(['{"memories": [{"value": "The spare key is under the blue pot"}]}'])
    with Memory(store_path, entity_id="u", embedder=HashingEmbedder(), llm=llm) as memory:
        assert memory.flush(timeout=30)
        texts = sorted(i.text for i in memory.list())
        assert texts == ["Dentist on Friday at 9", "The spare key is under the blue pot"]
        assert len(llm.calls) == 1  # the fast entry kept its mode: no LLM call for it


def test_replayed_capture_does_not_duplicate(store_path: Path) -> None:
    with Memory(store_path, entity_id="u", embedder=HashingEmbedder()) as memory:
        entry_id = memory.capture([{"role": "user", "content": "Plants need water on Sunday"}])
        assert memory.flush(timeout=30)
        # an id-less message got an id derived from the capture, stable across replays
        assert memory.list()[0].sources[0].message_id == f"{entry_id[:16]}-0"
        entry = {
            "id": entry_id,
            "at": memory.list()[0].created_at.isoformat(),
            "scope": {"entity_id": "u", "process_id": None, "session_id": None},
            "mode": "fast",
            "tags": [],
            "metadata": {},
            "data": [{"role": "user", "content": "Plants need water on Sunday"}],
        }
        store_captured(memory, entry)  # what a replay after a crash does
        assert len(memory.list()) == 1


async def test_async_capture_and_flush(store_path: Path) -> None:
    async with Memory(store_path, entity_id="u", embedder=HashingEmbedder()) as memory:
        ids = [await memory.acapture(f"async note {i}") for i in range(50)]
        assert len(set(ids)) == 50
        assert await memory.aflush(30)
        assert len(await memory.alist(limit=100)) == 50


def test_capture_settings_moved_to_capture_config_and_the_old_fields_still_work(
    store_path: Path,
) -> None:
    """Capture's retries were set through ExtractionConfig(capture_*=...); they are
    CaptureConfig's now (Memory(capture=...)), and the old fields still work and warn."""
    with Memory(store_path, embedder=HashingEmbedder()) as memory:
        assert memory.capture_config == CaptureConfig(attempts=4, backoff=0.5, max_backoff=30.0)
    with pytest.warns(DeprecationWarning, match="capture_attempts is deprecated"):
        old = ExtractionConfig(capture_attempts=2, capture_backoff=0.01)
    assert (old.capture_attempts, old.capture_backoff, old.capture_max_backoff) == (2, 0.01, 30.0)
    assert ExtractionConfig().capture_attempts == 4  # read as before
    boom = RuntimeError("model overloaded")
    llm = ScriptedLLM([boom, boom, boom])
    with Memory(store_path, embedder=HashingEmbedder(), llm=llm, extraction=old) as memory:
        assert memory.capture_config == CaptureConfig(attempts=2, backoff=0.01)
        memory.capture("My locker code is 4411")
        assert memory.flush(timeout=60)
        assert len(llm.calls) == 2  # the old field still bounds the tries
    with pytest.raises(InvalidInputError, match="not both"):
        Memory(store_path, embedder=HashingEmbedder(), extraction=old, capture=CaptureConfig())
