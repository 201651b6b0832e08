"""Progress bars of long work: Memory.add of a long conversation or document (and import /
export, in test_transfer.py), on stderr only when asked or when stderr is a terminal."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from memtrellis import ExtractionConfig, InvalidInputError, Memory
from memtrellis._progress import shown
from memtrellis.testing import HashingEmbedder, ScriptedLLM

CONVERSATION = [
    {"role": "user" if n % 2 == 0 else "assistant", "content": f"Message {n} about gardening"}
    for n in range(40)
]


def _reply(messages: list[dict[str, str]]) -> str:
    """One memory citing the window's first message (its ids are listed in the prompt); the
    lifecycle's judge, comparing the notes, gets an answer it ignores."""
    listed = next(
        (x for x in messages[-1]["content"].splitlines() if x.startswith("Valid source")), None
    )
    if listed is None:
        return "{}"
    first = json.loads(listed.split(": ", 1)[1])[0]
    return json.dumps({"memories": [{"value": f"Gardening note {first}", "source_ids": [first]}]})


def _fine(path: Path) -> Memory:
    llm = ScriptedLLM(_reply)
    config = ExtractionConfig(max_messages=10, message_overlap=0)
    return Memory(path, embedder=HashingEmbedder(), llm=llm, extraction=config)


def test_a_long_fine_mode_add_counts_its_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _fine(tmp_path / "a") as memory:
        stored = memory.add(CONVERSATION, progress=True)
    err = capsys.readouterr().err
    assert "extracting" in err and "/4 [" in err
    assert len([m for m in stored if m.text.startswith("Gardening note")]) == 4


def test_no_bar_when_stderr_is_not_a_terminal_or_when_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _fine(tmp_path / "a") as memory:
        memory.add(CONVERSATION)  # stderr is captured here, not a terminal
        memory.add(CONVERSATION, progress=False, entity_id="other")
    assert capsys.readouterr().err == ""


def test_a_long_fast_mode_add_counts_the_memories_it_embeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation = CONVERSATION * 8  # 320 messages: more than one embedding chunk
    with Memory(tmp_path / "a", embedder=HashingEmbedder()) as memory:
        with_bar = memory.add(conversation, mode="fast", progress=True, entity_id="a")
        without = memory.add(conversation, mode="fast", progress=False, entity_id="b")
    err = capsys.readouterr().err
    assert "embedding" in err and "/320 [" in err
    assert [m.text for m in with_bar] == [m.text for m in without]


async def test_async_add_counts_its_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with _fine(tmp_path / "a") as memory:
        await memory.aadd(CONVERSATION, progress=True)
    assert "/4 [" in capsys.readouterr().err


def test_a_terminal_turns_the_default_on(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    assert shown(None) and shown(True) and not shown(False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not shown(None) and shown(True)


def test_progress_must_be_a_bool_or_none(tmp_path: Path) -> None:
    with (
        Memory(tmp_path / "a", embedder=HashingEmbedder()) as memory,
        pytest.raises(InvalidInputError, match="progress"),
    ):
        memory.add("hello", progress=1)  # type: ignore[arg-type]
