"""Time spans a question names: "last summer", "in March", "two weeks ago", "2023-05-08",
"去年夏天", "三月", "3天前", counted back from an anchor (see `memtrellis.recall.cues`).

English and Chinese phrases are read with regular expressions (no LLM); a Chinese
question may name its time in English. The first phrase that names a valid span wins,
most specific forms first (a date, a month of a year, then relative phrases). Spans are
UTC, ``[start, end)``: a day, a week (Monday first), a month, a season (meteorological,
northern: spring is March to May), a year; "N weeks ago" is the week around then, "N
years ago" the year around then. "Next summer" names no span: nothing was said then yet.
Words around a time open it on one side ("by May", "as of 2023", "3月之前": up to it;
"since May", "去年以来": from it on) or move it ("the week before 16 November"), and a
month named without its year ("in June", "三月") is that month of any year.

Examples:
    >>> from datetime import datetime, timezone
    >>> anchor = datetime(2023, 10, 20, 12, 0, tzinfo=timezone.utc)
    >>> span = time_span("What did Caroline do last summer?", anchor)
    >>> span.start.date().isoformat(), span.end.date().isoformat(), span.phrase
    ('2023-06-01', '2023-09-01', 'last summer')
    >>> time_span("小王去年夏天去了哪里？", anchor).start.date().isoformat()
    '2022-06-01'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

__all__ = ["TimeSpan", "may_name_time", "time_span"]

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5}
_ZH_DIGITS.update({"六": 6, "七": 7, "八": 8, "九": 9, "几": 3})
_ZH_SEASONS = {"春": 3, "夏": 6, "秋": 9, "冬": 12}
_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week"}
_ZH_UNITS.update({"月": "month", "年": "year"})
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


@dataclass(frozen=True)
class TimeSpan:
    """A span of time a question names: ``[start, end)``, UTC, and the words naming it.

    ``bound`` opens it on one side when the question counts up to or on from the named
    time: ``until`` ("by July 10", "as of September 2023", "3月之前": any time up to the end
    of it), ``before`` (up to its start), ``since`` ("since May", "from 2022", "2022年以来":
    its start on), ``after`` (its end on); ``start`` and ``end`` stay those of the time named.

    Examples:
        >>> from datetime import datetime, timezone
        >>> day = TimeSpan(datetime(2023, 5, 8, tzinfo=timezone.utc),
        ...                datetime(2023, 5, 9, tzinfo=timezone.utc), "2023-05-08")
        >>> day.holds(datetime(2023, 5, 10, 20, tzinfo=timezone.utc))  # two days after count
        True
        >>> by = TimeSpan(day.start, day.end, "by 2023-05-08", bound="until")
        >>> by.holds(datetime(2021, 1, 1, tzinfo=timezone.utc)), by.label()
        (True, 'time by 2023-05-08 (..2023-05-08)')
    """

    start: datetime
    end: datetime
    phrase: str
    bound: str = ""
    #: A month named without its year ("in June", "三月"): the same month of any year
    #: holds too (``start``/``end`` are the latest one), since a memory kept for years
    #: has several.
    yearly: bool = False

    @property
    def slack(self) -> timedelta:
        """How long after ``end`` a message still tells of the span."""
        return max(timedelta(days=2), (self.end - self.start) / 4)

    def holds(self, when: datetime) -> bool:
        """Whether ``when`` is in the span or within `slack` after it."""
        if self.bound == "until":
            return when < self.end + self.slack
        if self.bound == "before":
            return when < self.start
        if self.bound == "since":
            return when >= self.start
        if self.bound == "after":
            return when >= self.end
        if self.yearly:
            length, slack = self.end - self.start, self.slack
            for year in (when.year, when.year - 1):
                start = self.start.replace(year=year)
                if start <= when < start + length + slack:
                    return True
            return False
        return self.start <= when < self.end + self.slack

    def label(self) -> str:
        """``time <phrase> (<start>..<end>)``, as an explanation gives it (an open side
        left blank)."""
        first = self.start.date().isoformat()
        last = (self.end - timedelta(seconds=1)).date().isoformat()
        if self.yearly and not self.bound:
            return f"time {self.phrase} ({first[5:]}..{last[5:]} of any year)"
        if self.bound in ("until", "before"):
            if self.bound == "before":
                last = (self.start - timedelta(seconds=1)).date().isoformat()
            first = ""
        elif self.bound in ("since", "after"):
            first = first if self.bound == "since" else self.end.date().isoformat()
            last = ""
        return f"time {self.phrase} ({first}..{last})"


# Words before a time that open it on one side ("by May", "as of 2023", "since June").
_UNTIL_WORDS = r"by|until|till|up\s+to|as\s+of|no\s+later\s+than"
_SINCE_WORDS = r"since|from"
_OPENERS = re.compile(
    rf"\b(?:(?P<until>{_UNTIL_WORDS})|(?P<before>before|prior\s+to)|(?P<since>{_SINCE_WORDS})"
    r"|(?P<after>after))\s+(?:the\s+(?:end|beginning|start)\s+of\s+)?(?:the\s+)?$",
    re.I,
)
# ... and after a Chinese one ("2023年3月之前", "去年以来").
_ZH_CLOSERS = re.compile(
    r"^\s*(?:(?P<until>为止)|(?P<before>之前|以前)|(?P<since>以来)|(?P<after>之后|以后))"
)


_NEXT_TO = re.compile(
    r"\b(?:the\s+)?(?P<unit>day|week|weekend|month|year)\s+(?P<side>before|after|prior\s+to)\s+$",
    re.I,
)
_UNIT_LENGTH = {"day": 1, "week": 7, "weekend": 2, "month": 30, "year": 365}


#: Kinds of phrase that name a month without its year (a ``zh-month`` with a day names
#: one day, the latest such).
_YEARLY = ("in-month", "zh-month")


def _bound(
    query: str,
    match: re.Match[str],
    bounds: tuple[datetime, datetime],
    yearly: bool = False,
) -> TimeSpan:
    """The span ``match`` names (``bounds``), opened on one side by the words around it
    (see `TimeSpan.bound`), or moved next to it ("the week before 16 November")."""
    text = " ".join(match.group(0).split())
    start, end = bounds
    lead, _, rest = text.partition(" ")
    if rest and (own := _OPENERS.search(lead + " ")) is not None:
        # The pattern took the word itself ("since May", "by 2022").
        return TimeSpan(start, end, text, str(own.lastgroup))
    # "by the end of 2022": the pattern took "of" ("of 2022"), the words before it open it.
    took_of = bool(rest) and lead.casefold() == "of"
    prefix = query[: match.start()] + (lead + " " if took_of else "")
    named = rest if took_of else text
    beside = _NEXT_TO.search(prefix)
    if beside is not None:
        length = timedelta(days=_UNIT_LENGTH[beside.group("unit").casefold()])
        words = " ".join(prefix[beside.start() :].split())
        if beside.group("side").casefold() == "after":
            return TimeSpan(end, end + length, f"{words} {named}")
        return TimeSpan(start - length, start, f"{words} {named}")
    before = _OPENERS.search(prefix)
    if before is not None:
        words = " ".join(prefix[before.start() :].split())
        return TimeSpan(start, end, f"{words} {named}", str(before.lastgroup))
    after = _ZH_CLOSERS.search(query[match.end() :])
    if after is not None:
        return TimeSpan(start, end, text + after.group(0).strip(), str(after.lastgroup))
    return TimeSpan(start, end, text, yearly=yearly)


# -- time ----------------------------------------------------------------------------------


def _utc(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)


def _add_months(year: int, month: int, count: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + count
    return index // 12, index % 12 + 1


def _month_span(year: int, month: int, months: int = 1) -> tuple[datetime, datetime]:
    end_year, end_month = _add_months(year, month, months)
    return _utc(year, month), _utc(end_year, end_month)


def _day(when: datetime) -> datetime:
    return _utc(when.year, when.month, when.day)


def _season(anchor: datetime, first: int, which: str) -> tuple[datetime, datetime]:
    """The season starting in month ``first``: ``last``, ``this`` or the latest begun."""
    year = anchor.year if anchor.month >= first else anchor.year - 1
    start, end = _month_span(year, first, 3)
    if which == "last" and start <= anchor < end:  # in it now: last year's
        start, end = _month_span(year - 1, first, 3)
    return start, end


def _recent_month(anchor: datetime, month: int, which: str = "") -> tuple[datetime, datetime]:
    year = anchor.year if anchor.month >= month else anchor.year - 1
    if which == "last" and year == anchor.year and month == anchor.month:
        year -= 1
    return _month_span(year, month)


def _ago(anchor: datetime, count: int, unit: str) -> tuple[datetime, datetime]:
    if unit == "day":
        day = _day(anchor) - timedelta(days=count)
        return day, day + timedelta(days=1)
    if unit == "week":
        middle = _day(anchor) - timedelta(weeks=count)
        return middle - timedelta(days=3), middle + timedelta(days=4)
    if unit == "month":
        year, month = _add_months(anchor.year, anchor.month, -count)
        return _month_span(year, month)
    then = anchor - timedelta(days=365.25 * count)
    return _day(then - timedelta(days=182)), _day(then + timedelta(days=183))


def _week(anchor: datetime, back: int) -> tuple[datetime, datetime]:
    monday = _day(anchor) - timedelta(days=anchor.weekday() + 7 * back)
    return monday, monday + timedelta(days=7)


def _weekend(anchor: datetime, back: int) -> tuple[datetime, datetime]:
    """The latest weekend begun; ``back``: the one before it when it is now."""
    saturday = _day(anchor) - timedelta(days=(anchor.weekday() - 5) % 7)
    if back and anchor.weekday() >= 5:
        saturday -= timedelta(days=7)
    return saturday, saturday + timedelta(days=2)


def _weekday(anchor: datetime, weekday: int) -> tuple[datetime, datetime]:
    back = (anchor.weekday() - weekday) % 7 or 7
    day = _day(anchor) - timedelta(days=back)
    return day, day + timedelta(days=1)


def _valid_day(year: int, month: int, day: int) -> datetime | None:
    try:
        return _utc(year, month, day)
    except ValueError:
        return None


_EN: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "iso-day"),
    (re.compile(r"\b(\d{4})-(\d{1,2})\b"), "iso-month"),
    (
        re.compile(
            rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?\s*(\d{{4}})?", re.I
        ),
        "day-month",
    ),
    (
        re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?", re.I),
        "month-day",
    ),
    (re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b", re.I), "month-year"),
    (
        re.compile(r"\b(spring|summer|fall|autumn|winter)\s+(?:of\s+)?((?:19|20)\d{2})\b", re.I),
        "season-year",
    ),
    (re.compile(r"\bthe\s+day\s+before\s+yesterday\b", re.I), "day-2"),
    (re.compile(r"\b(?:yesterday|last\s+night)\b", re.I), "day-1"),
    (re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.I), "day-0"),
    (
        re.compile(
            r"\b(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
            r"a\s+couple\s+of|a\s+few|few|several)\s+(day|week|month|year)s?\s+ago\b",
            re.I,
        ),
        "ago",
    ),
    (re.compile(r"\b(last|past|this)\s+(week|month|year|weekend)\b", re.I), "this-last"),
    (re.compile(r"\b(last|this|past)\s+(spring|summer|fall|autumn|winter)\b", re.I), "season"),
    (re.compile(r"\b()(spring|summer|autumn|winter)\b", re.I), "season"),
    (re.compile(rf"\b(last|this)\s+({_MONTH})\b", re.I), "last-month-name"),
    (
        re.compile(rf"\b(?:in|during|since|of|early|late|mid|by|until)\s+({_MONTH})\b", re.I),
        "in-month",
    ),
    (re.compile(r"\b(?:last|on|this\s+past)\s+(" + "|".join(_WEEKDAYS) + r")\b", re.I), "weekday"),
    (re.compile(r"\b(?:in|during|since|of|from|by)\s+((?:19|20)\d{2})\b", re.I), "year"),
]

_ZH_NUMBER = r"[\d一二两三四五六七八九十几]+"
_ZH: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]"), "iso-day"),
    (re.compile(r"(\d{4})年(\d{1,2})月"), "iso-month"),
    (re.compile(r"(?<!\d)(\d{4})年(?!前)"), "zh-year"),
    (re.compile(r"大前天"), "day-3"),
    (re.compile(r"前天"), "day-2"),
    (re.compile(r"昨天|昨晚|昨日"), "day-1"),
    (re.compile(r"今天|今晚|今早|今日"), "day-0"),
    (re.compile(rf"({_ZH_NUMBER})\s*(?:个)?(天|日|周|星期|礼拜|月|年)(?:以)?前"), "zh-ago"),
    (re.compile(r"(上|这|本)(?:个)?(周|星期|礼拜|月)(?![一二三四五六日天])"), "zh-this-last"),
    (re.compile(r"(上上|上)(?:个)?(周|星期|礼拜)([一二三四五六日天])"), "zh-weekday"),
    (re.compile(r"(去年|今年|前年)?([春夏秋冬])(?:天|季)"), "zh-season"),
    (re.compile(r"(去年|今年|前年)"), "zh-year-word"),
    (
        re.compile(
            rf"(?<![个\d])({_ZH_NUMBER})月(?:份)?(?:(\d{{1,2}}|[一二三四五六七八九十]+)[日号])?"
        ),
        "zh-month",
    ),
]


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        high = _ZH_DIGITS.get(tens, 1) if tens else 1
        low = _ZH_DIGITS.get(units, 0) if units else 0
        return high * 10 + low
    if len(text) == 1 and text in _ZH_DIGITS:
        return _ZH_DIGITS[text]
    return None


def _en_span(kind: str, m: re.Match[str], anchor: datetime) -> tuple[datetime, datetime] | None:
    groups = m.groups()
    if kind == "iso-day":
        day = _valid_day(int(groups[0]), int(groups[1]), int(groups[2]))
        return (day, day + timedelta(days=1)) if day else None
    if kind == "iso-month":
        month = int(groups[1])
        return _month_span(int(groups[0]), month) if 1 <= month <= 12 else None
    if kind in ("day-month", "month-day"):
        number, name, year = (groups[0], groups[1], groups[2])
        if kind == "month-day":
            name, number = groups[0], groups[1]
        month = _MONTHS[name.casefold()]
        if year is None:
            guess = _valid_day(anchor.year, month, int(number))
            if guess is not None and guess > anchor:
                guess = _valid_day(anchor.year - 1, month, int(number))
            day = guess
        else:
            day = _valid_day(int(year), month, int(number))
        return (day, day + timedelta(days=1)) if day else None
    if kind == "month-year":
        return _month_span(int(groups[1]), _MONTHS[groups[0].casefold()])
    if kind.startswith("day-"):
        day = _day(anchor) - timedelta(days=int(kind[4:]))
        return day, day + timedelta(days=1)
    if kind == "ago":
        word = " ".join(groups[0].casefold().split())
        count = int(word) if word.isdigit() else _NUMBERS[word]
        return _ago(anchor, count, groups[1].casefold())
    if kind == "this-last":
        which, unit = groups[0].casefold(), groups[1].casefold()
        back = 0 if which == "this" else 1
        if unit == "week":
            return _week(anchor, back)
        if unit == "weekend":
            return _weekend(anchor, back)
        if unit == "month":
            year, month = _add_months(anchor.year, anchor.month, -back)
            return _month_span(year, month)
        return _utc(anchor.year - back), _utc(anchor.year - back + 1)
    if kind == "season-year":
        first, year = _SEASONS[groups[0].casefold()], int(groups[1])
        return _month_span(year - 1 if first == 12 else year, first, 3)
    if kind == "season":
        which = (groups[0] or "").casefold().replace("past", "last")
        return _season(anchor, _SEASONS[groups[1].casefold()], which)
    if kind == "last-month-name":
        return _recent_month(anchor, _MONTHS[groups[1].casefold()], groups[0].casefold())
    if kind == "in-month":
        if groups[0] in ("may", "mar", "march"):
            return None  # in lower case these are more often verbs than months
        return _recent_month(anchor, _MONTHS[groups[0].casefold()])  # yearly: see _YEARLY
    if kind == "weekday":
        return _weekday(anchor, _WEEKDAYS.index(groups[0].casefold()))
    if kind == "year":
        return _utc(int(groups[0])), _utc(int(groups[0]) + 1)
    return None


def _zh_span(kind: str, m: re.Match[str], anchor: datetime) -> tuple[datetime, datetime] | None:
    groups = m.groups()
    if kind in ("iso-day", "iso-month") or kind.startswith("day-"):
        return _en_span(kind, m, anchor)
    if kind == "zh-year":
        return _utc(int(groups[0])), _utc(int(groups[0]) + 1)
    if kind == "zh-ago":
        count = _zh_number(groups[0])
        return None if count is None else _ago(anchor, count, _ZH_UNITS[groups[1]])
    if kind == "zh-this-last":
        back = 1 if groups[0] == "上" else 0
        if groups[1] == "月":
            year, month = _add_months(anchor.year, anchor.month, -back)
            return _month_span(year, month)
        return _week(anchor, back)
    if kind == "zh-weekday":
        back = 2 if groups[0] == "上上" else 1
        weekday = "一二三四五六日".find(groups[2]) if groups[2] != "天" else 6
        monday = _week(anchor, back)[0]
        day = monday + timedelta(days=weekday)
        return day, day + timedelta(days=1)
    if kind == "zh-season":
        first = _ZH_SEASONS[groups[1]]
        if groups[0] is None:
            return _season(anchor, first, "")
        year = anchor.year - {"去年": 1, "今年": 0, "前年": 2}[groups[0]]
        return _month_span(year, first, 3)
    if kind == "zh-year-word":
        year = anchor.year - {"去年": 1, "今年": 0, "前年": 2}[groups[0]]
        return _utc(year), _utc(year + 1)
    if kind == "zh-month":
        which = None if "几" in groups[0] else _zh_number(groups[0])  # 几月: which month?
        if which is None or not 1 <= which <= 12:
            return None
        if groups[1]:
            date = _zh_number(groups[1]) or 0
            found = _valid_day(anchor.year, which, date)
            if found is not None and found > anchor:
                found = _valid_day(anchor.year - 1, which, date)
            return (found, found + timedelta(days=1)) if found else None
        return _recent_month(anchor, which)  # yearly: see _YEARLY
    return None


_FUTURE = re.compile(r"\b(?:next|coming|upcoming)\s+(?:the\s+)?$", re.I)


def time_span(query: str, anchor: datetime | Callable[[], datetime]) -> TimeSpan | None:
    """The first span of time ``query`` names, counted back from ``anchor``, or ``None``.

    ``anchor`` may be a function: it is called once, when a phrase is found.

    Examples:
        >>> from datetime import datetime, timezone
        >>> anchor = datetime(2023, 10, 20, tzinfo=timezone.utc)  # a Friday
        >>> def span(q):
        ...     s = time_span(q, anchor)
        ...     return s and (s.start.date().isoformat(), s.end.date().isoformat())
        >>> span("What did I say yesterday?"), span("in March"), span("two weeks ago")
        (('2023-10-19', '2023-10-20'), ('2023-03-01', '2023-04-01'), ('2023-10-03', '2023-10-10'))
        >>> span("on 2023-05-08"), span("三月"), span("Is it blue?")
        (('2023-05-08', '2023-05-09'), ('2023-03-01', '2023-04-01'), None)
        >>> span("上个月"), span("去年"), span("3天前")
        (('2023-09-01', '2023-10-01'), ('2022-01-01', '2023-01-01'), ('2023-10-17', '2023-10-18'))
    """
    known: list[datetime] = []

    def moment() -> datetime:
        if not known:
            when = anchor() if callable(anchor) else anchor
            when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
            known.append(when.astimezone(timezone.utc))
        return known[0]

    tables = [(_ZH, _zh_span), (_EN, _en_span)] if _CJK.search(query) else [(_EN, _en_span)]
    for table, reader in tables:  # a Chinese question may name its time in English
        for pattern, kind in table:
            for match in pattern.finditer(query):
                if _FUTURE.search(query[: match.start()]):
                    continue  # "next summer": nothing was said then yet
                bounds = reader(kind, match, moment())
                if bounds is not None:
                    month_only = kind in _YEARLY and bounds[1] - bounds[0] > timedelta(days=1)
                    return _bound(query, match, bounds, month_only)
    return None


_TIMEISH = re.compile(
    r"\d|ago|yesterday|today|tonight|last|this|past|spring|summer|fall|autumn|winter|"
    rf"\b(?:{_MONTH})\b|{'|'.join(_WEEKDAYS)}|[天周月年春夏秋冬昨前星期礼拜]",
    re.I,
)


def may_name_time(query: str) -> bool:
    """Whether ``query`` holds a word or digit that might name a time (a cheap first test).

    Examples:
        >>> may_name_time("What did Ana say?"), may_name_time("What did Ana say in May?")
        (False, True)
    """
    return _TIMEISH.search(query) is not None
