"""Fine-mode extraction on a real small model: every turn ends as memories or as a counted,
logged fallback; a malformed reply is repaired or kept whole, never lost.

Each ``add`` gets one window (at most ``WINDOW`` messages, no overlap), so each call's
outcome is one window's: memories whose sources lie in the window, or the one fallback
memory holding the whole window.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memtrellis import CaptureConfig, ExtractionConfig, Memory, MemoryItem
from memtrellis.extraction.fine import FALLBACK_TAG, MODE_TAG
from memtrellis.openai_compatible import OpenAICompatibleLLM
from memtrellis.testing import HashingEmbedder

#: A busy machine makes a small model slow: far more than the default 300 s a test.
pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(1800)]

WINDOW = 2
TURNS: list[dict[str, Any]] = [
    {"role": "user", "content": "I'm Mira. I moved from Lisbon to Porto in March."},
    {"role": "user", "content": "My sister Ana runs a bakery called Trigo in Braga."},
    {"role": "user", "content": "我下个月去杭州出差，住在西湖边的酒店。"},
    {"role": "user", "content": "我的预算从五千元削减到了三千元。"},
]
for n, turn in enumerate(TURNS, 1):
    turn["id"] = f"t{n}"
    turn["timestamp"] = f"2024-05-0{n}T10:00:00+00:00"


def windows(turns: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [list(turns[i : i + WINDOW]) for i in range(0, len(turns), WINDOW)]


def config(**extra: Any) -> ExtractionConfig:
    return ExtractionConfig(
        max_messages=WINDOW,
        message_overlap=0,
        llm_attempts=2,
        llm_backoff=0.0,
        llm_timeout=900.0,
        **extra,
    )


def open_memory(tmp_path: Path, llm: Any, extraction: ExtractionConfig) -> Memory:
    return Memory(tmp_path / "store", embedder=HashingEmbedder(), llm=llm, extraction=extraction)


def check_window(window: Sequence[dict[str, Any]], items: Sequence[MemoryItem]) -> bool:
    """The window ended as memories citing its turns, or as one fallback holding it all;
    returns whether it was the fallback."""
    ids = {str(t["id"]) for t in window}
    assert items, f"window {sorted(ids)} left nothing behind"
    for item in items:
        assert MODE_TAG in item.tags, item.tags
        cited = {s.message_id for s in item.sources}
        assert cited and cited <= ids, (cited, ids)
    fallback = [i for i in items if FALLBACK_TAG in i.tags]
    if fallback:
        [item] = fallback  # the whole window, once
        assert len(items) == 1
        assert {s.message_id for s in item.sources} == ids
        for turn in window:
            assert turn["content"] in item.text
    return bool(fallback)


def run_windows(
    memory: Memory, caplog: pytest.LogCaptureFixture, turns: Sequence[dict[str, Any]]
) -> tuple[int, int]:
    """Add each window; check each outcome; returns (fallbacks, windows)."""
    fallbacks = 0
    for window in windows(turns):
        before = len(caplog.records)
        items = memory.add(window, mode="fine")
        if check_window(window, items):
            fallbacks += 1
            logged = [r.getMessage() for r in caplog.records[before:]]
            assert any("kept whole" in m for m in logged), logged
    health = memory.health()
    assert health.extraction_fallbacks == fallbacks
    # every input turn is the source of at least one stored memory
    stored = {s.message_id for m in memory.list(limit=1000) for s in m.sources}
    assert {str(t["id"]) for t in turns} <= stored
    return fallbacks, len(windows(turns))


@pytest.fixture(autouse=True)
def _logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memtrellis.extraction")


def test_plain_replies_every_window_kept(
    local_llm: OpenAICompatibleLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No response format: the model writes what it writes (often fenced, commented or
    broken JSON); each window still ends as memories or one counted fallback."""
    with open_memory(tmp_path, local_llm, config()) as m:
        fallbacks, total = run_windows(m, caplog, TURNS)
    print(f"plain replies: {fallbacks} of {total} windows kept as fallbacks")


def test_json_schema_replies_every_window_kept(
    local_llm_json: OpenAICompatibleLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The schema through llama.cpp's grammar: valid JSON, whatever it says."""
    with open_memory(tmp_path, local_llm_json, config()) as m:
        fallbacks, total = run_windows(m, caplog, TURNS)
    print(f"json_schema replies: {fallbacks} of {total} windows kept as fallbacks")


def test_replies_cut_at_the_token_limit_are_repaired_or_kept(
    llama_server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reply the server cuts at ``max_tokens`` (the commonest broken JSON in practice):
    what parses is kept, counted as not usable whole; the rest falls back."""
    cut = OpenAICompatibleLLM(
        "gemma-3-270m",
        base_url=llama_server.base_url,
        max_tokens=20,
        timeout=900,
        response_format="json_schema",
    )
    with open_memory(tmp_path, cut, config()) as m:
        run_windows(m, caplog, TURNS)
        health = m.health()
    # 20 tokens cannot hold a whole answer for two messages: every reply was broken,
    # and each one was counted (repaired and kept, or kept whole as the fallback)
    assert health.extraction_garbage >= len(windows(TURNS))
    repaired_or_kept = [
        r.getMessage()
        for r in caplog.records
        if "repaired" in r.getMessage() or "kept whole" in r.getMessage()
    ]
    assert len(repaired_or_kept) >= len(windows(TURNS))


def test_prose_replies_fall_back_to_the_whole_window(
    local_llm: OpenAICompatibleLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Told by the application to write prose, the model answers without JSON at all:
    every window is kept whole, counted and logged (or, if it writes JSON anyway, its
    memories are kept)."""
    prose = config(instructions="Never write JSON or braces. Answer in two plain sentences.")
    with open_memory(tmp_path, local_llm, prose) as m:
        fallbacks, total = run_windows(m, caplog, TURNS)
    print(f"prose replies: {fallbacks} of {total} windows kept as fallbacks")


async def test_async_add_keeps_every_window(local_llm: OpenAICompatibleLLM, tmp_path: Path) -> None:
    """``aadd`` drives the same windows concurrently through the same endpoint."""
    with open_memory(tmp_path, local_llm, config()) as m:
        items = await m.aadd(TURNS, mode="fine")
        health = m.health()
    fallback_windows = [i for i in items if FALLBACK_TAG in i.tags]
    assert health.extraction_fallbacks == len(fallback_windows)
    assert {str(t["id"]) for t in TURNS} <= {s.message_id for i in items for s in i.sources}


def test_captured_turns_with_broken_replies_are_stored(llama_server: Any, tmp_path: Path) -> None:
    """Capture (what every adapter does) refuses a reply that is not usable whole, tries
    the turn again, then stores it in fast mode tagged as a fallback: never lost."""
    cut = OpenAICompatibleLLM(
        "gemma-3-270m", base_url=llama_server.base_url, max_tokens=12, timeout=900
    )
    turns = [dict(t, role="user") for t in TURNS[:2]]
    reply = {"role": "assistant", "content": "Noted!", "id": "r1"}
    with Memory(
        tmp_path / "s",
        embedder=HashingEmbedder(),
        llm=cut,
        extraction=config(),
        capture=CaptureConfig(attempts=2, backoff=0.01, max_backoff=0.02),
    ) as m:
        m.capture([*turns, reply])
        assert m.flush(timeout=600)
        stored = m.list(limit=100)
        health = m.health()
    ids = {s.message_id for item in stored for s in item.sources}
    assert {"t1", "t2"} <= ids
    assert health.capture_failures == 0 and health.capture_queue_depth == 0
    fallbacks = [i for i in stored if FALLBACK_TAG in i.tags]
    assert health.extraction_fallbacks == len(fallbacks)
