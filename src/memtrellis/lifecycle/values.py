"""Typed values in a short statement, English and Chinese: what the relation rules mask.

A `Value` is a span of a statement with its **kind** (``date``, ``time``, ``money``,
``percent``, ``quantity``, ``label``, ``number``, ``phone``, ``email``, ``handle``), the
**unit** that says what it counts or names (``engineer`` of "12 engineers", ``room`` of
"room 204", the currency of an amount, ``""`` when none), its normalised text, and the
word that leads to it ("to", "until", ``到``): "postponed **to** 3 June" gives a new
value, "delayed **by** a week" an amount of change.

Two statements about one slot give values of one kind and unit ("The standup is at 9:15"
/ "Standup moves to 9:45"); the unit keeps "12 engineers" from meeting "3 offices", and a
value inside the subject ("Release 4.2 ships ...") names which thing, not its value.

Examples:
    >>> [(v.kind, v.unit, v.text) for v in read_values("Standup moves to 9:45 next week.")]
    [('time', '', '9:45'), ('date', '', 'next week')]
    >>> [(v.kind, v.unit, v.text, v.lead) for v in read_values("The budget was cut to $2,000.")]
    [('money', 'dollar', '2000', 'to')]
    >>> [(v.kind, v.unit, v.text) for v in read_values("我的体重现在是65公斤。")]
    [('quantity', '公斤', '65')]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["CHANGE_TARGET", "Value", "by_kind", "changed_values", "read_values", "stem_unit"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Value:
    """One typed value of a statement.

    Attributes:
        kind: ``date``, ``time``, ``money``, ``percent``, ``quantity`` (a number and what
            it counts), ``label`` (a name and its number: "room 204", "iPhone 12"),
            ``number``, ``phone``, ``email`` or ``handle`` (an id such as ``abc123``).
        unit: What it counts or names (a word stem), or its currency; ``""`` when none.
        text: The value, normalised (lower case, no thousands separators).
        start: Where it starts in the statement.
        end: Where it ends.
        lead: The word just before it, lower case ("to", "until", "by", ``到``).

    Examples:
        >>> read_values("Omar weighs 82 kg.")[0].unit
        'kg'
    """

    kind: str
    unit: str
    text: str
    start: int
    end: int
    lead: str = ""


#: Words before a value that give it as the new value of a change ("moved **to** 9:45",
#: "put off **until** the 27th", ``推迟到``, ``调整为``).
CHANGE_TARGET = frozenset({"to", "until", "till", "into", "到", "至", "为", "成", "到了"})

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:mon|tues|tue|wednes|wed|thurs|thu|fri|satur|sat|sun)(?:day)?s?"
_ORDINAL_WORDS = "first second third fourth fifth sixth seventh eighth ninth tenth last"
_ORDINAL = rf"(?:{'|'.join(_ORDINAL_WORDS.split())}|\d{{1,2}}(?:st|nd|rd|th))"
_NUMBER_WORDS = {
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
    "fifteen": "15",
    "twenty": "20",
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "hundred": "100",
    "dozen": "12",
}
_NUM = r"\d[\d,]*(?:\.\d+)?"
_CURRENCY_SIGN = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yuan"}
_CURRENCY_WORD = (
    r"dollars?|euros?|pounds?|usd|eur|gbp|yuan|rmb|yen|bucks|cents?|pence|francs?|"
    r"rupees?|kronor|krona"
)
_MAGNITUDE = r"(?:\s?(?:k|m|bn|million|billion|thousand)\b)?"

# Starts only where a run of address characters starts: tried at every character of a
# long run without "@", the search would take quadratic time.
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_NUMERIC_DATE = re.compile(r"(?<!\d)(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4})(?!\d)")

# English patterns, most specific first; a later one never takes an earlier one's span.
_EN: list[tuple[str, re.Pattern[str]]] = [
    ("email", _EMAIL),
    ("date", _NUMERIC_DATE),
    ("phone", re.compile(r"(?<![\w.,])\+?\d[\d ()-]{5,}\d(?![\w.,]\d)")),
    (
        "time",
        re.compile(
            r"\b\d{1,2}(?:[:.]\d{2})?\s?(?:a\.?m\.?|p\.?m\.?)(?![a-z])|\b\d{1,2}:\d{2}\b|"
            r"\b(?:noon|midnight|midday)\b|\b\d{1,2} o'clock\b"
        ),
    ),
    (
        "money",
        re.compile(rf"[$€£¥]\s?{_NUM}{_MAGNITUDE}|\b{_NUM}{_MAGNITUDE}\s?(?:{_CURRENCY_WORD})\b"),
    ),
    ("percent", re.compile(rf"\b{_NUM}\s?(?:%|percent\b|per cent\b)")),
    (
        "date",
        re.compile(
            rf"\b(?:the\s+)?{_ORDINAL}\s+{_WEEKDAY}(?:\s+(?:of|in)\s+(?:the|every|each)\s+month)?\b|"
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}\b(?:,?\s+\d{{4}})?|"
            rf"\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?|"
            rf"\b(?:(?:next|this|last|coming|every)\s+)?{_WEEKDAY}"
            r"(?:\s+(?:morning|afternoon|evening|night))?\b|"
            r"\b(?:next|this|last|coming)\s+(?:week|month|year|weekend|spring|summer|autumn|"
            r"fall|winter|quarter)\b|\b(?:tomorrow|tonight|today|yesterday)\b|"
            r"\bthe\s+\d{1,2}(?:st|nd|rd|th)\b|"
            r"\b(?:the\s+)?(?:end|start|beginning|middle)\s+of\s+(?:the\s+)?(?:month|year|week)\b|"
            rf"\b(?:early|mid|late)[\s-]{_MONTHS}\b|"
            rf"\b{_MONTHS}(?:\s+\d{{4}})?\b|"
            r"\b(?:in|since|by|until|till|from|of|before|after|during)\s+(?:19|20)\d{2}\b"
        ),
    ),
    (
        "label",
        re.compile(rf"\b{_ORDINAL}\s+(floor|gate|platform|round|vote|place|row|grade|year|term)\b"),
    ),
]
_NUMBER_EN = re.compile(
    rf"\b(?:{_NUM}(?:k|m|bn)?|{'|'.join(_NUMBER_WORDS)})\b(?:[- ]years?[- ]old\b)?", re.IGNORECASE
)
# Nouns that a number names one of ("room 204", "building 4"), beside capitalised names
# ("Release 4.2", "iPhone 12") and dotted versions.
_LABEL_NOUNS = frozenset(
    """room building floor gate platform version release line bus route flat apartment unit
    suite seat row table level grade chapter step lane road street block ward bay terminal
    channel model series season episode""".split()  # noqa: SIM905 - reads as text
)
_WORD_AFTER = re.compile(r"\s*(?:-\s*)?([a-z][a-z-]*)")
_WORD_BEFORE = re.compile(r"([a-z][a-z0-9-]*)\s*$")
_LEAD_EN = re.compile(r"([a-z]+|[$€£¥])\W*$")
# Words after a number that are not what it counts.
_NOT_UNITS = frozenset(
    """a an the of to in on at by for from with and or but is are was were be per than
    more less times instead now this that these those it its we i you he she they our my
    his her their every each last next am pm""".split()  # noqa: SIM905 - reads as text
)
# Words before a number that make a label of it ("room 204"), unless they are verbs or
# function words ("is 37", "serves 4" read as a plain number).
_NOT_LABELS = frozenset(
    """is are was were be been am 's of to in on at by for from with and or the a an than
    about around nearly almost over under just only now still per into until till up down
    by has have had cost costs weighs weigh serves serve takes take makes holds hold seats
    gets got turned turns expects reached reach raised cut dropped fell rose went""".split()  # noqa: SIM905
)


@functools.lru_cache(maxsize=4096)
def stem_unit(word: str) -> str:
    """A unit word as compared: lower case, a plural's ``s`` dropped.

    Examples:
        >>> stem_unit("Engineers"), stem_unit("minutes"), stem_unit("gb")
        ('engineer', 'minute', 'gb')
    """
    word = word.casefold().strip("-")
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _norm(text: str) -> str:
    text = " ".join(text.casefold().split())
    for sign in _CURRENCY_SIGN:
        text = text.replace(sign, "")
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).strip()


def _amount(text: str) -> str:
    number = re.search(_NUM, text)
    if number is None:
        return _norm(text)
    value = number.group(0).replace(",", "")
    magnitude = re.search(r"(k|m|bn|million|billion|thousand)\b", text[number.end() :])
    return value + (magnitude.group(1)[0] if magnitude else "")


def read_values(text: str) -> tuple[Value, ...]:
    """The typed values of ``text``, in order (Chinese when it is mostly CJK)."""
    return _read(text)


@functools.lru_cache(maxsize=8192)
def _read(text: str) -> tuple[Value, ...]:
    cjk = len(_CJK.findall(text))
    if cjk and cjk >= len(re.findall(r"[A-Za-z]", text)) / 3:
        return _read_chinese(text)
    return _read_english(text)


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _lead(lowered: str, start: int) -> str:
    found = _LEAD_EN.search(lowered[max(0, start - 24) : start])
    return found.group(1) if found else ""


def _read_english(text: str) -> tuple[Value, ...]:
    lowered = text.lower() if len(text.lower()) == len(text) else text
    found: list[Value] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _EN:
        for match in pattern.finditer(lowered):
            start, end = match.span()
            said = match.group(0).strip()
            if not said or not _free(taken, start, end):
                continue
            if kind == "phone" and len(re.sub(r"\D", "", said)) < 7:
                continue
            if kind == "date" and said == "may" and text[start] != "M":
                continue  # "may" the verb
            if kind == "date" and said.startswith(("in ", "since ", "by ", "until ", "till ")):
                start = end - 4  # the year alone; the word before is its lead
                said = lowered[start:end]
            unit = ""
            value = _norm(said)
            if kind == "money":
                sign = next((c for c in said if c in _CURRENCY_SIGN), "")
                named_currency = re.search(_CURRENCY_WORD, said)
                unit = (
                    _CURRENCY_SIGN[sign]
                    if sign
                    else stem_unit(named_currency.group(0))
                    if named_currency
                    else ""
                )
                value = _amount(said)
            elif kind == "label":
                unit = stem_unit(match.group(1))
                value = _norm(said.split()[0])
            elif kind == "percent":
                value = _amount(said)
            elif kind == "time":
                value = re.sub(r"[\s.]", "", value)
            taken.append((start, end))
            found.append(Value(kind, unit, value, start, end, _lead(lowered, start)))
    for match in _NUMBER_EN.finditer(lowered):
        start, end = match.span()
        if not _free(taken, start, end):
            continue
        said = match.group(0)
        number = _NUMBER_WORDS.get(said, _amount(said))
        if "old" in said:
            found.append(Value("number", "", number, start, end, _lead(lowered, start)))
            taken.append((start, end))
            continue
        after = _WORD_AFTER.match(lowered, end)
        before = _WORD_BEFORE.search(lowered[max(0, start - 24) : start])
        counted = after is not None and after.group(1) not in _NOT_UNITS
        named = before is not None and not said.isalpha() and before.group(1) not in _NOT_LABELS
        if named and before is not None:
            word = before.group(1)
            at = start - (len(lowered[max(0, start - 24) : start]) - before.start())
            named = (
                word in _LABEL_NOUNS
                or text[at : at + 1].isupper()
                or any(c.isupper() for c in text[at : at + len(word)])
                or not counted
                or said.count(".") > 1
            )
        if named and before is not None:
            unit = stem_unit(before.group(1))  # "room 204", "Release 4.2", "iPhone 12"
            found.append(Value("label", unit, number, start, end, _lead(lowered, start)))
        elif counted and after is not None:
            unit = stem_unit(after.group(1))  # "12 engineers", "64 GB", "two kids"
            found.append(Value("quantity", unit, number, start, end, _lead(lowered, start)))
        elif said.isalpha():
            continue  # a number word alone ("the two of us"): not read
        else:
            lead = _lead(lowered, start)
            kind = "time" if lead == "at" and said.isdigit() and int(said) <= 24 else "number"
            found.append(Value(kind, "", number, start, end, lead))
        taken.append((start, end))
    return tuple(sorted(found, key=lambda v: v.start))


# -- Chinese ---------------------------------------------------------------------------

_ZH_DIGIT = r"(?:\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千]+)"
_ZH_CLASSIFIER = "个名位台只条本张辆家次间套件部块层所座支双对"
_ZH_MEASURES = (
    "平方米|平米|公斤|千克|斤|公里|千米|厘米|毫米|米|小时|分钟|个月|周|天|年|岁|度|升|人|"
    "GB|G|TB|T|MB|M|KB|K|kg|km|cm|ml|L"
)
_ZH: list[tuple[str, re.Pattern[str]]] = [
    ("email", _EMAIL),
    ("date", _NUMERIC_DATE),
    ("phone", re.compile(r"\d{3,4}-\d{3,4}-?\d{3,4}|\d{7,}")),
    ("label", re.compile(rf"{_ZH_DIGIT}(号[楼线房室厅院门馆站口床]|楼|层|路|号线|年级|班)")),
    (
        "date",
        re.compile(
            rf"(?:\d{{4}}年)?{_ZH_DIGIT}月(?:{_ZH_DIGIT}[日号])?|"
            rf"(?<!月){_ZH_DIGIT}[日号](?![子本])|"
            r"(?:下下|下|上|本|这|每|这个|下个|上个)?(?:周|星期|礼拜)[一二三四五六日天末]|"
            r"大后天|后天|明天|今天|昨天|前天|今晚|明晚|下个月|上个月|下周|上周|本周|明年|今年|去年|"
            r"年底|年初|年中|月底|月初|月中|\d{4}年"
        ),
    ),
    (
        "time",
        re.compile(
            rf"(?:上午|下午|晚上|早上|中午|凌晨|傍晚|每晚)?{_ZH_DIGIT}点(?:半|{_ZH_DIGIT}分)?|"
            r"\d{1,2}:\d{2}|上午|下午|晚上|早上"
        ),
    ),
    (
        "money",
        re.compile(rf"{_ZH_DIGIT}(?:万|千|亿)?(?:元|块钱|块|美元|欧元|英镑|人民币)"),
    ),
    (
        "percent",
        re.compile(
            r"\d+(?:\.\d+)?%|百分之[零一二三四五六七八九十百]+|[一二三四五六七八九]成|一半|半数"
        ),
    ),
    (
        "quantity",
        re.compile(
            rf"{_ZH_DIGIT}(?:万|千|亿)?(?:(?P<m>{_ZH_MEASURES})|"
            rf"(?P<c>[{_ZH_CLASSIFIER}])(?P<n>[\u4e00-\u9fff]?))"
        ),
    ),
    ("handle", re.compile(r"[A-Za-z][A-Za-z0-9_.-]*\d[A-Za-z0-9_.-]*")),
    (
        "number",
        re.compile(
            r"\d+(?:\.\d+)?(?:万|千|亿)?|[一二两三四五六七八九十][零〇一二两三四五六七八九十百千万亿]*"
        ),
    ),
]
_ZH_LEAD = re.compile(r"(到了|[到至为成在是])\s*$")
# Nouns of a classifier phrase that are not what it counts but what follows ("一台联想电脑"
# counts computers): a brand or a modifier; only the classifier is kept then.
_ZH_NOT_NOUN = re.compile(r"[的了在是]")


def _read_chinese(text: str) -> tuple[Value, ...]:
    found: list[Value] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _ZH:
        for match in pattern.finditer(text):
            start, end = match.span()
            if not match.group(0) or not _free(taken, start, end):
                continue
            said = match.group(0)
            unit = ""
            if kind == "quantity":
                if match.group("m"):
                    unit = match.group("m").casefold()
                    said = said[: len(said) - len(match.group("m"))]
                else:
                    noun = match.group("n") or ""
                    if _ZH_NOT_NOUN.search(noun):
                        noun = ""
                    unit = match.group("c") + noun
                    said = said[: len(said) - len(unit)]
                    if said == "一":
                        continue  # "一台...": the article "a"
            elif kind == "money":
                unit = "元"
            elif kind == "label":
                unit = match.group(1)
                said = said[: len(said) - len(unit)]
            elif kind == "number" and said == "一":
                continue
            lead = _ZH_LEAD.search(text[max(0, start - 3) : start])
            taken.append((start, end))
            found.append(
                Value(kind, unit, said.casefold(), start, end, lead.group(1) if lead else "")
            )
    return tuple(sorted(found, key=lambda v: v.start))


def by_kind(values: Iterable[Value]) -> dict[tuple[str, str], set[str]]:
    """The values' texts by kind and unit.

    Examples:
        >>> kinds = by_kind(read_values("From 9:15 to 9:45."))
        >>> {kind: sorted(texts) for kind, texts in kinds.items()}
        {('time', ''): ['9:15', '9:45']}
    """
    out: dict[tuple[str, str], set[str]] = {}
    for value in values:
        out.setdefault((value.kind, value.unit), set()).add(value.text)
    return out


def changed_values(va: list[Value], vb: list[Value]) -> tuple[list[Value], bool, bool] | None:
    """The new values (of ``va``) that replace old ones (of ``vb``) of the same kind and
    unit, whether the new statement adds no value of a kind the old one lacks (a
    qualifier: "on Saturdays") and whether it drops none; ``None`` when no value changed
    or two kinds changed at once.

    Examples:
        >>> new, old = read_values("Standup moves to 9:45."), read_values("Standup is at 9:15.")
        >>> values, no_qualifier, none_dropped = changed_values(list(new), list(old))
        >>> [v.text for v in values], no_qualifier, none_dropped
        (['9:45'], True, True)
    """
    new, old = by_kind(va), by_kind(vb)
    shared = set(new) & set(old)
    changed = {k for k in shared if new[k] != old[k] and new[k] - old[k]}
    if not changed:
        return None
    if len({k[0] for k in changed}) > 1 and not {k[0] for k in changed} <= {"date", "time"}:
        return None  # two slots changed at once: another thing
    only_new, only_old = set(new) - set(old), set(old) - set(new)
    return [v for v in va if (v.kind, v.unit) in changed], not only_new, not only_old
