"""Speaker- and time-aware recall: cues read from the question (issue 21, item 3)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtrellis import Memory
from memtrellis.recall.cues import (
    asked_roles,
    named_speakers,
    parse_cues,
    time_span,
)
from memtrellis.testing import HashingEmbedder

# A Friday afternoon.
ANCHOR = datetime(2023, 10, 20, 15, 0, tzinfo=timezone.utc)


def span(query: str, anchor: datetime = ANCHOR) -> tuple[str, str] | None:
    found = time_span(query, anchor)
    if found is None:
        return None
    return found.start.date().isoformat(), (found.end - timedelta(seconds=1)).date().isoformat()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did she say yesterday?", ("2023-10-19", "2023-10-19")),
        ("what happened last night", ("2023-10-19", "2023-10-19")),
        ("the day before yesterday", ("2023-10-18", "2023-10-18")),
        ("Anything new today?", ("2023-10-20", "2023-10-20")),
        ("What did Ana do 3 days ago?", ("2023-10-17", "2023-10-17")),
        ("two weeks ago", ("2023-10-03", "2023-10-09")),
        ("a couple of months ago", ("2023-08-01", "2023-08-31")),
        ("last week", ("2023-10-09", "2023-10-15")),
        ("this week", ("2023-10-16", "2023-10-22")),
        ("last weekend", ("2023-10-14", "2023-10-15")),
        ("last month", ("2023-09-01", "2023-09-30")),
        ("last year", ("2022-01-01", "2022-12-31")),
        ("last summer", ("2023-06-01", "2023-08-31")),
        ("over the winter", ("2022-12-01", "2023-02-28")),
        ("in March", ("2023-03-01", "2023-03-31")),
        ("in November", ("2022-11-01", "2022-11-30")),  # the latest November begun
        ("last October", ("2022-10-01", "2022-10-31")),  # not the one going on
        ("March 2021", ("2021-03-01", "2021-03-31")),
        ("on 8 May, 2023", ("2023-05-08", "2023-05-08")),
        ("on May 8th", ("2023-05-08", "2023-05-08")),
        ("on 2023-05-08", ("2023-05-08", "2023-05-08")),
        ("during 2021", ("2021-01-01", "2021-12-31")),
        ("at the end of summer 2022", ("2022-06-01", "2022-08-31")),
        ("two years ago", ("2021-04-21", "2022-04-20")),
        ("What is she planning for next summer?", None),  # nothing said then yet
        ("last Friday", ("2023-10-13", "2023-10-13")),
        ("What may she like?", None),  # a verb, not a month
        ("Did she fall off the bike?", None),  # a verb, not a season
        ("What is Ana's favourite colour?", None),
    ],
)
def test_english_time_phrases(query: str, expected: tuple[str, str] | None) -> None:
    assert span(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("小王去年夏天去了哪里？", ("2022-06-01", "2022-08-31")),
        ("今年夏天呢", ("2023-06-01", "2023-08-31")),
        ("她三月说了什么？", ("2023-03-01", "2023-03-31")),
        ("十二月的事", ("2022-12-01", "2022-12-31")),
        ("昨天我们聊了什么", ("2023-10-19", "2023-10-19")),
        ("前天", ("2023-10-18", "2023-10-18")),
        ("3天前", ("2023-10-17", "2023-10-17")),
        ("两周前他说了什么", ("2023-10-03", "2023-10-09")),
        ("三个月前", ("2023-07-01", "2023-07-31")),
        ("上个月", ("2023-09-01", "2023-09-30")),
        ("上周", ("2023-10-09", "2023-10-15")),
        ("去年", ("2022-01-01", "2022-12-31")),
        ("2023年5月8日", ("2023-05-08", "2023-05-08")),
        ("2021年3月", ("2021-03-01", "2021-03-31")),
        ("小王 last summer 去了哪里", ("2023-06-01", "2023-08-31")),  # mixed
        ("你几月去的？", None),  # "which month", not a month
        ("我的工作是什么？", None),
    ],
)
def test_chinese_time_phrases(query: str, expected: tuple[str, str] | None) -> None:
    assert span(query) == expected


def test_a_span_holds_a_little_after_its_end() -> None:
    found = time_span("last week", ANCHOR)
    assert found is not None
    assert found.holds(datetime(2023, 10, 16, 18, 0, tzinfo=timezone.utc))  # told on Monday
    assert not found.holds(datetime(2023, 10, 8, tzinfo=timezone.utc))
    assert not found.holds(datetime(2023, 10, 18, tzinfo=timezone.utc))
    assert found.label() == "time last week (2023-10-09..2023-10-15)"


def test_names_match_fuzzily_and_common_words_do_not() -> None:
    people = ["Caroline", "Melanie", "Will"]
    assert named_speakers("What did Caroline say about the race?", people) == ("Caroline",)
    assert named_speakers("what did carolin say", people) == ("Caroline",)  # a typo
    assert named_speakers("What did Carloine paint?", people) == ("Caroline",)  # transposed
    assert named_speakers("What did Mel paint?", people) == ("Melanie",)  # a short form
    assert named_speakers("What will she paint?", people) == ()
    assert named_speakers("What did Will say?", people) == ("Will",)
    assert named_speakers("What did Caroline Smith say?", ["Caroline Smith"]) == ("Caroline Smith",)
    assert named_speakers("什么 did 小王 say?", ["小王", "小李"]) == ("小王",)
    assert named_speakers("小李昨天说了什么？", ["小王", "小李"]) == ("小李",)


def test_the_user_and_the_assistant_are_asked_about_without_names() -> None:
    assert asked_roles("What did I say about my sister?") == ("user",)
    assert asked_roles("what did you recommend?") == ("assistant",)
    assert asked_roles("你建议我看什么书？") == ("assistant",)
    assert asked_roles("Where does Ana live?") == ()


def test_when_every_speaker_is_named_none_is_preferred() -> None:
    def at() -> datetime:
        return ANCHOR

    assert parse_cues("Did Ana call Bo?", ["Ana", "Bo"], at).empty
    assert parse_cues("Did Ana call Bo?", ["Ana", "Bo", "Cy"], at).speakers == ("Ana", "Bo")
    # Ana and an assistant that has no name: naming Ana prefers her
    assert parse_cues("What did Ana say?", ["Ana"], at, unnamed=True).speakers == ("Ana",)
    assert parse_cues("What did Ana say?", ["Ana"], at).empty


def chat(texts: list[tuple[str, str, datetime]]) -> list[dict[str, object]]:
    return [
        {
            "role": "user",
            "content": text,
            "id": f"m{number}",
            "speaker": speaker,
            "timestamp": when.isoformat(),
        }
        for number, (speaker, text, when) in enumerate(texts)
    ]


def test_a_question_naming_a_speaker_recalls_that_speakers_memory_first(tmp_path: Path) -> None:
    day = datetime(2023, 5, 1, 12, tzinfo=timezone.utc)
    messages = chat(
        [
            ("Ana", "The pizza place on Elm street is the best in town", day),
            ("Bo", "I think the pizza place on Elm street is overrated", day),
            ("Ana", "Anyway, see you at the market", day),
        ]
    )
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder()) as memory:
        memory.add(messages, mode="fast")
        for who, other in (("Bo", "Ana"), ("Ana", "Bo")):
            hits = memory.recall(f"What did {who} say about the pizza place?", k=3).items
            assert hits[0].memory.sources[0].speaker == who
            assert hits[0].explanation.boosts == [f"speaker {who}"]
            other_hit = next(h for h in hits if h.memory.sources[0].speaker == other)
            assert other_hit.explanation.boosts == []
            # The boost is a share of relevance, before confidence and heat weigh it.
            assert hits[0].explanation.relevance > other_hit.explanation.relevance


def test_a_question_naming_a_time_recalls_what_was_said_then_first(tmp_path: Path) -> None:
    march = datetime(2023, 3, 10, 12, tzinfo=timezone.utc)
    july = datetime(2023, 7, 2, 12, tzinfo=timezone.utc)
    messages = chat(
        [
            ("Ana", "We went hiking in the mountains", march),
            ("Ana", "We went hiking by the lake", july),
            ("Bo", "nice", july + timedelta(days=30)),  # the newest message: the anchor
        ]
    )
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder()) as memory:
        memory.add(messages, mode="fast")
        top = memory.recall("Where did they go hiking in March?", k=2).items[0]
        assert top.memory.text == "We went hiking in the mountains"
        assert top.explanation.boosts == ["time in March (03-01..03-31 of any year)"]
        top = memory.recall("Where did they go hiking last month?", k=2).items[0]
        assert top.memory.text == "We went hiking by the lake"  # July, before August's "nice"
        top = memory.recall("他们三月去哪里徒步了？ hiking", k=2).items[0]
        assert top.memory.text == "We went hiking in the mountains"


def holds(query: str, *days: str) -> list[bool]:
    found = time_span(query, ANCHOR)
    assert found is not None, query
    return [found.holds(datetime.fromisoformat(f"{day}T12:00:00+00:00")) for day in days]


@pytest.mark.parametrize(
    ("query", "label", "inside", "outside"),
    [
        # Up to a time: any time before it counts, the time itself too.
        (
            "How many pets did Ana have, as of September 2023?",
            "time as of September 2023 (..2023-09-30)",
            ["2021-02-01", "2023-09-15"],
            ["2023-10-15"],
        ),
        (
            "Has Ana won by July 10, 2022?",
            "time by July 10, 2022 (..2022-07-10)",
            ["2020-01-01"],
            ["2022-08-01"],
        ),
        (
            "What had they done by the end of 2022?",
            "time by the end of 2022 (..2022-12-31)",
            ["2019-05-01", "2022-12-30"],
            ["2023-06-01"],
        ),
        (
            "before March 2023",
            "time before March 2023 (..2023-02-28)",
            ["2022-05-01"],
            ["2023-03-10"],
        ),
        (
            "小王2023年3月之前住在哪里？",
            "time 2023年3月之前 (..2023-02-28)",
            ["2022-05-01"],
            ["2023-03-10"],
        ),
        # From a time on.
        (
            "What has Ana done since May?",
            "time since May (2023-05-01..)",
            ["2023-05-02", "2023-10-01"],
            ["2023-04-30"],
        ),
        ("after May 2022", "time after May 2022 (2022-06-01..)", ["2022-06-02"], ["2022-05-20"]),
        (
            "去年以来他做了什么",
            "time 去年以来 (2022-01-01..)",
            ["2022-02-01", "2023-09-01"],
            ["2021-12-01"],
        ),
        # Next to a time: the week before it is not "before it".
        (
            "Where was Tim in the week before 16 November 2022?",
            "time the week before 16 November 2022 (2022-11-09..2022-11-15)",
            ["2022-11-10"],
            ["2022-10-01", "2022-11-20"],
        ),
        (
            "the day after May 3, 2023",
            "time the day after May 3, 2023 (2023-05-04..2023-05-04)",
            ["2023-05-04"],
            ["2023-05-03"],
        ),
        # A month named without its year is that month of any year; with the year, that one.
        (
            "Where did they go in June?",
            "time in June (06-01..06-30 of any year)",
            ["2023-06-10", "2021-06-10"],
            ["2023-08-10"],
        ),
        (
            "十一月的事",
            "time 十一月 (11-01..11-30 of any year)",
            ["2022-11-05", "2019-11-05"],
            ["2022-10-05"],
        ),
        ("in June 2023", "time June 2023 (2023-06-01..2023-06-30)", ["2023-06-10"], ["2021-06-10"]),
    ],
)
def test_words_around_a_time_open_it_move_it_or_free_its_year(
    query: str, label: str, inside: list[str], outside: list[str]
) -> None:
    found = time_span(query, ANCHOR)
    assert found is not None
    assert found.label() == label
    assert holds(query, *inside) == [True] * len(inside)
    assert holds(query, *outside) == [False] * len(outside)


def test_a_narrow_time_lifts_its_messages_more_than_a_broad_one(tmp_path: Path) -> None:
    # A year of chat, a message a month about a film. The question names one day: the
    # message of that day answers it, though the others match its words a little better.
    # Named by its year, the time is that of every message and lifts none over another.
    first = datetime(2022, 1, 1, 12, tzinfo=timezone.utc)
    said = [
        ("Ana", f"I watched a movie last night, a good movie ({chr(97 + n) * 3})", when)
        for n, when in enumerate(first + timedelta(days=31 * n) for n in range(12))
    ]
    answer = "I watched a movie: Inception, at last"
    said.append(("Ana", answer, datetime(2022, 5, 1, 12, tzinfo=timezone.utc)))
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder()) as memory:
        memory.add(chat(said), mode="fast")
        plain = memory.recall("What movie did Ana watch?", k=3).items
        assert plain[0].memory.text != answer
        narrow = memory.recall("What movie did Ana watch on 1 May, 2022?", k=3).items
        assert narrow[0].memory.text == answer
        assert narrow[0].explanation.boosts == ["time 1 May, 2022 (2022-05-01..2022-05-01)"]
        broad = memory.recall("What movie did Ana watch in 2022?", k=3).items
        assert broad[0].memory.text != answer
