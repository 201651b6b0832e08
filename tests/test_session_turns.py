"""Memory.session_turns: the latest messages of one session of one entity, from the
captured turns not stored yet and the sources of the stored memories (real Chroma)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtrellis import InvalidInputError, Memory
from memtrellis.testing import HashingEmbedder, ScriptedLLM


def _turn(question: str, answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def _said(memory: Memory, **scope: str) -> list[tuple[str | None, str]]:
    return [(s.role, s.content) for s in memory.session_turns(**scope)]


def test_the_session_s_messages_oldest_first_and_nobody_else_s(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.capture(_turn("Plan Lisbon", "Which dates?"), session_id="s1")
        memory.capture(_turn("Prune the roses", "In March."), session_id="s2")
        memory.capture(_turn("Jazz on Sunday?", "From eight."), session_id="s1", entity_id="bo")
        memory.capture(_turn("The second week", "Booked."), session_id="s1")
        memory.add("A note, not a message", session_id="s1")
        assert memory.flush(30)

        assert _said(memory, session_id="s1") == [
            ("user", "Plan Lisbon"),
            ("assistant", "Which dates?"),
            ("user", "The second week"),
            ("assistant", "Booked."),
        ]
        assert _said(memory, session_id="s1", limit=1) == [("assistant", "Booked.")]
        assert _said(memory, session_id="s1", entity_id="bo") == [
            ("user", "Jazz on Sunday?"),
            ("assistant", "From eight."),
        ]
        with memory.scope(session_id="s2"):  # the scope's session when none is given
            assert _said(memory) == [("user", "Prune the roses"), ("assistant", "In March.")]
        assert _said(memory, session_id="s3") == []
        with pytest.raises(InvalidInputError, match="session_id"):
            memory.session_turns()


def test_a_turn_is_there_while_it_waits_and_once_stored(tmp_path: Path) -> None:
    # fine capture with a slow model: the turn waits in the spool for a while
    reply = json.dumps({"memories": [{"value": "Ana is planning a trip to Lisbon"}]})
    llm = ScriptedLLM(lambda messages: reply, delay=1.5)
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder(), llm=llm) as memory:
        memory.capture(_turn("Plan Lisbon", "Which dates?"), session_id="s1")
        waiting = memory.session_turns(session_id="s1")
        assert memory.flush(30)
        stored = memory.session_turns(session_id="s1")
        [fact] = memory.list()
    assert [(s.role, s.content) for s in waiting] == [
        ("user", "Plan Lisbon"),
        ("assistant", "Which dates?"),
    ]
    assert [s.message_id for s in stored] == [s.message_id for s in waiting]
    assert fact.text == "Ana is planning a trip to Lisbon"  # a fact; the turns are its sources


def test_a_forgotten_memory_takes_its_messages_with_it(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.capture(_turn("My PIN is 4321", "I will not repeat it."), session_id="s1")
        memory.capture(_turn("Plan Lisbon", "Which dates?"), session_id="s1")
        assert memory.flush(30)
        [pin] = [m for m in memory.list() if "4321" in m.text]
        memory.forget(pin.id)
        assert "My PIN is 4321" not in [s.content for s in memory.session_turns(session_id="s1")]
        memory.forget(entity_id="ana")
        assert memory.session_turns(session_id="s1") == []
        memory.capture(_turn("Start again", "Sure."), session_id="s1")
        assert _said(memory, session_id="s1") == [("user", "Start again"), ("assistant", "Sure.")]


def test_a_process_id_narrows_the_session(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.capture(_turn("From the web app", "Hi web."), session_id="s1", process_id="web")
        memory.capture(_turn("From the bot", "Hi bot."), session_id="s1", process_id="bot")
        assert memory.flush(30)
        assert [c for _, c in _said(memory, session_id="s1", process_id="bot")] == [
            "From the bot",
            "Hi bot.",
        ]
        assert len(memory.session_turns(session_id="s1")) == 4


def test_bad_arguments_are_typed_errors(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", embedder=HashingEmbedder()) as memory:
        for bad in (0, -1, 1.5, True):
            with pytest.raises(InvalidInputError):
                memory.session_turns(session_id="s1", limit=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            memory.session_turns(session_id="  ")


async def test_async_and_in_an_engine_process(tmp_path: Path) -> None:
    with Memory(
        tmp_path / "s", entity_id="ana", embedder=HashingEmbedder(), engine_process=True
    ) as memory:
        memory.capture(_turn("Plan Lisbon", "Which dates?"), session_id="s1")
        memory.add("Book the hotel by Friday", memory_type="action_item")
        with memory.scope(session_id="s1"):
            found = await memory.asession_turns()
        assert [s.content for s in found] == ["Plan Lisbon", "Which dates?"]
        assert [s.content for s in memory.session_turns(session_id="s1", limit=1)] == [
            "Which dates?"
        ]
        # open_items is served by the engine process too (the adapters read it)
        assert [i.text for i in memory.open_items()] == ["Book the hotel by Friday"]
        assert [i.text for i in await memory.aopen_items()] == ["Book the hotel by Friday"]
