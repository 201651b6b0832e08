"""Fast mode cuts a chat into bursts: one speaker's messages said close together are one
memory, each message one of its sources (issue 21, item 1)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memtrellis import ExtractionConfig, Memory
from memtrellis.context import build_context
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.refine import refine_groups
from memtrellis.testing import HashingEmbedder, store_of
from memtrellis.types import EdgeKind

START = datetime(2026, 3, 1, 20, 0, tzinfo=timezone.utc)


def said(
    number: int, speaker: str, text: str, minutes: float = 0.0, role: str = "user"
) -> dict[str, Any]:
    return {
        "role": role,
        "content": text,
        "id": f"m{number}",
        "speaker": speaker,
        "timestamp": (START + timedelta(minutes=minutes)).isoformat(),
    }


CHAT = [
    said(1, "Ana", "omg", 0),
    said(2, "Ana", "I got the job!!", 0.2),
    said(3, "Ana", "start monday", 0.5),
    said(4, "Bo", "no way", 1),
    said(5, "Bo", "congrats!!", 1.1),
    said(6, "Ana", "thx", 2),
    said(7, "Ana", "also my sister is visiting next week", 45),  # a long pause
]


def memory_at(path: Path, **config: Any) -> Memory:
    extraction = ExtractionConfig(**config) if config else None
    return Memory(path, entity_id="ana", embedder=HashingEmbedder(), extraction=extraction)


def ids(item: Any) -> list[str]:
    return [s.message_id for s in item.sources]


def test_a_burst_is_one_memory_with_every_message_as_a_source(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        stored = memory.add(CHAT, mode="fast")
        assert [ids(i) for i in stored] == [["m1", "m2", "m3"], ["m4", "m5"], ["m6"], ["m7"]]
        first = stored[0]
        assert first.text == "omg\nI got the job!!\nstart monday"
        assert [(s.speaker, s.content) for s in first.sources] == [
            ("Ana", "omg"),
            ("Ana", "I got the job!!"),
            ("Ana", "start monday"),
        ]
        assert [s.timestamp for s in first.sources] == [
            START,
            START + timedelta(minutes=0.2),
            START + timedelta(minutes=0.5),
        ]
        assert first.valid_from == START
        assert first.search_text() == "Ana: omg\nI got the job!!\nstart monday"
        # Bursts of one conversation follow each other, as messages did.
        graph = store_of(memory).graph_of("ana")
        follows = [graph.edges_of(i.id, EdgeKind.FOLLOWS)[0] for i in stored]
        assert follows == [[], [stored[0].id], [stored[1].id], [stored[2].id]]


def test_no_burst_across_speakers_roles_pauses_or_a_full_burst(tmp_path: Path) -> None:
    chat = [
        said(1, "Ana", "hi", 0),
        said(2, "Bo", "hi", 0),  # another speaker
        said(3, "Bo", "there", 6),  # a pause longer than burst_gap (300 s)
        said(4, "Bo", "all good?", 7, role="assistant"),  # another role
        {"role": "system", "content": "Be brief.", "id": "s1"},  # not extracted: ends it
        said(5, "Bo", "yes", 7),
        said(6, "Bo", "word " * 200, 7),  # would overfill the burst (160 tokens)
    ]
    with memory_at(tmp_path / "s") as memory:
        stored = memory.add(chat, mode="fast")
        assert [ids(i) for i in stored] == [["m1"], ["m2"], ["m3"], ["m4"], ["m5"], ["m6"]]


def test_the_gap_and_the_size_of_a_burst_are_settings(tmp_path: Path) -> None:
    with memory_at(tmp_path / "a", burst_gap=3600.0) as memory:
        assert [ids(i) for i in memory.add(CHAT, mode="fast")][-1] == ["m6", "m7"]
    with memory_at(tmp_path / "b", fast_unit="message") as memory:
        assert [ids(i) for i in memory.add(CHAT, mode="fast")] == [[f"m{n}"] for n in range(1, 8)]
    with pytest.raises(InvalidInputError, match="fast_unit"):
        ExtractionConfig(fast_unit="scene")
    with pytest.raises(InvalidInputError, match="burst_gap"):
        ExtractionConfig(burst_gap=-1.0)


def test_messages_without_times_are_bursts_only_when_captured_as_one_turn(
    tmp_path: Path,
) -> None:
    plain = [
        {"role": "user", "content": "lol same"},
        {"role": "user", "content": "my cat does that too"},
        {"role": "assistant", "content": "Cats!"},
    ]
    with memory_at(tmp_path / "s") as memory:
        # add: nothing says when they were said (notes given as messages stay apart)
        stored = memory.add(plain, mode="fast", entity_id="added")
        assert [i.text for i in stored] == ["lol same", "my cat does that too", "Cats!"]
        # capture: one turn, sent before one reply
        memory.capture(plain, entity_id="captured")
        assert memory.flush(30)
        captured = memory.list(entity_id="captured")
        assert sorted(i.text for i in captured) == ["Cats!", "lol same\nmy cat does that too"]
        burst = next(i for i in captured if len(i.sources) == 2)
        assert len({s.timestamp for s in burst.sources}) == 1  # the capture's time


def test_facts_the_caller_vouches_for_stay_one_per_message(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        stored = memory.add(CHAT[:3], mode="fast", memory_type="fact")
        assert [ids(i) for i in stored] == [["m1"], ["m2"], ["m3"]]


def test_a_resent_burst_is_not_stored_twice(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        memory.add(CHAT, mode="fast")
        assert memory.add(CHAT, mode="fast") == []
        # The history again with one more message of Ana's burst: only that one is new.
        later = said(8, "Ana", "so excited", 45.5)
        [added] = memory.add([*CHAT, later], mode="fast")
        assert ids(added) == ["m8"]
        assert added.text == "so excited"
        cited = [m for item in memory.list() for m in ids(item)]
        assert sorted(cited) == sorted(f"m{n}" for n in range(1, 9))  # each message once


def test_a_burst_sent_one_message_at_a_time_stores_each_message_once(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        for end in range(1, len(CHAT) + 1):
            memory.add(CHAT[:end], mode="fast")
        cited = [m for item in memory.list() for m in ids(item)]
        assert sorted(cited) == sorted(f"m{n}" for n in range(1, 8))


def test_a_forgotten_message_of_a_burst_stays_forgotten(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        solo = memory.add([CHAT[0]], mode="fast")
        assert memory.forget(solo[0].id) == 1
        [burst, *_] = memory.add(CHAT, mode="fast")
        assert ids(burst) == ["m2", "m3"]
        assert "omg" not in burst.text


def test_a_burst_is_shown_as_said_and_refined_message_by_message(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        memory.add(CHAT, mode="fast")
        result = memory.recall("did Ana get the job?", k=2)
        block = build_context(result, token_budget=400).text
        assert "From earlier conversations:" in block
        assert "Ana] omg I got the job!! start monday" in block
        [group] = refine_groups(memory.list())
        assert [m["id"] for m in group.messages] == [f"m{n}" for n in range(1, 8)]
        assert group.messages[1]["content"] == "I got the job!!"
        first = next(i for i in memory.list() if ids(i)[0] == "m1")
        assert {group.memory_by_message[m] for m in ("m1", "m2", "m3")} == {first.id}
