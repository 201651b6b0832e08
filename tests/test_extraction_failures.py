"""Extraction failures never lose a captured turn, and health() counts each kind apart.

An LLM that hangs past ``llm_timeout``, raises a timeout, raises anything else, or answers
garbage (unparseable, the wrong shape, empty, or only partly valid) leaves the turn
spooled; the turn is tried again with backoff and stored in fast mode, tagged
``extraction:fallback``, after the last try. A turn is stored from whole replies only.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

import zygote
from memtrellis import ExtractionConfig, Memory
from memtrellis.extraction import FALLBACK_TAG
from memtrellis.testing import HashingEmbedder, ScriptedLLM, capture_service_of

TURN = [{"role": "user", "content": "I have a red bike and I swim on Tuesdays", "id": "t1"}]
WHOLE = (
    '{"memories": [{"value": "The user has a red bike", "source_ids": ["t1"]},'
    ' {"value": "The user swims on Tuesdays", "source_ids": ["t1"]}]}'
)
FAST = ExtractionConfig(capture_attempts=2, capture_backoff=0.01, llm_timeout=5.0)


def _memory(path: Path, llm: ScriptedLLM, config: ExtractionConfig = FAST) -> Memory:
    return Memory(path, entity_id="u", embedder=HashingEmbedder(), llm=llm, extraction=config)


def _fell_back(memory: Memory) -> None:
    """The turn is stored once, as its fast-mode memory tagged as a fallback."""
    [item] = memory.list()
    assert FALLBACK_TAG in item.tags and "mode:fast" in item.tags
    assert item.text == TURN[0]["content"] and item.sources[0].message_id == "t1"
    assert capture_service_of(memory).spool.open_entries == 0


def test_a_hang_past_the_timeout_is_retried_then_falls_back(store_path: Path) -> None:
    release = threading.Event()
    llm = ScriptedLLM(lambda messages: str(release.wait(30)))
    config = ExtractionConfig(capture_attempts=2, capture_backoff=0.01, llm_timeout=0.2)
    try:
        with _memory(store_path, llm, config) as memory:
            started = time.perf_counter()
            memory.capture(TURN)
            assert memory.flush(timeout=20)
            assert time.perf_counter() - started < 5  # bounded by the timeout, not the hang
            _fell_back(memory)
            health = memory.health()
            assert (health.extraction_timeouts, health.extraction_errors) == (2, 0)
            assert (health.extraction_garbage, health.extraction_retries) == (0, 1)
            assert health.extraction_fallbacks == 1 and health.llm_failures == 2
    finally:
        release.set()


def test_raised_timeouts_count_as_timeouts_and_a_later_answer_is_stored(
    store_path: Path,
) -> None:
    llm = ScriptedLLM([TimeoutError("slow"), httpx.ReadTimeout("read timed out"), WHOLE])
    config = ExtractionConfig(capture_attempts=3, capture_backoff=0.01)
    with _memory(store_path, llm, config) as memory:
        memory.capture(TURN)
        assert memory.flush(timeout=20)
        texts = sorted(i.text for i in memory.list())
        assert texts == ["The user has a red bike", "The user swims on Tuesdays"]
        health = memory.health()
        assert (health.extraction_timeouts, health.extraction_errors) == (2, 0)
        assert health.extraction_retries == 2 and health.extraction_fallbacks == 0


def test_an_error_is_retried_with_backoff_and_counted_as_an_error(store_path: Path) -> None:
    llm = ScriptedLLM([ConnectionError("refused"), WHOLE])
    with _memory(store_path, llm) as memory:
        memory.capture(TURN)
        assert memory.flush(timeout=20)
        assert len(memory.list()) == 2
        health = memory.health()
        assert (health.extraction_errors, health.extraction_timeouts) == (1, 0)
        assert (health.extraction_retries, health.extraction_fallbacks) == (1, 0)


GARBAGE = {
    "unparseable": "Sorry, I can't help with that.",
    "wrong-schema": '{"answer": 42, "confidence": "high"}',
    "empty": "",
    # one valid memory, one that fails validation: storing the first would be a partial set
    "partly-invalid": '{"memories": [{"value": "The user has a red bike"}, {"value": ""}]}',
    # cut off mid-reply: json-repair recovers the first memory, the rest of the turn is lost
    "cut-off": '{"memories": [{"value": "The user has a red bike"}, {"value": "The user sw',
}


@pytest.mark.parametrize("reply", GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_is_retried_then_falls_back_without_a_partial_set(
    reply: str, store_path: Path
) -> None:
    llm = ScriptedLLM([reply, reply])
    with _memory(store_path, llm) as memory:
        memory.capture(TURN)
        assert memory.flush(timeout=20)
        _fell_back(memory)  # and nothing else: not "The user has a red bike" alone
        health = memory.health()
        assert (health.extraction_garbage, health.extraction_retries) == (2, 1)
        assert (health.extraction_timeouts, health.extraction_errors) == (0, 0)
        assert health.extraction_fallbacks == 1 and health.llm_failures == 0


def test_a_partial_reply_then_a_whole_one_stores_only_the_whole_set(store_path: Path) -> None:
    llm = ScriptedLLM([GARBAGE["cut-off"], WHOLE])
    with _memory(store_path, llm) as memory:
        memory.capture(TURN)
        assert memory.flush(timeout=20)
        texts = sorted(i.text for i in memory.list())
        assert texts == ["The user has a red bike", "The user swims on Tuesdays"]
        assert all(FALLBACK_TAG not in i.tags for i in memory.list())
        assert memory.health().extraction_garbage == 1


CRASH_BETWEEN_RETRIES = """
    import os, sys, time
    from memtrellis import ExtractionConfig, Memory
    from memtrellis.testing import HashingEmbedder, ScriptedLLM
    config = ExtractionConfig(capture_attempts=3, capture_backoff=60.0)
    llm = ScriptedLLM(lambda messages: (_ for _ in ()).throw(RuntimeError("model down")))
    m = Memory(sys.argv[1], entity_id="u", embedder=HashingEmbedder(), llm=llm,
               extraction=config)
    m.capture([{"role": "user", "content": "I have a red bike and I swim on Tuesdays",
                "id": "t1"}])
    deadline = time.monotonic() + 60
    while m.health().extraction_retries < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    print(m.health().extraction_errors, len(m.list()), flush=True)
    os._exit(9)  # killed while waiting to try again
"""


def test_a_crash_between_retries_leaves_the_turn_spooled_for_the_next_open(
    store_path: Path,
) -> None:
    proc = zygote.run(
        [sys.executable, "-c", textwrap.dedent(CRASH_BETWEEN_RETRIES), str(store_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    assert proc.stdout.split() == ["1", "0"]  # one failed try, nothing stored
    spooled = b"".join(p.read_bytes() for p in (store_path / "spool").glob("*.jsonl"))
    assert b"I have a red bike" in spooled  # the turn waits in the spool, not lost
    llm = ScriptedLLM([WHOLE])
    with _memory(store_path, llm) as memory:
        assert memory.flush(timeout=30)
        texts = sorted(i.text for i in memory.list())
        assert texts == ["The user has a red bike", "The user swims on Tuesdays"]
        extraction_calls = [c for c in llm.calls if c[0]["content"].startswith("You extract")]
        assert len(extraction_calls) == 1 and memory.health().extraction_fallbacks == 0
    assert [p.name for p in (store_path / "spool").glob("*.jsonl")] == []


def test_add_times_out_too_sync_and_async(store_path: Path) -> None:
    config = ExtractionConfig(llm_timeout=0.1, llm_attempts=2, llm_backoff=0.01)
    llm = ScriptedLLM(lambda messages: '{"memories": []}', delay=3.0)
    with _memory(store_path, llm, config) as memory:
        started = time.perf_counter()
        [item] = memory.add(TURN)
        [other] = asyncio.run(memory.aadd([{**TURN[0], "id": "t2"}]))
        assert time.perf_counter() - started < 2.5
        assert FALLBACK_TAG in item.tags and FALLBACK_TAG in other.tags
        health = memory.health()
        assert (health.extraction_timeouts, health.extraction_retries) == (4, 2)
        assert health.llm_failures == 2


def test_a_hanging_lifecycle_judge_is_cut_off_by_the_same_timeout(store_path: Path) -> None:
    release = threading.Event()

    def answer(messages: list[dict[str, str]]) -> str:
        if messages[0]["content"].startswith("You extract"):
            return WHOLE
        release.wait(30)  # the judge comparing the second memory with the first hangs
        return "[]"

    config = ExtractionConfig(llm_timeout=0.2)
    try:
        with _memory(store_path, ScriptedLLM(answer), config) as memory:
            started = time.perf_counter()
            assert len(memory.add(TURN)) == 2
            assert time.perf_counter() - started < 5
            assert memory.health().relation_judge_failures >= 1
    finally:
        release.set()


def test_a_bounded_call_sees_the_callers_context_variables() -> None:
    # LangChain's callbacks and tracing ride on context variables: the call keeps them
    from contextvars import ContextVar

    from memtrellis.extraction.failures import call_with_timeout

    run_name: ContextVar[str] = ContextVar("run_name", default="none")
    token = run_name.set("extraction-run")
    try:
        assert call_with_timeout(run_name.get, 5.0) == "extraction-run"
    finally:
        run_name.reset(token)
