"""What two statements share that could make them one slot: when the rules may be sure.

The rules (`memtrellis.lifecycle.relate`) may be *sure* that a new statement changes
nothing of an old one only when the two cannot be about one slot. They can be whenever
they share anything a slot is made of:

* a content word (English word stems; Chinese characters other than function
  characters and numerals; the ASCII words of a Chinese text, ``deadline``, ``App``);
* a name (the memories' entities, ``PAY-311``, ``Civic``);
* the speaker or the speaker's group ("I", "my", "we", "our"; ``我``, ``我们``);
* a single-valued attribute class both name (``住`` / ``搬``: where one lives);
* a value of the same kind (two dates, two amounts): one may replace the other.

Anything else can be a change of the same thing said in other words, and is left to the
relation judge when there is one. Sharing is deliberately loose: its only cost is a
question to the judge; a wrong "sure" hides a change from it.

Examples:
    >>> from memtrellis.lifecycle.claims import read_claim
    >>> def shared(old, new):
    ...     return shared_topic(new, old, read_claim(new), read_claim(old))
    >>> shared("Our team is 12 people.", "We're at fifteen now after the three new hires.")
    'the speaker'
    >>> shared("我住在朝阳区。", "上个月搬到海淀了。")
    'attribute residence'
    >>> shared("I love jazz.", "Lunch was great.") is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memtrellis.lifecycle.claims import SINGLE_VALUED, Claim, _stem
from memtrellis.lifecycle.lexicon import _STOP_EN, _ZH_FUNCTION
from memtrellis.lifecycle.values import read_values
from memtrellis.store.graph import normalize_subject

__all__ = ["content_units", "shared_topic"]

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ZH_NUMERALS = frozenset("零〇一二两三四五六七八九十百千万亿半几")
_ASCII_WORD = re.compile(r"[a-z][a-z0-9'’_.@+-]*[a-z0-9]|[a-z]", re.IGNORECASE)
# The speaker and the speaker's group: "my rent" and "rent" may be one slot, "our team"
# and "we" one group.
_SPEAKER_EN = frozenset(
    "i i'm i've i'd i'll me my mine myself we we're we've we'd we'll us our ours".split()  # noqa: SIM905
)
_SPEAKER_ZH = re.compile(r"我|咱")


def _masked(text: str) -> str:
    """``text`` with its typed values blanked (their words are no topic of their own)."""
    chars = list(text)
    for value in read_values(text):
        for n in range(value.start, value.end):
            chars[n] = " "
    return "".join(chars)


def content_units(text: str) -> frozenset[str]:
    """The content units of a statement: English word stems, Chinese characters (not
    function characters or numerals) and the ASCII words beside them; ``@speaker``
    for the speaker or the speaker's group.

    Examples:
        >>> sorted(content_units("My rent is €1,150 a month."))
        ['@speaker', 'month', 'rent']
        >>> sorted(content_units("deadline 推迟到下周三"))
        ['deadlin', '推', '迟']
    """
    masked = _masked(text).casefold().replace("\u2019", "'")
    units: set[str] = set()
    for word in _ASCII_WORD.findall(masked):
        word = word.strip("'.")
        if word in _SPEAKER_EN:
            units.add("@speaker")
        elif word and word not in _STOP_EN and len(word) > 1:
            units.add(_stem(word))
    if _SPEAKER_ZH.search(masked):
        units.add("@speaker")
    plain = _ZH_FUNCTION.sub(" ", _SPEAKER_ZH.sub(" ", masked))
    units.update(c for c in _CJK_CHAR.findall(plain) if c not in _ZH_NUMERALS)
    return frozenset(units)


def _names(entities: Iterable[str]) -> set[str]:
    return {normalize_subject(e) for e in entities if e.strip()}


def shared_topic(
    new: str,
    old: str,
    a: Claim,
    b: Claim,
    new_entities: Iterable[str] = (),
    old_entities: Iterable[str] = (),
) -> str | None:
    """What ``new`` (claim ``a``) and ``old`` (claim ``b``) share that could make them
    one slot, in a few words, or ``None`` when they share nothing of the kind."""
    if _names(new_entities) & _names(old_entities):
        return "a name"
    units = content_units(new) & content_units(old)
    if units - {"@speaker"}:
        return "the words " + " ".join(sorted(units - {"@speaker"})[:3])
    if units:
        return "the speaker"
    classes = a.classes & b.classes & SINGLE_VALUED
    if classes:
        return "attribute " + sorted(classes)[0]
    if a.values & b.values:
        return "a name"
    kinds = {v.kind for v in read_values(new)} & {v.kind for v in read_values(old)}
    if kinds:
        return "a value of kind " + sorted(kinds)[0]
    return None
