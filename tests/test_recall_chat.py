"""Recall over chat as people write it (issue 21): misspelt words on either side of a
question, and reactions ("lol", "omg") between a turn and its reply."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from memtrellis import Memory
from memtrellis.recall import neighbours
from memtrellis.store import KeywordIndex
from memtrellis.store import keyword as keyword_module
from memtrellis.store.spelling import Spellings, edits_allowed
from memtrellis.testing import temp_memory

START = datetime(2026, 3, 1, 20, 0, tzinfo=timezone.utc)

FILLER = [
    "My brother plays the trumpet in a jazz band",
    "We had pasta with mushrooms for dinner",
    "The train to the airport was late again",
    "I repainted the kitchen a pale green",
    "Our neighbour grows tomatoes on the balcony",
    "The museum opens a new wing in spring",
]


def index_of(texts: dict[str, str]) -> KeywordIndex:
    index = KeywordIndex()
    for memory_id, text in texts.items():
        index.add("me", memory_id, text)
    return index


def top(index: KeywordIndex, query: str, **options: Any) -> list[str]:
    return [memory_id for memory_id, _ in index.search("me", query, 3, **options)]


def test_a_misspelt_query_finds_its_memory_in_the_keyword_index() -> None:
    texts = {f"f{n}": text for n, text in enumerate(FILLER)}
    texts["answer"] = "My friend Lukas lives in a houseboat"
    index = index_of(texts)
    assert top(index, "who is my freind") == ["answer"]
    assert top(index, "who is my freind", fuzzy=False) == []
    # two edits in a long word
    texts["long"] = "The photographer was unbelievably patient"
    index = index_of(texts)
    assert top(index, "unbeleivabely")[:1] == ["long"]


def test_a_misspelt_memory_is_found_by_a_well_spelt_query() -> None:
    texts = {f"f{n}": text for n, text in enumerate(FILLER)}
    texts["typo"] = "we went campnig by the lake last wknd"
    texts["ending"] = "I recieved the parcel this morning"
    index = index_of(texts)
    assert top(index, "Who went camping?") == ["typo"]  # "campnig": two letters swapped
    assert top(index, "when was the parcel received")[:1] == ["ending"]


def test_a_garbled_ending_reads_as_the_stem() -> None:
    index = index_of({"a": "We love camping in the hills", "b": "The camera broke"})
    # "campnig" is no term; "camp" (the stem of "camping") starts it
    assert top(index, "campnig trip") == ["a"]


def test_short_words_and_other_first_letters_match_exactly_only() -> None:
    index = index_of({"a": "I like the lake", "b": "She sang at a wedding"})
    assert top(index, "bike") == []  # "like": one letter off, but four letters
    assert top(index, "fedding") == []  # the first letter is trusted
    assert [edits_allowed(w) for w in ("bike", "freind", "unbeleivabely")] == [0, 1, 2]


def test_an_exact_match_outscores_a_misspelt_one_and_a_word_counts_once() -> None:
    index = index_of(
        {"exact": "my friend sings", "near": "my freind sings", "both": "friend freind"}
    )
    scores = dict(index.search("me", "friend", 5))
    assert scores["exact"] > scores["near"] > 0
    # "both" holds the word twice, spelt two ways: it is credited once, by the better one
    plain = dict(index.search("me", "friend", 5, fuzzy=False))
    assert scores["both"] == pytest.approx(plain["both"])


def test_spellings_follow_terms_added_and_removed() -> None:
    index = KeywordIndex()
    index.add("me", "m1", "my freind sings")
    assert top(index, "friend") == ["m1"]
    index.remove("m1")
    assert top(index, "friend") == []
    words = Spellings()
    words.add("friend")
    words.discard("friend")
    assert words.near("freind") == []


def test_a_misspelt_question_recalls_its_memory_end_to_end() -> None:
    with temp_memory(entity_id="me") as memory:
        memory.add([*FILLER, "I adopted a tortoise named Bruno"], mode="fast")
        hits = memory.recall("what is my tortise called?", k=3)
        assert "tortoise" in hits.memories[0].text


# -- reactions between a turn and its reply ------------------------------------------------

REACTIONS = ["lol", "omg", "lol omg", "omg lol", "lol lol"]


def chat() -> list[dict[str, Any]]:
    """Ana and Bo alternate; every turn is followed by two reactions, and one question
    of Ana's by Bo's reply three messages later."""
    lines: list[tuple[str, str]] = []
    for n, text in enumerate(FILLER):
        lines.append(("Ana" if n % 2 else "Bo", text))
        lines.append(("Ana" if n % 2 == 0 else "Bo", REACTIONS[n % len(REACTIONS)]))
        lines.append(("Ana" if n % 2 else "Bo", REACTIONS[(n + 1) % len(REACTIONS)]))
    lines += [
        ("Ana", "Guess which city I moved to in August?"),
        ("Bo", "omg"),
        ("Ana", "lol"),
        ("Bo", "Lisbon, right? You always loved the trams there"),
    ]
    return [
        {
            "role": "user",
            "content": text,
            "id": f"m{n}",
            "speaker": speaker,
            "timestamp": (START + timedelta(minutes=n)).isoformat(),
        }
        for n, (speaker, text) in enumerate(lines)
    ]


def recall_reply(memory: Memory) -> tuple[Any, list[Any]]:
    found = memory.recall("Which city did Ana move to in August?", k=30)
    reply = next((h for h in found.items if h.memory.text.startswith("Lisbon")), None)
    return reply, found.memories


def test_reactions_are_passed_over_and_the_reply_gets_the_turns_share() -> None:
    with temp_memory(entity_id="me") as memory:
        stored = memory.add(chat(), mode="fast")
        turn = next(i for i in stored if "Guess" in i.text)
        reply, hits = recall_reply(memory)
        assert reply is not None
        assert reply.explanation.graph_path[:2] == [turn.id, "follows"]
        texts = [h.text for h in hits]
        assert texts.index(reply.memory.text) < min(texts.index(r) for r in REACTIONS)


def test_without_passing_over_the_reply_is_out_of_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neighbours, "SKIP_SLIGHT", False)
    with temp_memory(entity_id="me") as memory:
        stored = memory.add(chat(), mode="fast")
        turn = next(i for i in stored if "Guess" in i.text)
        reply, _ = recall_reply(memory)
        # three messages away: no share of the turn's score reaches it
        assert reply is None or reply.explanation.graph_path[:1] != [turn.id]


def test_a_slight_memory_is_one_whose_terms_are_all_common() -> None:
    texts = {f"r{n}": REACTIONS[n % len(REACTIONS)] for n in range(20)}
    texts["once"] = "lol same"  # "same" is held by one memory: not common
    texts.update({f"f{n}": text for n, text in enumerate(FILLER)})
    texts["rare"] = "lol my tortoise escaped"
    index = index_of(texts)
    slight = neighbours.slight_test(index, "me")
    assert slight("r0") and slight("r2")
    assert not slight("rare") and not slight("f0") and not slight("once")
    assert not slight("unknown")  # nothing indexed: not slight


def test_fuzzy_matching_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword_module, "FUZZY", False)
    index = index_of({"a": "my freind sings"})
    assert top(index, "friend") == []
