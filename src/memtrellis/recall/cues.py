"""Speaker and time cues of a question, and the boost they give to matching memories.

A question about what a named person said or did ("What did Caroline say about the
race?", "小王说了什么？") names a speaker its sources carry; a question about a time
("last summer", "in March", "two weeks ago", "2023-05-08", "去年夏天", "三月") names a
span its sources' timestamps can fall in. Recall reads both from the query (no LLM) and
lends the matching candidates a share of their own relevance:

* speaker: a query word within a small edit distance of a speaker's name (or of one
  part of it: "Caroline" for "Caroline Smith"; rapidfuzz ratio >= 85, so "Carolin" and
  "Carloine" still match), a capitalised prefix of it ("Mel" for "Melanie"), or for
  Chinese and Japanese names the name written in the query. "What did I say ..." and
  "what did you suggest ..." name the user and the assistant when no name is given.
  A memory whose sources are messages of that speaker gains `SPEAKER_BOOST` of its
  relevance. When every speaker of the candidates is named, none is preferred.
* time: the span the phrase names (`memtrellis.recall.timespans`), relative to the
  newest stored message (so an old chat log replayed today reads "last summer" as its
  own last summer), or to recall's ``now`` when that is earlier or nothing is dated. A
  memory with a source timestamp in the span, or a little after it (a quarter of its
  length, at least two days: people tell of a trip when they are back), gains
  `TIME_BOOST`. "Next summer" names no span: nothing was said then yet.

Only candidates the searches (or the graph) found are boosted: a cue reorders what
matches the question, it never brings in what does not.

Examples:
    >>> from datetime import datetime, timezone
    >>> anchor = datetime(2023, 10, 20, 12, 0, tzinfo=timezone.utc)
    >>> span = time_span("What did Caroline do last summer?", anchor)
    >>> span.start.date().isoformat(), span.end.date().isoformat(), span.phrase
    ('2023-06-01', '2023-09-01', 'last summer')
    >>> named_speakers("what did carolin say about the race?", ["Caroline", "Melanie"])
    ('Caroline',)
    >>> time_span("小王去年夏天去了哪里？", anchor).start.date().isoformat()
    '2022-06-01'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from rapidfuzz import fuzz

from memtrellis.recall.timespans import TimeSpan, may_name_time, time_span
from memtrellis.types import MemoryItem

__all__ = [
    "SPEAKER_BOOST",
    "TIME_BOOST",
    "Cues",
    "TimeSpan",
    "apply_cues",
    "asked_roles",
    "named_speakers",
    "parse_cues",
    "time_span",
]

#: Share of its relevance a memory said by a speaker the question names gains.
SPEAKER_BOOST = 0.15
#: Share of its relevance a memory dated in the span the question names gains.
TIME_BOOST = 0.25
#: Fuzzy match of a query word and a name (rapidfuzz ratio, 0..100).
NAME_RATIO = 85.0
#: Messages looked at, newest stored first, for the time a relative phrase counts from.
ANCHOR_SCAN = 200

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# Words that read as names only when capitalised ("will", "may", "bill").
_COMMON_WORDS = (
    "a an and are at be bill can did do does for from had has have he her him his how i in "
    "is it its may me mark my of on or our she so that the their them they this to was we "
    "were what when where which who why will with would you your"
)
_COMMON = frozenset(_COMMON_WORDS.split())
_I = re.compile(r"\b(?:did|do|have|had)\s+i\b|\bi\s+(?:said|told|mentioned|wrote|asked)\b", re.I)
_YOU = re.compile(
    r"\b(?:did|do|have|had)\s+you\b|\byou\s+(?:said|told|suggested|recommended|mentioned)\b",
    re.I,
)
_ZH_I = re.compile(r"我(?:说|讲|提|问|告诉)")
_ZH_YOU = re.compile(r"你(?:说|讲|提|建议|推荐|告诉)")


@dataclass(frozen=True)
class Cues:
    """What a question names: speakers, roles (``user``/``assistant``) and a time span.

    Examples:
        >>> Cues().empty, Cues(speakers=("Ana",)).empty
        (True, False)
    """

    speakers: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    time: TimeSpan | None = None

    @property
    def empty(self) -> bool:
        """Nothing to boost by."""
        return not self.speakers and not self.roles and self.time is None

    def boost(self, item: MemoryItem) -> tuple[float, list[str]]:
        """The share of relevance ``item`` gains, and why (``speaker Ana``, ``time ...``).

        Examples:
            >>> from memtrellis.types import Scope, SourceRef
            >>> said = SourceRef(kind="chat", message_id="m1", role="user", speaker="Ana")
            >>> item = MemoryItem(text="I ran", sources=[said], scope=Scope(entity_id="a"))
            >>> Cues(speakers=("Ana",)).boost(item)
            (0.15, ['speaker Ana'])
        """
        gain = 0.0
        why: list[str] = []
        chats = [s for s in item.sources if s.kind.value == "chat"]
        wanted = {name.casefold() for name in self.speakers}
        speaker = next(
            (s.speaker for s in chats if s.speaker and s.speaker.casefold() in wanted), None
        )
        if speaker is not None:
            gain += SPEAKER_BOOST
            why.append(f"speaker {speaker}")
        elif self.roles and any(not s.speaker and s.role in self.roles for s in chats):
            role = next(s.role for s in chats if not s.speaker and s.role in self.roles)
            gain += SPEAKER_BOOST
            why.append(f"speaker {role}")
        if self.time is not None:
            times = [s.timestamp for s in item.sources if s.timestamp is not None]
            if not times and item.valid_from is not None:
                times = [item.valid_from]
            if any(self.time.holds(when) for when in times):
                gain += TIME_BOOST
                why.append(self.time.label())
        return gain, why


# -- speakers ------------------------------------------------------------------------------


def named_speakers(query: str, speakers: Iterable[str]) -> tuple[str, ...]:
    """The ``speakers`` the query names, fuzzily (see the module notes), in given order.

    Examples:
        >>> named_speakers("What did Mel paint?", ["Caroline", "Melanie"])
        ('Melanie',)
        >>> named_speakers("小王说了什么？", ["小王", "小李"])
        ('小王',)
        >>> named_speakers("What will they do?", ["Will", "Ana"])
        ()
    """
    words = _WORD.findall(query)
    folded = query.casefold()
    out: list[str] = []
    for speaker in dict.fromkeys(speakers):
        name = speaker.strip()
        if name and _names(name, words, folded):
            out.append(speaker)
    return tuple(out)


def _names(name: str, words: Sequence[str], folded: str) -> bool:
    if _CJK.search(name):
        return name.casefold() in folded
    parts = [p.casefold() for p in _WORD.findall(name) if len(p) >= 2]
    for word in words:
        low = word.casefold()
        capital = word[:1].isupper()
        if low in _COMMON and not capital:
            continue
        for part in parts:
            if low == part:
                return True
            if len(low) >= 4 and len(part) >= 4 and fuzz.ratio(low, part) >= NAME_RATIO:
                return True
            if capital and len(low) >= 3 and part.startswith(low):
                return True
    return False


def asked_roles(query: str) -> tuple[str, ...]:
    """``user`` for "what did I say ...", ``assistant`` for "what did you suggest ...".

    Examples:
        >>> asked_roles("What did you recommend for dinner?"), asked_roles("我说过我住在哪里？")
        (('assistant',), ('user',))
    """
    roles: list[str] = []
    if _I.search(query) or _ZH_I.search(query):
        roles.append("user")
    if _YOU.search(query) or _ZH_YOU.search(query):
        roles.append("assistant")
    return tuple(roles)


# -- applying them -------------------------------------------------------------------------


class Boostable(Protocol):
    """A candidate's score as recall keeps it: what cues lend, and why."""

    boost: float
    boosts: list[str]


def _newest(items: Iterable[MemoryItem | None]) -> datetime | None:
    newest: datetime | None = None
    for item in items:
        if item is None:
            continue
        for source in item.sources:
            if source.timestamp is not None and (newest is None or source.timestamp > newest):
                newest = source.timestamp
    return newest


def parse_cues(
    query: str,
    speakers: Iterable[str],
    anchor: Callable[[], datetime],
    *,
    unnamed: bool = False,
) -> Cues:
    """The cues of ``query``: the known ``speakers`` it names (none when it names all of
    them and no message is without a speaker, ``unnamed``), the roles it asks about,
    and its time span counted from ``anchor()`` (called only when the query names a
    time).

    Examples:
        >>> from datetime import datetime, timezone
        >>> at = lambda: datetime(2023, 10, 20, tzinfo=timezone.utc)
        >>> cues = parse_cues("What did Ana say last week?", ["Ana", "Bo"], at)
        >>> cues.speakers, cues.time.label()
        (('Ana',), 'time last week (2023-10-09..2023-10-15)')
        >>> parse_cues("Did Ana meet Bo?", ["Ana", "Bo"], at).empty
        True
    """
    known = list(dict.fromkeys(s for s in speakers if s))
    named = named_speakers(query, known)
    if named and len(named) == len(known) and not unnamed:
        named = ()  # every speaker named: none is preferred
    roles = () if named else asked_roles(query)
    span = time_span(query, anchor) if may_name_time(query) else None
    return Cues(speakers=named, roles=roles, time=span)


def apply_cues(
    query: str,
    scores: Mapping[str, Boostable],
    item_of: Callable[[str], MemoryItem | None],
    recent: Callable[[], Iterable[str]],
    now: datetime,
) -> Cues:
    """Boost the candidates in ``scores`` that the cues of ``query`` match, in place.

    ``item_of`` finds a memory by id; ``recent`` gives the newest stored memory ids
    (the time a relative phrase counts from is the newest of their messages, or of the
    candidates', but never after ``now``). Returns the cues found.
    """
    speakers: dict[str, None] = {}
    unnamed = False  # a chat message without a speaker (an assistant's reply) is a voice too
    for memory_id in scores:
        item = item_of(memory_id)
        if item is not None:
            for source in item.sources:
                if source.speaker:
                    speakers.setdefault(source.speaker, None)
                elif source.kind.value == "chat":
                    unnamed = True

    def anchor() -> datetime:
        ids = [*recent(), *scores]
        newest = _newest(item_of(memory_id) for memory_id in ids)
        return now if newest is None or newest > now else newest

    cues = parse_cues(query, speakers, anchor, unnamed=unnamed)
    if cues.empty:
        return cues
    for memory_id, entry in scores.items():
        item = item_of(memory_id)
        if item is None:
            continue
        gain, why = cues.boost(item)
        if gain:
            entry.boost += gain
            entry.boosts.extend(why)
    return cues
