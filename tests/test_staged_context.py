"""Issue 22 item 4: recall steered by a conversation hint, open items kept in the block
whether recall returned them or not, the stages in order, one budget counted exactly."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memtrellis import InvalidInputError, Memory, MemoryItem, MemoryType, Scope
from memtrellis.binding import AdapterOptions, Binding
from memtrellis.context import build_context, conversation_hint, earlier_turns
from memtrellis.testing import HashingEmbedder
from memtrellis.tokens import count_tokens
from memtrellis.types import SourceKind, SourceRef

HEADINGS = ["Facts:", "Sources:", "Open decisions and action items:", "Recent conversation:"]


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    with Memory(tmp_path / "store", entity_id="ana", embedder=HashingEmbedder()) as m:
        yield m


def test_a_context_hint_steers_which_match_comes_first(memory: Memory) -> None:
    memory.add("The restaurant table is booked for Friday", memory_type="fact")
    memory.add("The dentist visit is booked for Friday", memory_type="fact")
    query = "What is booked for Friday?"
    plain = {h.memory.text for h in memory.recall(query, k=2).items}
    for topic, expected in (
        ("my dentist and my teeth", "dentist"),
        ("the restaurant and our table", "restaurant"),
    ):
        hinted = memory.recall(query, k=2, context_hint=f"We were talking about {topic}.")
        assert expected in hinted.items[0].memory.text
        # Only the order changed: the hint never replaces the question.
        assert {h.memory.text for h in hinted.items} == plain


def test_context_hint_is_checked_and_blank_is_none(memory: Memory) -> None:
    memory.add("Ana likes tea")
    assert memory.recall("tea", context_hint="   ").items
    with pytest.raises(InvalidInputError, match="context_hint"):
        memory.recall("tea", context_hint=3)  # type: ignore[arg-type]
    assert asyncio.run(memory.arecall("tea", context_hint="drinks")).items


def test_open_items_are_the_valid_decisions_and_action_items(memory: Memory) -> None:
    [venue] = memory.add("Book the venue for the launch", memory_type="action_item")
    [lisbon] = memory.add("We decided the launch city is Lisbon", memory_type="decision")
    memory.add("Ana likes tea", memory_type="preference")
    [done] = memory.add("Send the invitations", memory_type="action_item")
    memory.forget(done.id)
    assert {i.id for i in memory.open_items()} == {venue.id, lisbon.id}
    assert [i.id for i in memory.open_items(limit=1)] == [lisbon.id]  # newest first
    assert asyncio.run(memory.aopen_items()) == memory.open_items()


EARLIER = [
    {"role": "user", "content": "We are planning the museum trip with Bob."},
    {"role": "assistant", "content": "Happy to help with the museum trip."},
]
QUESTION = {"role": "user", "content": "Which museums did Alice visit?"}


def _block(
    memory: Memory, budget: int, *, stateless: bool = True, **options: object
) -> tuple[str, object]:
    """The block for QUESTION after EARLIER was said in session s1: a stateless call
    (the question alone, the session's turns read with session_history) or one that
    carries the whole conversation."""
    if not memory.session_turns(entity_id="ana", session_id="s1"):
        memory.capture(EARLIER, session_id="s1", mode="fast")
        assert memory.flush(30)
    options = {"session_history": 4, "session_id": "s1", **options}
    binding = Binding(memory, AdapterOptions(token_budget=budget, **options), source="test")
    messages = [QUESTION] if stateless else [*EARLIER, QUESTION]
    context = binding.context(binding.query(messages), binding.scope(), messages=messages)
    return context.text, context


def _seed(memory: Memory) -> None:
    for n in range(25):
        said = f"Guess what, Alice visited museum number {n} in Porto with her cousin."
        memory.store(
            MemoryItem(
                text=f"Alice visited museum number {n} in Porto.",
                scope=Scope(entity_id="ana"),
                sources=[
                    SourceRef(
                        kind=SourceKind.CHAT,
                        role="user",
                        content=said,
                        timestamp=datetime(2026, 1, n + 1, 10, tzinfo=timezone.utc),
                    )
                ],
            )
        )
    memory.add("Buy the tickets for the Lisbon trip before Friday", memory_type="action_item")


def test_the_block_keeps_room_for_an_open_item_recall_did_not_return(memory: Memory) -> None:
    _seed(memory)
    recalled = memory.recall("Which museums did Alice visit?", k=8)
    assert all(h.memory.memory_type is not MemoryType.ACTION_ITEM for h in recalled.items)
    text, context = _block(memory, 200)
    assert "- Action item: Buy the tickets for the Lisbon trip before Friday" in text
    assert "Facts:" in text and context.truncated  # the facts gave way, not the open item
    # Without the reserve the facts take everything.
    assert "Action item" not in build_context(recalled, token_budget=200, open_share=0.0).text


def test_stages_come_in_order_and_the_budget_holds_exactly(memory: Memory) -> None:
    _seed(memory)
    full_text, _ = _block(memory, 5_000)
    assert [h for h in HEADINGS if h in full_text] == HEADINGS
    positions = [full_text.index(h) for h in HEADINGS]
    assert positions == sorted(positions)
    assert "- [2026-01-" in full_text.split("Sources:")[1]  # excerpts carry timestamps
    assert full_text.rstrip().endswith(
        "- user: We are planning the museum trip with Bob.\n"
        "- assistant: Happy to help with the museum trip.\n</memory_context>"
    )
    for budget in range(40, 700, 23):
        text, context = _block(memory, budget)
        assert count_tokens(text) == context.tokens <= budget  # type: ignore[attr-defined]
        present = [h for h in HEADINGS if h in text]
        assert [text.index(h) for h in present] == sorted(text.index(h) for h in present)


def test_adapter_options_turn_stages_off(memory: Memory) -> None:
    _seed(memory)
    text, _ = _block(memory, 5_000, recent_turns=0, open_items=0)
    assert "Recent conversation:" not in text and "Action item" not in text
    with pytest.raises(InvalidInputError, match="recent_turns"):
        AdapterOptions(recent_turns=-1)


def test_the_turns_and_hint_come_from_the_conversation_before_the_question() -> None:
    chat = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "I am planning the Lisbon launch."},
        {"role": "assistant", "content": "Great, what is left?"},
        {"role": "user", "content": "What did we decide?"},
    ]
    assert earlier_turns(chat) == chat[1:3]
    assert earlier_turns(chat, 1) == chat[2:3]
    assert conversation_hint(chat) == "I am planning the Lisbon launch. Great, what is left?"
    assert conversation_hint(chat, chars=12) == "what is left?"[-12:].lstrip()
    assert conversation_hint(chat[3:]) is None


def test_recent_messages_already_recalled_are_not_repeated(memory: Memory) -> None:
    memory.add([{"role": "user", "content": "I moved to Porto last week."}])
    result = memory.recall("Porto")
    recent = [
        {"role": "user", "content": "I moved to Porto last week."},
        {"role": "assistant", "content": "Nice!"},
    ]
    context = build_context(result, recent=recent)
    assert context.recent == 1 and context.text.count("I moved to Porto last week.") == 1


def test_the_prompts_own_turns_are_never_placed_again(memory: Memory) -> None:
    _seed(memory)
    text, _ = _block(memory, 5_000, stateless=False)
    # The call carries the first exchange: the block neither repeats it under "Recent
    # conversation" nor shows its captured messages as recalled memories.
    assert "Recent conversation:" not in text and "Facts:" in text
    for message in EARLIER:
        assert message["content"] not in text


def _recent(text: str) -> list[str]:
    section = text.split("Recent conversation:\n")[1:]
    return [line for line in "".join(section).splitlines() if line.startswith("- ")]


def test_a_stateless_call_gets_the_session_turns_it_lacks_once(memory: Memory) -> None:
    chat = [{"role": "user", "content": "Anything new?"}]
    memory.capture(EARLIER, session_id="s1", mode="fast")
    assert memory.flush(30)
    binding = Binding(
        memory, AdapterOptions(session_id="s1", session_history=4, k=1), source="test"
    )
    text = binding.context(binding.query(chat), binding.scope(), messages=chat).text
    # k=1: recall shows one of the two earlier messages at most; the session history
    # places the other, and neither is shown twice.
    assert _recent(text)
    for message in EARLIER:
        assert text.count(message["content"]) == 1
    # Without session history the call lacks nothing the block could know of.
    plain = Binding(memory, AdapterOptions(session_id="s1", k=1), source="test")
    assert _recent(plain.context("Anything new?", plain.scope(), messages=chat).text) == []


def test_recent_turns_caps_what_the_session_history_shows(memory: Memory) -> None:
    memory.capture(
        [*EARLIER, {"role": "user", "content": "Bob prefers the modern art museum."}],
        session_id="s1",
        mode="fast",
    )
    assert memory.flush(30)
    chat = [{"role": "user", "content": "Anything new?"}]
    shown = {}
    for recent_turns in (4, 1, 0):
        options = AdapterOptions(session_id="s1", session_history=4, recent_turns=recent_turns, k=1)
        binding = Binding(memory, options, source="test")
        shown[recent_turns] = _recent(
            binding.context("Anything new?", binding.scope(), messages=chat).text
        )
    assert len(shown[4]) == 2  # three said, one of them recalled (k=1)
    assert shown[1] == shown[4][-1:]  # the newest kept
    assert shown[0] == []
