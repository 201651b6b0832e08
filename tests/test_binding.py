"""The adapter binding (``memtrellis.binding``): one pipeline, one budget, one counter family."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtrellis import InvalidInputError, Memory
from memtrellis.binding import DEFAULT_K, AdapterOptions, Binding
from memtrellis.context import DEFAULT_TOKEN_BUDGET, build_context, line_tokens, memory_line
from memtrellis.testing import HashingEmbedder
from memtrellis.tokens import count_tokens

ASKED = [{"role": "user", "content": "What does Alice eat and drink?"}]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        yield memory


@pytest.fixture
def stocked(memory: Memory) -> Memory:
    """Facts, a decision with a deadline and a message said as it was, for one entity."""
    for n in range(30):
        memory.add(
            f"Alice eats dish number {n} with green tea and drinks juice {n}",
            entity_id="alice",
            memory_type="fact",
        )
    [decision] = memory.add(
        "Alice decided to drink only green tea", entity_id="alice", memory_type="decision"
    )
    memory.update(
        decision.id, valid_until=datetime.now(timezone.utc) + timedelta(days=3), entity_id="alice"
    )
    memory.add(
        [{"role": "user", "content": "What does Alice drink with dinner?"}],
        entity_id="alice",
        mode="fast",
    )
    return memory


def test_one_set_of_defaults_and_checked_options() -> None:
    options = AdapterOptions()
    assert (options.k, options.token_budget) == (DEFAULT_K, DEFAULT_TOKEN_BUDGET) == (8, 600)
    assert (options.position, options.capture_mode, options.strict) == ("append", None, False)
    assert AdapterOptions(entity_id="a", session_id="s").scope == {
        "entity_id": "a",
        "session_id": "s",
    }
    for bad in ({"k": 0}, {"k": True}, {"token_budget": -1}, {"position": "top"}):
        with pytest.raises(InvalidInputError):
            AdapterOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AdapterOptions(capture_mode="slow")
    with pytest.raises(InvalidInputError):
        AdapterOptions(entity_id="  ")


@pytest.mark.parametrize("budget", [0, 1, 30, 60, 90, 150, 240, 400, 600])
def test_the_rendered_context_never_exceeds_the_budget(stocked: Memory, budget: int) -> None:
    binding = Binding(
        stocked, AdapterOptions(entity_id="alice", k=40, token_budget=budget), source="t"
    )
    context = binding.context(binding.query(ASKED), binding.scope())

    assert context.tokens <= budget and count_tokens(context.text) == context.tokens
    if budget >= 150:
        assert context.facts >= 1 and not context.empty
    # The pipeline's recall is not budgeted again: the block is the renderer's alone.
    whole = stocked.recall(binding.query(ASKED) or "", entity_id="alice", k=40)
    assert context == build_context(whole, token_budget=budget)


@pytest.mark.parametrize("budget", [40, 120, 300, 10_000])
def test_what_recall_counts_is_what_the_model_is_shown(stocked: Memory, budget: int) -> None:
    result = stocked.recall("Alice green tea drink", entity_id="alice", k=40, token_budget=budget)
    assert result.items and result.tokens <= budget
    context = build_context(result, token_budget=100_000)  # room for every recalled line
    shown = context.text.splitlines()

    lines = [memory_line(hit.memory, confidence=hit.explanation.confidence) for hit in result.items]
    assert all(line in shown for line in lines)
    assert sum(line_tokens(line) for line in lines) == result.tokens
    assert set(context.memory_ids) == {hit.memory.id for hit in result.items}


def test_recall_and_capture_through_the_binding_are_counted_once(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts", entity_id="alice")
    binding = Binding(memory, AdapterOptions(entity_id="alice", session_id="s1"), source="mine")

    context = binding.context(binding.query(ASKED), binding.scope())
    placed = binding.place(ASKED, context)
    turn = binding.turn(placed.messages, {"role": "assistant", "content": "Rice and tea."})
    assert turn == [ASKED[0], {"role": "assistant", "content": "Rice and tea."}]
    assert binding.capture(turn, binding.scope()) is not None
    binding.count("call")

    assert placed.messages[0]["role"] == "system" and "peanuts" in placed.messages[0]["content"]
    assert binding.stats.as_dict() == {
        "recalls": 1,
        "placed": 1,
        "captured": 1,
        "recall_failures": 0,
        "capture_failures": 0,
    }
    health = memory.health()
    assert health.adapter_counts == {"mine.call": 1, "mine.capture": 1}
    assert health.adapter_failures == {} and health.client_calls == 0
    assert memory.flush(timeout=60)
    stored = memory.list(entity_id="alice", session_id="s1", limit=100)
    assert sorted(m.text for m in stored if m.sources[0].role == "user") == [ASKED[0]["content"]]


def test_failures_fail_open_and_strict_raises_after_counting(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("store offline")

    monkeypatch.setattr(memory, "recall", broken)
    monkeypatch.setattr(memory, "capture", broken)
    binding = Binding(memory, source="mine")
    assert binding.context("anything", {}).empty
    assert binding.capture([{"role": "user", "content": "hi"}], {}) is None
    assert binding.stats.failures == 2
    assert binding.stats.last_error == "capture: RuntimeError: store offline"

    strict = Binding(memory, AdapterOptions(strict=True), source="strict")
    with pytest.raises(RuntimeError, match="store offline"):
        strict.recall("anything", {})
    assert memory.health().adapter_failures == {
        "mine.capture": 1,
        "mine.recall": 1,
        "strict.recall": 1,
    }


def test_sdk_client_figures_read_the_one_family(memory: Memory) -> None:
    binding = Binding(memory, source="client")
    binding.count("call")
    binding.failed("context", ValueError("bad block"))
    health = memory.health()
    assert (health.client_calls, health.client_recall_failures) == (1, 1)
    assert health.adapter_counts == {"client.call": 1}
    assert health.adapter_failures == {"client.context": 1}


def test_async_twins_match_the_sync_steps(memory: Memory) -> None:
    memory.add("Alice drinks green tea", entity_id="alice")
    binding = Binding(memory, AdapterOptions(entity_id="alice"), source="mine")

    async def run() -> tuple[str, str | None]:
        context = await binding.acontext("What does Alice drink?", binding.scope())
        turn = binding.turn(ASKED, {"role": "assistant", "content": "Tea."})
        return context.text, await binding.acapture(turn, binding.scope())

    sync = binding.context("What does Alice drink?", binding.scope()).text
    text, capture_id = asyncio.run(run())
    assert text == sync
    assert "green tea" in text and capture_id is not None


def test_call_scope_over_the_adapter_defaults(memory: Memory) -> None:
    binding = Binding(memory, AdapterOptions(entity_id="alice", session_id="s0"), source="t")
    with memory.scope(entity_id="bob"):
        assert binding.scope(memory.call_scope()) == {"entity_id": "bob", "session_id": "s0"}
    assert binding.scope(memory.call_scope()) == {"entity_id": "alice", "session_id": "s0"}
    args = binding.recall_args("q", binding.scope())
    assert args == {"query": "q", "k": DEFAULT_K, "entity_id": "alice"}  # no budget, no session
