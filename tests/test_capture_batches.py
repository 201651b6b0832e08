"""The capture worker stores what is queued in batches: one embedding call, one commit per
entity, and every per-turn guarantee kept (a bad turn alone is retried, a replay replaces,
a forgotten entity's turn in the batch is not stored)."""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memtrellis import CaptureConfig, Memory
from memtrellis._engine import writer as writing
from memtrellis.testing import (
    HashingEmbedder,
    ScriptedLLM,
    capture_service_of,
    store_captured,
    store_of,
)


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that records the texts of each ``embed_documents`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return super().embed_documents(texts)


def _turn(who: str, n: int) -> dict[str, str]:
    return {"role": "user", "content": f"{who} note number {n} about the garden"}


@contextmanager
def held_worker(memory: Memory) -> Iterator[None]:
    """Keep the worker busy with a first turn of entity "gate" until the block ends, so
    that everything captured inside the block is queued and taken as one batch."""
    busy, release = threading.Event(), threading.Event()
    original = functools.partial(store_captured, memory)

    def slow(entry: dict[str, Any]) -> None:
        if entry["scope"]["entity_id"] == "gate":
            busy.set()
            assert release.wait(30)
        original(entry)

    capture_service_of(memory)._handle = slow  # the worker starts with the first capture
    memory.capture(_turn("gate", 0), entity_id="gate", mode="fast")
    assert busy.wait(30)
    try:
        yield
    finally:
        release.set()


def _commits(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record the entity of each item of every plan-and-commit."""
    seen: list[list[str]] = []
    original = writing.store_additions

    def counting(store: Any, items: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        seen.append([item.scope.entity_id for item in items])
        return original(store, items, *args, **kwargs)

    monkeypatch.setattr(writing, "store_additions", counting)
    return seen


def test_queued_turns_of_two_entities_are_stored_once_with_one_embedding_call(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = CountingEmbedder()
    with Memory(store_path, embedder=embedder) as memory:
        with held_worker(memory):
            for n in range(15):
                memory.capture(_turn("Ana", n), entity_id="ana")
                memory.capture(_turn("Bo", n), entity_id="bo")
            embedder.calls.clear()
            commits = _commits(monkeypatch)
        assert memory.flush(30)
        # the gate's own turn, then the 30 queued ones in one call and one commit per entity
        assert [len(call) for call in embedder.calls] == [1, 30]
        assert sorted(commits[1:]) == [["ana"] * 15, ["bo"] * 15]
        for who, entity in (("Ana", "ana"), ("Bo", "bo")):
            texts = sorted(i.text for i in memory.list(entity_id=entity, limit=100))
            assert texts == sorted(_turn(who, n)["content"] for n in range(15))
        stats = capture_service_of(memory).stats
        assert stats.stored == 31 and stats.failures == 0 and stats.retries == 0
        assert memory.health().capture_spooled == 0


def test_a_turn_that_fails_in_a_batch_is_retried_alone_and_the_others_are_stored(
    store_path: Path,
) -> None:
    config = CaptureConfig(backoff=0.01)
    with Memory(store_path, embedder=HashingEmbedder(), capture=config) as memory:
        extract = memory.extractor.extract
        failures = {"left": 1}

        def flaky(data: Any, *args: Any, **kwargs: Any) -> Any:
            if "Bo note number 3 " in str(data) and failures["left"]:
                failures["left"] -= 1
                raise RuntimeError("disk hiccup")
            return extract(data, *args, **kwargs)

        memory.extractor.extract = flaky  # type: ignore[method-assign]
        with held_worker(memory):
            for n in range(6):
                memory.capture(_turn("Ana", n), entity_id="ana")
                memory.capture(_turn("Bo", n), entity_id="bo")
        assert memory.flush(30)
        assert len(memory.list(entity_id="ana")) == 6
        assert sorted(i.text for i in memory.list(entity_id="bo")) == sorted(
            _turn("Bo", n)["content"] for n in range(6)
        )
        stats = capture_service_of(memory).stats
        assert stats.retries == 1 and stats.stored == 13 and stats.failures == 0


def test_a_failed_commit_of_one_entity_does_not_lose_the_other_entitys_turns(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = CaptureConfig(backoff=0.01)
    with Memory(store_path, embedder=HashingEmbedder(), capture=config) as memory:
        original = writing.store_additions
        failures = {"left": 1}

        def failing(store: Any, items: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
            if items[0].scope.entity_id == "bo" and failures["left"]:
                failures["left"] -= 1
                raise OSError("store unavailable")
            return original(store, items, *args, **kwargs)

        with held_worker(memory):
            for n in range(4):
                memory.capture(_turn("Ana", n), entity_id="ana")
                memory.capture(_turn("Bo", n), entity_id="bo")
            monkeypatch.setattr(writing, "store_additions", failing)
        assert memory.flush(30)
        assert len(memory.list(entity_id="ana")) == 4
        assert len(memory.list(entity_id="bo")) == 4  # each tried again alone
        stats = capture_service_of(memory).stats
        assert stats.retries == 4 and stats.stored == 9 and stats.failures == 0


def test_a_batch_replayed_after_a_crash_replaces_what_it_stored(store_path: Path) -> None:
    with Memory(store_path, embedder=HashingEmbedder()) as memory:
        with held_worker(memory):
            for n in range(5):
                memory.capture(_turn("Ana", n), entity_id="ana")
                memory.capture(
                    [_turn("Bo", n), {"role": "assistant", "content": f"Noted {n}."}],
                    entity_id="bo",
                )
        assert memory.flush(30)
        before = {e: memory.list(entity_id=e, limit=100) for e in ("ana", "bo")}
        assert len(before["ana"]) == 5 and len(before["bo"]) == 10
        spooled = [e for e in _read_spool(memory) if e["scope"]["entity_id"] != "gate"]
        assert len(spooled) == 10
        # what the next open does with entries a crash left unmarked: the same ids again
        assert store_captured(memory, spooled) == {}
        for entity in ("ana", "bo"):
            after = memory.list(entity_id=entity, limit=100)
            assert sorted(i.id for i in after) == sorted(i.id for i in before[entity])
        assert len(store_of(memory).graph_of("bo").memory_ids("bo")) == 10


def _read_spool(memory: Memory) -> list[dict[str, Any]]:
    """The entries of this process's spool file, stored or not."""
    records = [
        json.loads(line) for line in capture_service_of(memory).spool.path.read_text().splitlines()
    ]
    return [record for record in records if "id" in record]  # not done or tried marks


def test_forgetting_an_entity_while_its_turn_is_extracted_in_a_batch(store_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def answer(messages: list[dict[str, str]]) -> str:
        if "Ana" in str(messages):
            entered.set()
            assert release.wait(30)
        return '{"memories": [{"value": "Likes the garden"}]}'

    llm = ScriptedLLM(answer)
    with Memory(store_path, embedder=HashingEmbedder(), llm=llm) as memory:
        with held_worker(memory):
            memory.capture(_turn("Bo", 1), entity_id="bo", mode="fine")
            memory.capture(_turn("Ana", 1), entity_id="ana", mode="fine")
            memory.capture(_turn("Bo", 2), entity_id="bo", mode="fine")
        assert entered.wait(30)  # the batch is inside Ana's extraction
        assert memory.forget(entity_id="ana") == 0
        release.set()
        assert memory.flush(30)
        assert memory.list(entity_id="ana") == []
        assert [i.text for i in memory.list(entity_id="bo")] == ["Likes the garden"]
        assert capture_service_of(memory).stats.failures == 0


def test_a_slow_batch_stores_what_it_extracted_before_it_goes_on(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fine mode: each turn waits for the LLM, so a batch does not hold its first turns."""
    import memtrellis._engine.capturer as capture

    monkeypatch.setattr(capture, "FLUSH_AFTER", 0.0)  # every LLM call takes longer than this

    def answer(messages: list[dict[str, str]]) -> str:
        number = re.search(r"note number (\d)", str(messages))
        return f'{{"memories": [{{"value": "Fact {number.group(1) if number else 0}"}}]}}'

    llm = ScriptedLLM(answer)
    embedder = CountingEmbedder()
    with Memory(store_path, embedder=embedder, llm=llm) as memory:
        with held_worker(memory):
            for n in range(3):
                memory.capture(_turn("Ana", n), entity_id="ana", mode="fine")
            embedder.calls.clear()
        assert memory.flush(30)
        assert [len(call) for call in embedder.calls] == [1, 1, 1, 1]  # the gate, then each
        assert sorted(i.text for i in memory.list(entity_id="ana")) == [
            "Fact 0",
            "Fact 1",
            "Fact 2",
        ]
