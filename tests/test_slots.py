"""The slot model (lifecycle/slots.py, lifecycle/values.py): supersession read from one
subject, its attribute words and a typed value replaced, for wordings no cue list names;
and the guards that keep compatible statements apart."""

from __future__ import annotations

import pytest

from memtrellis import MemoryItem, Scope
from memtrellis.lifecycle import relate
from memtrellis.lifecycle.claims import read_claim
from memtrellis.lifecycle.entities import heuristic_entities
from memtrellis.lifecycle.slots import MAX_SLOT_CHARS, several_slots, slot_change
from memtrellis.lifecycle.values import read_values


def item(text: str) -> MemoryItem:
    return MemoryItem(text=text, entities=heuristic_entities(text), scope=Scope(entity_id="u"))


def label(old: str, new: str, similarity: float = 0.6) -> str:
    return relate(item(new), item(old), similarity=similarity).label


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Standup moves to 9:45 next week.", [("time", "", "9:45"), ("date", "", "next week")]),
        ("The team has 12 engineers.", [("quantity", "engineer", "12")]),
        ("Rent is 1,020 euros a month.", [("money", "euro", "1020")]),
        ("The lab is in building 9.", [("label", "building", "9")]),
        ("Release 4.2 ships on Tuesday.", [("label", "release", "4.2"), ("date", "", "tuesday")]),
        ("Call me at 0171 2345678.", [("phone", "", "0171 2345678")]),
        ("The fee went down to 0.9%.", [("percent", "", "0.9")]),
        ("Our daughter is 7 years old.", [("number", "", "7")]),
        ("We may meet in May.", [("date", "", "may")]),
        ("会议改到下周二下午三点。", [("date", "", "下周二"), ("time", "", "下午三点")]),
        ("房租涨到每月4000元了。", [("money", "元", "4000元")]),
        ("我的体重是70公斤。", [("quantity", "公斤", "70")]),
    ],
)
def test_values_are_read_with_their_kind_and_unit(
    text: str, expected: list[tuple[str, str, str]]
) -> None:
    assert [(v.kind, v.unit, v.text) for v in read_values(text)] == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # an unlisted verb with the new value as its target
        ("The quarterly audit begins on 3 March.", "The quarterly audit got bumped to 10 March."),
        ("The gym closes at 10 pm.", "The gym closes at 11 pm."),  # the same words
        # an agent acting on the old subject
        ("Our rent is 1,200 euros a month.", "The landlord hiked our rent to 1,350 euros a month."),
        ("The print budget is 5,000.", "Finance trimmed the print budget by 20%."),  # by how much
        ("My locker is number 12.", "My locker got switched to number 31."),
        ("Contact Mo at mo@old.example.", "Mo has a new email address: mo@new.example."),
        ("Our office is in Leeds.", "We relocated the office to York."),  # a name as target
        ("The concert is in the park.", "The concert has been called off."),  # a thing ended
        ("The ticket is unresolved.", "The ticket was fixed in release 3.1."),
        ("健身房每晚十点关门。", "健身房改到每晚十一点关门了。"),
        ("这台电脑内存是8G。", "这台电脑内存扩到了16G。"),
        ("我在腾讯做设计。", "我换了工作，现在在字节做设计。"),
        ("这条路可以通行。", "这条路不能通行了。"),
    ],
)
def test_a_changed_slot_supersedes_in_words_no_cue_list_names(old: str, new: str) -> None:
    assert label(old, new) == "supersedes"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Bus fares are 2 pounds.", "Train fares are 6 pounds."),  # another subject
        ("My work number is 555-2020.", "My home number is 555-4545."),
        ("The team has 12 engineers.", "The team hired 3 engineers."),  # the value's verb
        ("The bakery closes at 6 pm.", "The bakery closes at 8 pm on Saturdays."),  # qualifier
        ("I have a meeting with Priya on Monday.", "I have a meeting with Tom on Tuesday."),
        ("I visited Rome in 2019.", "I visited Rome in 2022."),  # two events
        ("Release 4.2 ships on Tuesday.", "Release 4.3 ships on Thursday."),  # which release
        ("Sara is 34.", "Sara got a raise to 66,000 a year."),  # a bare number's word
        ("The pool is 25 metres long.", "The pool is closed on Sundays."),
        ("Standup is at 9:15.", "We might move standup to 9:45."),  # not yet
        ("Four engineers joined in May.", "Four of the engineers work remotely."),
        ("We meet on Friday at 10.", "We pushed the dinner back to next Friday."),  # the speaker
        ("I live in Lisbon.", "I switched to a new phone."),
        ("航班下午两点起飞。", "返程航班晚上八点起飞。"),  # a modifier: another flight
        ("团队有12个人。", "团队里有4个人远程办公。"),
        ("项目上线日期为2024-06-15", "项目预算调整为80万元。"),  # the topic's own words
        ("我女儿七岁。", "我儿子四岁了。"),
    ],
)
def test_compatible_statements_are_never_superseded(old: str, new: str) -> None:
    for similarity in (0.3, 0.7, 0.99):
        assert label(old, new, similarity) not in {"supersedes", "duplicate"}, similarity


def test_the_slot_model_reads_short_statements_only() -> None:
    old, new = "The standup is at 9:15.", "The standup moves to 9:45."
    assert slot_change(new, old, read_claim(new), read_claim(old)) is not None
    assert not several_slots(new, old, read_claim(new), read_claim(old))
    long = new + " Notes follow." + " zz" * MAX_SLOT_CHARS  # a page, not one statement
    assert slot_change(long, old, read_claim(long), read_claim(old)) is None
    assert several_slots(long, old, read_claim(long), read_claim(old))
