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
  `TIME_BOOST` times the span's `specificity` among the candidates (a day of a year of
  chat sets its messages apart, "this year" none). "Next summer" names no span: nothing
  was said then yet; "by May" and "since May" open the span on one side
  (`memtrellis.recall.timespans`).

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

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
    "Voice",
    "apply_cues",
    "asked_roles",
    "named_speakers",
    "parse_cues",
    "specificity",
    "time_span",
    "voice_of",
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
    _wanted: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())

    def __post_init__(self) -> None:
        folded = frozenset(name.casefold() for name in self.speakers)
        object.__setattr__(self, "_wanted", folded)

    @property
    def empty(self) -> bool:
        """Nothing to boost by."""
        return not self.speakers and not self.roles and self.time is None

    def boost(self, item: MemoryItem, voice: Voice | None = None) -> tuple[float, list[str]]:
        """The share of relevance ``item`` gains, and why (``speaker Ana``, ``time ...``).

        ``voice``: the item's `Voice`, when the caller keeps it (recall memoises it per
        stored item); read from ``item`` otherwise.

        Examples:
            >>> from memtrellis.types import Scope, SourceRef
            >>> said = SourceRef(kind="chat", message_id="m1", role="user", speaker="Ana")
            >>> item = MemoryItem(text="I ran", sources=[said], scope=Scope(entity_id="a"))
            >>> Cues(speakers=("Ana",)).boost(item)
            (0.15, ['speaker Ana'])
        """
        return self.gain(voice if voice is not None else voice_of(item))

    def gain(self, voice: Voice, time_weight: float = 1.0) -> tuple[float, list[str]]:
        """`boost` for a memory's `Voice` alone (what the boost reads of a memory).

        Examples:
            >>> Cues(speakers=("Ana",)).gain(Voice(speakers=("Bo", "ana")))
            (0.15, ['speaker ana'])
        """
        gain = 0.0
        why: list[str] = []
        speaker = next((s for s in voice.speakers if s.casefold() in self._wanted), None)
        if speaker is not None:
            gain += SPEAKER_BOOST
            why.append(f"speaker {speaker}")
        else:
            role = next((r for r in voice.unnamed_roles if r in self.roles), None)
            if role is not None:
                gain += SPEAKER_BOOST
                why.append(f"speaker {role}")
        if self.time is not None and any(self.time.holds(when) for when in voice.times):
            gain += TIME_BOOST * time_weight
            why.append(self.time.label())
        return gain, why


@dataclass(frozen=True)
class Voice:
    """Who said a memory and when, as the cues read it from its sources.

    ``speakers`` are the named speakers of its chat sources, in order; ``unnamed_roles``
    the roles of its chat sources without a speaker (an assistant's reply); ``times`` its
    source timestamps (its ``valid_from`` when no source is dated).

    Examples:
        >>> from memtrellis.types import Scope, SourceRef
        >>> said = SourceRef(kind="chat", message_id="m1", role="user", speaker="Ana")
        >>> voice_of(MemoryItem(text="I ran", sources=[said], scope=Scope(entity_id="a")))
        Voice(speakers=('Ana',), unnamed_roles=(), times=(), newest=None)
    """

    speakers: tuple[str, ...] = ()
    unnamed_roles: tuple[str, ...] = ()
    times: tuple[datetime, ...] = ()
    #: The newest source timestamp (not ``valid_from``), for the time phrases count from.
    newest: datetime | None = None


def voice_of(item: MemoryItem) -> Voice:
    """The `Voice` of ``item`` (see `Voice`)."""
    speakers: dict[str, None] = {}
    roles: dict[str, None] = {}
    stamps: list[datetime] = []
    for source in item.sources:
        if source.timestamp is not None:
            stamps.append(source.timestamp)
        if source.kind.value != "chat":
            continue
        if source.speaker:
            speakers.setdefault(source.speaker, None)
        elif source.role:
            roles.setdefault(source.role, None)
        else:
            roles.setdefault("", None)
    times = tuple(stamps) or ((item.valid_from,) if item.valid_from is not None else ())
    return Voice(
        speakers=tuple(speakers),
        unnamed_roles=tuple(roles),
        times=times,
        newest=max(stamps) if stamps else None,
    )


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


# -- how much a time says -----------------------------------------------------------------


def specificity(span: TimeSpan, voices: Iterable[Voice | None]) -> float:
    """How much being dated in ``span`` sets a candidate apart: ``1 + ln(n / m)``, where
    ``n`` candidates are dated and ``m`` of them fall in the span (1 when none or all
    do).

    The inverse document frequency of the span among what matches the question: a day
    of a year-long chat sets apart the few messages of that day, "this year" or "by
    March" hardly any. `TIME_BOOST` is multiplied by it.

    Examples:
        >>> from datetime import datetime, timezone
        >>> day = time_span("on 2023-05-08", datetime(2023, 10, 20, tzinfo=timezone.utc))
        >>> may8 = Voice(times=(datetime(2023, 5, 8, 9, tzinfo=timezone.utc),))
        >>> june = Voice(times=(datetime(2023, 6, 1, tzinfo=timezone.utc),))
        >>> round(specificity(day, [may8, june, june, june]), 2)
        2.39
        >>> specificity(day, [may8, may8]), specificity(day, [june, None])
        (1.0, 1.0)
    """
    dated = inside = 0
    for voice in voices:
        if voice is not None and voice.times:
            dated += 1
            inside += any(span.holds(when) for when in voice.times)
    return 1.0 + math.log(dated / inside) if inside else 1.0


# -- applying them -------------------------------------------------------------------------


class Boostable(Protocol):
    """A candidate's score as recall keeps it: what cues lend, and why."""

    boost: float
    boosts: list[str]


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
    *,
    voice: Callable[[str], Voice | None] | None = None,
) -> Cues:
    """Boost the candidates in ``scores`` that the cues of ``query`` match, in place.

    ``item_of`` finds a memory by id; ``recent`` gives the newest stored memory ids
    (the time a relative phrase counts from is the newest of their messages, or of the
    candidates', but never after ``now``); ``voice`` gives a memory's `Voice` by id
    (recall passes one the graph memoises: hundreds of candidates per query), read from
    ``item_of`` when not given. Returns the cues found.
    """

    def heard(memory_id: str) -> Voice | None:
        if voice is not None:
            return voice(memory_id)
        item = item_of(memory_id)
        return voice_of(item) if item is not None else None

    voices = {memory_id: heard(memory_id) for memory_id in scores}
    speakers: dict[str, None] = {}
    unnamed = False  # a chat message without a speaker (an assistant's reply) is a voice too
    for found in voices.values():
        if found is not None:
            speakers.update(dict.fromkeys(found.speakers))
            unnamed = unnamed or bool(found.unnamed_roles)

    def anchor() -> datetime:
        newest: datetime | None = None
        for memory_id in [*recent(), *scores]:
            found = voices[memory_id] if memory_id in voices else heard(memory_id)
            if found is not None and found.newest is not None:
                newest = found.newest if newest is None else max(newest, found.newest)
        return now if newest is None or newest > now else newest

    cues = parse_cues(query, speakers, anchor, unnamed=unnamed)
    if cues.empty:
        return cues
    weight = 1.0 if cues.time is None else specificity(cues.time, voices.values())
    for memory_id, entry in scores.items():
        found = voices[memory_id]
        if found is None:
            continue
        gain, why = cues.gain(found, weight)
        if gain:
            entry.boost += gain
            entry.boosts.extend(why)
    return cues
