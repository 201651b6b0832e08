"""One bad captured turn never blocks the turns behind it (issue 19, item 4).

* A turn that hangs (an LLM without a timeout that never answers) is left behind after
  ``CaptureConfig.turn_budget``; the turns captured after it are stored; the hung one is
  stored when it finally finishes. In a batch, the others are handled alone.
* A turn that fails every try is kept for the next open, but only for
  ``quarantine_after`` opens: then it moves to ``spool/quarantine/``, is counted in
  ``Health.capture_quarantined`` and is not tried again; forgetting its entity removes it.
* A 1 MB captured message is no poison (see ``test_input_limits``).

Real Chroma ``PersistentClient`` under ``tmp_path``; the LLM is scripted, the embedder a
hashing one (failing on purpose for one text).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memtrellis import CaptureConfig, ExtractionConfig, Memory
from memtrellis.testing import HashingEmbedder, ScriptedLLM, capture_service_of

POISON = "POISON-7f3a"
REPLY = '{"memories": [{"value": "Keeps bees"}]}'


def _wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _hanging_llm(release: threading.Event, entered: threading.Event) -> ScriptedLLM:
    def answer(messages: list[dict[str, str]]) -> str:
        if POISON in str(messages):
            entered.set()
            release.wait(60)
        return REPLY

    return ScriptedLLM(answer)


def _texts(memory: Memory) -> list[str]:
    return sorted(m.text for m in memory.list(limit=100))


def test_a_hanging_turn_does_not_block_the_turns_behind_it(tmp_path: Path) -> None:
    release, entered = threading.Event(), threading.Event()
    with Memory(
        tmp_path / "s",
        entity_id="u",
        embedder=HashingEmbedder(),
        llm=_hanging_llm(release, entered),
        extraction=ExtractionConfig(llm_timeout=None),  # the call would hang for good
        capture=CaptureConfig(attempts=1, turn_budget=1.0),
    ) as memory:
        try:
            memory.capture([{"role": "user", "content": f"{POISON} I keep bees"}])
            assert entered.wait(30)
            memory.capture([{"role": "user", "content": "I moved to Lyon."}], mode="fast")
            assert memory.flush(30)  # the hung turn no longer holds the queue
            assert _texts(memory) == ["I moved to Lyon."]
            health = memory.health()
            assert (health.capture_overdue, health.capture_spooled) == (1, 1)
        finally:
            release.set()
        # Left behind, not lost: it is stored when its call returns.
        assert _wait_for(lambda: capture_service_of(memory).spool.open_entries == 0)
        assert _texts(memory) == ["I moved to Lyon.", "Keeps bees"]


def test_a_hanging_turn_in_a_batch_holds_back_only_itself(tmp_path: Path) -> None:
    release, entered = threading.Event(), threading.Event()
    gate, gate_entered = threading.Event(), threading.Event()
    llm = _hanging_llm(release, entered)
    with Memory(
        tmp_path / "s",
        entity_id="u",
        embedder=HashingEmbedder(),
        llm=llm,
        extraction=ExtractionConfig(llm_timeout=None),
        capture=CaptureConfig(attempts=1, turn_budget=1.0),
    ) as memory:
        service = capture_service_of(memory)
        store_one = service._handle

        def held(entry: dict[str, object]) -> None:  # the first turn holds the worker
            if "gate" in json.dumps(entry["data"]):
                gate_entered.set()
                assert gate.wait(30)
            store_one(entry)

        service._handle = held
        try:
            memory.capture([{"role": "user", "content": "gate"}], mode="fast")
            assert gate_entered.wait(30)
            memory.capture([{"role": "user", "content": "I moved to Lyon."}], mode="fast")
            memory.capture([{"role": "user", "content": f"{POISON} I keep bees"}])
            memory.capture([{"role": "user", "content": "I play chess."}], mode="fast")
            gate.set()  # the three are taken as one batch, which hangs on the second
            assert _wait_for(lambda: "I play chess." in _texts(memory))
            assert memory.flush(30)
            assert _texts(memory) == ["I moved to Lyon.", "I play chess.", "gate"]
            assert memory.health().capture_overdue == 1  # the poison alone
        finally:
            release.set()
        assert _wait_for(lambda: service.spool.open_entries == 0)
        assert _texts(memory) == ["I moved to Lyon.", "I play chess.", "Keeps bees", "gate"]


class _FailingEmbedder(HashingEmbedder):
    """Fails every batch holding the poison text; counts those calls."""

    def __init__(self) -> None:
        super().__init__()
        self.poisoned = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if any(POISON in t for t in texts):
            self.poisoned += 1
            raise RuntimeError("the embedding service refuses this text")
        return super().embed_documents(texts)


def test_a_turn_that_always_fails_is_quarantined_after_bounded_opens(tmp_path: Path) -> None:
    path = tmp_path / "s"
    config = CaptureConfig(attempts=2, backoff=0.0, quarantine_after=3)
    tries = []
    for n in range(4):
        embedder = _FailingEmbedder()
        with Memory(path, entity_id="u", embedder=embedder, capture=config) as memory:
            if n == 0:
                memory.capture([{"role": "user", "content": f"{POISON} notes"}], mode="fast")
                memory.capture([{"role": "user", "content": "I moved to Lyon."}], mode="fast")
            assert memory.flush(30)
            tries.append(embedder.poisoned)
            health = memory.health()
            assert _texts(memory) == ["I moved to Lyon."]  # the good turn, once
        if n < 3:
            assert (health.capture_spooled, health.capture_quarantined) == (1, 0)
    # Opens 1-3 tried it (twice each: attempts=2, plus the batch try on the first);
    # the fourth moved it aside without a try.
    assert tries[1:] == [2, 2, 0] and tries[0] >= 2
    assert (health.capture_spooled, health.capture_quarantined) == (0, 1)
    (aside,) = (path / "spool" / "quarantine").glob("*.json")
    record = json.loads(aside.read_text())
    assert record["tries"] == 3
    assert record["entry"]["data"] == [
        {"role": "user", "content": f"{POISON} notes", "id": record["entry"]["data"][0]["id"]}
    ]
    with Memory(path, entity_id="u", embedder=_FailingEmbedder(), capture=config) as memory:
        assert memory.health().capture_quarantined == 1  # still counted, never retried
        memory.forget(entity_id="u")  # forgetting the entity removes its quarantined turns
        assert memory.health().capture_quarantined == 0
    assert list((path / "spool" / "quarantine").glob("*.json")) == []
