"""The subjects a question names: the shard's known names, found in the query text.

Recall starts graph hops from the people, places and things a question names ("Where
does Kenji's sister live?" names Kenji), as well as from its search hits. A name is one
of the entity's own subjects (`MemoryGraph.subject_view`), never another entity's, and is
found in the query

* exactly, up to case and whitespace, longest first ("New York" before "York"), a
  possessive stripped ("Kenji's");
* fuzzily: a query word of at least `FUZZY_MIN` letters within rapidfuzz ``ratio``
  `NAME_MATCH` of a word of a name ("Kenjii" for "Kenji"; a name of several words needs
  each of them in turn), and a Chinese name of at least four characters written with one
  character different (``张晓明华`` for ``张小明华``); shorter Chinese names only exactly, as
  one character makes another name there (``张小明``, ``张小红``);
* a capitalised query word that is one word of exactly one longer name ("Clara" for
  "Clara Smith").

Subjects found by fast mode's heuristics include capitalised sentence starts ("Family
moments...", "Painting is fun"), so a name that is a common word must not match the
same word in a question ("what does she do with her family?"). A Latin name is taken only
when the question writes it capitalised after its first word, or when the entity's own
memories use it as a name: one of them writes it so (not only as the first word of a
sentence), and at least half of the memories that hold its rarest word mention the subject
(``mentions * 2 >= document frequency``). Stop words and names of one
letter are never taken. Chinese names have no case: they are subjects an extractor or the
caller named (fast mode finds none), and only a name made of function characters alone
(的, 了, 什么...) is left out.

Cost: the query's words are looked up in the entity's name table (a dict, not copied);
fuzzy matching compares a word with the name words of its first letter (rapidfuzz, in C).
The word table is kept per shard and entity and brought up to date only when the entity's
subjects changed (`MemoryGraph.subject_stamp`), by the names added or removed, so a recall
costs the same whatever other entities hold.

Examples:
    >>> from memtrellis import MemoryItem, Scope
    >>> from memtrellis.store import MemoryGraph
    >>> graph = MemoryGraph()
    >>> scope = Scope(entity_id="me")
    >>> graph.put(MemoryItem(text="I met Kenji in Kyoto.", scope=scope,
    ...                      entities=["Kenji", "Kyoto"]))
    >>> [(s.name, s.how) for s in named_subjects("where does kenjii live?", graph, "me")]
    [('Kenji', 'fuzzy')]
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from memtrellis.store.graph import HUB_MENTIONS, MemoryGraph, subject_node_id
from memtrellis.store.keyword import STOP_WORDS, ZH_FUNCTION_CHARS, index_terms

__all__ = ["FUZZY_MIN", "NAME_MATCH", "NamedSubject", "named_subjects"]

#: Fuzzy match of a query word and a word of a name (rapidfuzz ratio, 0..100): one
#: letter off in a word of six or more ("Kenjii", "Melanei"), as in the speaker cues.
NAME_MATCH = 85.0
#: Query words shorter than this are matched exactly only (short words are names by
#: chance: "Jo", "Max", "Ann").
FUZZY_MIN = 5
#: Words of a name matched at most (longer spans are titles and sentences).
_MAX_WORDS = 5
#: Chinese names fuzzily matched from this length on (one character different).
_ZH_FUZZY_MIN = 4
_ZH_MAX = 10

_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_WORD = re.compile(r"[^\W_](?:[\w&]|['’.-](?=\w))*")
_POSSESSIVE = re.compile(r"['’]s$")
_SENTENCE_END = frozenset(".!?。！？\n")
# Words that are names only by accident of a capital; besides the keyword index's stops.
_COMMON = STOP_WORDS | frozenset(
    """about after all also am any been being can could each every here just like
    may might more most much must no not now only other over really same should some
    still such very well would yes""".split()  # noqa: SIM905 - reads as text
)


@dataclass(frozen=True)
class NamedSubject:
    """A subject of the entity that the question names.

    ``name`` is the subject's display name, ``node`` its graph node, ``how`` whether it was
    written ``exact``\\ ly, ``fuzzy`` or as a ``part`` of a longer name, ``score`` the
    match (100 exact), ``mentions`` how many memories mention it and ``hub`` whether that
    is more than `HUB_MENTIONS` (recall does not hop from a hub).

    Examples:
        >>> NamedSubject("Kyoto", "subject:me:kyoto", "exact", 100.0, 3).hub
        False
    """

    name: str
    node: str
    how: str
    score: float
    mentions: int

    @property
    def hub(self) -> bool:
        """Mentioned by so many memories that it relates everything to everything."""
        return self.mentions > HUB_MENTIONS


@dataclass
class _Words:
    """One entity's name words, for fuzzy and partial matches (kept up to date by diff)."""

    stamp: int = -1
    keys: set[str] = field(default_factory=set)
    # Latin word of a name -> the names holding it
    names_of: dict[str, set[str]] = field(default_factory=dict)
    # first letter -> the name words starting with it (for rapidfuzz)
    by_letter: dict[str, list[str]] = field(default_factory=dict)
    # a Chinese name of four characters or more with one replaced by "?" -> the names
    wild: dict[str, set[str]] = field(default_factory=dict)
    # name -> (its mentions when read, whether a memory writes it as a name)
    written: dict[str, tuple[int, bool]] = field(default_factory=dict)

    def update(self, subjects: Mapping[str, str], stamp: int) -> None:
        current = set(subjects)
        for key in self.keys - current:
            self._index(key, add=False)
        for key in current - self.keys:
            self._index(key, add=True)
        self.keys, self.stamp = current, stamp

    def _index(self, key: str, *, add: bool) -> None:
        if _CJK.search(key):
            if len(key) >= _ZH_FUZZY_MIN:
                for at in range(len(key)):
                    _change(self.wild, key[:at] + "?" + key[at + 1 :], key, add)
            return
        for word in set(_words(key)):
            before = word in self.names_of
            _change(self.names_of, word, key, add)
            if before != (word in self.names_of):
                bucket = self.by_letter.setdefault(word[0], [])
                if add:
                    bucket.append(word)
                else:
                    bucket.remove(word)


def _change(table: dict[str, set[str]], slot: str, key: str, add: bool) -> None:
    if add:
        table.setdefault(slot, set()).add(key)
        return
    found = table.get(slot)
    if found is not None:
        found.discard(key)
        if not found:
            del table[slot]


def _words(text: str) -> list[str]:
    return [_POSSESSIVE.sub("", w) for w in _WORD.findall(text.casefold())]


_TABLES: weakref.WeakKeyDictionary[MemoryGraph, dict[str, _Words]] = weakref.WeakKeyDictionary()


def _table(graph: MemoryGraph, entity_id: str, subjects: Mapping[str, str]) -> _Words:
    per_graph = _TABLES.get(graph)
    if per_graph is None:
        per_graph = _TABLES.setdefault(graph, {})
    table = per_graph.get(entity_id)
    if table is None:
        table = per_graph.setdefault(entity_id, _Words())
    stamp = graph.subject_stamp(entity_id)
    if table.stamp != stamp:
        table.update(subjects, stamp)
    return table


@dataclass
class _Found:
    best: dict[str, tuple[str, float]] = field(default_factory=dict)  # key -> (how, score)

    def add(self, key: str, how: str, score: float) -> None:
        old = self.best.get(key)
        if old is None or old[1] < score:
            self.best[key] = (how, score)


def named_subjects(
    query: str,
    graph: MemoryGraph,
    entity_id: str,
    document_frequency: Callable[[str], int] | None = None,
) -> list[NamedSubject]:
    """The subjects of ``entity_id`` that ``query`` names, best match first.

    ``document_frequency(term)`` is how many of the entity's memories hold an index term
    (`KeywordIndex.document_frequency`); without it a lower-case or sentence-initial
    Latin name is taken only when it is no common word (see the module notes).

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> from memtrellis.store import MemoryGraph
        >>> graph = MemoryGraph()
        >>> graph.put(MemoryItem(text="张小明华在上海工作。", scope=Scope(entity_id="me"),
        ...                      entities=["张小明华", "上海"]))
        >>> [s.name for s in named_subjects("张晓明华在哪里工作？", graph, "me")]
        ['张小明华']
    """
    subjects = graph.subject_view(entity_id)
    if not subjects or not query.strip():
        return []
    found = _Found()
    capitalised: set[str] = set()
    _latin(query, subjects, found, capitalised, lambda: _table(graph, entity_id, subjects))
    _chinese(query, subjects, found, lambda: _table(graph, entity_id, subjects))
    out: list[NamedSubject] = []
    for key, (how, score) in found.best.items():
        node = subject_node_id(entity_id, key)
        mentions = graph.mentions_of(node)
        if not mentions or not _namelike(key, key in capitalised, mentions, document_frequency):
            continue
        if key not in capitalised and not _CJK.search(key):
            table = _table(graph, entity_id, subjects)
            known = table.written.get(key)
            if known is None or known[0] != mentions:
                known = table.written[key] = (mentions, _written_as_name(graph, node))
            if not known[1]:
                continue
        out.append(NamedSubject(subjects[key], node, how, score, mentions))
    out.sort(key=lambda s: (-s.score, s.hub, s.name))
    return out


def _latin(
    query: str,
    subjects: Mapping[str, str],
    found: _Found,
    capitalised: set[str],
    table: Callable[[], _Words],
) -> None:
    spans = [(m.group(0), m.start()) for m in _WORD.finditer(query) if not _CJK.search(m.group(0))]
    if not spans:
        return
    words = [_POSSESSIVE.sub("", w.casefold()) for w, _ in spans]
    # Written as a name: capitalised, and not merely the first word of a sentence.
    upper = [
        w[:1].isupper() and not _sentence_start(query, at) and w.casefold() not in _COMMON
        for w, at in spans
    ]
    used = [False] * len(words)
    for n in range(min(_MAX_WORDS, len(words)), 0, -1):
        for start in range(len(words) - n + 1):
            if any(used[start : start + n]):
                continue
            key = " ".join(words[start : start + n])
            if key in subjects:
                found.add(key, "exact", 100.0)
                used[start : start + n] = [True] * n
                if all(upper[start : start + n]):
                    capitalised.add(key)
    rest = [i for i, w in enumerate(words) if not used[i] and w not in _COMMON]
    if not rest:
        return
    words_of = table()
    for i in rest:
        word = words[i]
        holders = words_of.names_of.get(word)
        if holders is None and len(word) >= FUZZY_MIN:
            match = process.extractOne(
                word, words_of.by_letter.get(word[0], []), scorer=fuzz.ratio,
                score_cutoff=NAME_MATCH,
            )  # fmt: skip
            if match is not None:
                for key in words_of.names_of.get(match[0], ()):
                    score = _aligned(key, words, i, match[0])
                    if score is not None:
                        found.add(key, "fuzzy", score)
                        if upper[i]:
                            capitalised.add(key)
            continue
        if holders is None or not upper[i] or len(word) < 4:
            continue
        longer = [key for key in holders if key != word]
        if len(longer) == 1 and word not in subjects:
            found.add(longer[0], "part", NAME_MATCH)


def _aligned(key: str, words: list[str], at: int, matched: str) -> float | None:
    """The ratio of name ``key`` and the query words where its word ``matched`` falls on
    word ``at``; ``None`` unless every word of the name matches in turn."""
    parts = _words(key)
    if len(parts) == 1:
        return float(fuzz.ratio(words[at], matched))
    offset = parts.index(matched)
    start = at - offset
    if start < 0 or start + len(parts) > len(words):
        return None
    scores = [fuzz.ratio(words[start + j], part) for j, part in enumerate(parts)]
    if min(scores) < NAME_MATCH:
        return None
    return float(sum(scores) / len(scores))


def _chinese(
    query: str, subjects: Mapping[str, str], found: _Found, table: Callable[[], _Words]
) -> None:
    runs = _CJK_RUN.findall(query.casefold())
    if not runs:
        return
    wild: dict[str, set[str]] | None = None
    for run in runs:
        taken = [False] * len(run)
        for n in range(min(_ZH_MAX, len(run)), 1, -1):
            for start in range(len(run) - n + 1):
                if any(taken[start : start + n]):
                    continue
                piece = run[start : start + n]
                if piece in subjects:
                    found.add(piece, "exact", 100.0)
                    taken[start : start + n] = [True] * n
                    continue
                if n < _ZH_FUZZY_MIN:
                    continue
                if wild is None:
                    wild = table().wild
                if not wild:
                    continue
                for at in range(n):
                    for key in wild.get(piece[:at] + "?" + piece[at + 1 :], ()):
                        found.add(key, "fuzzy", float(fuzz.ratio(piece, key)))


def _sentence_start(text: str, at: int) -> bool:
    index = at - 1
    while index >= 0 and text[index] in " \t\"'“‘(":
        index -= 1
    return index < 0 or text[index] in _SENTENCE_END


#: Mentioning memories read to see whether they write a subject as a name.
_READ_MENTIONS = 8


def _written_as_name(graph: MemoryGraph, node: str) -> bool:
    """Whether a memory mentioning ``node`` writes its name capitalised after the first
    word of a sentence (``... with Clara``), not only as a sentence's first word."""
    name = str(graph.g.nodes[node].get("name", ""))
    if not name:
        return False
    pattern = re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])", re.IGNORECASE)
    for memory_id in list(graph.g._pred[node])[:_READ_MENTIONS]:
        item = graph.item(memory_id)
        if item is None:
            continue
        for match in pattern.finditer(item.text):
            if match.group(0)[:1].isupper() and not _sentence_start(item.text, match.start()):
                return True
    return False


def _namelike(
    key: str,
    capitalised: bool,
    mentions: int,
    document_frequency: Callable[[str], int] | None,
) -> bool:
    """Whether a matched ``key`` stands for the subject here, not for a common word."""
    if _CJK.search(key):
        return not ZH_FUNCTION_CHARS.issuperset(key.replace(" ", ""))
    words = _words(key)
    if not words or len(key) < 2 or all(w in _COMMON for w in words):
        return False
    if capitalised:
        return True
    if len(words) == 1 and len(key) < 3:
        return False  # "jo", "cs": a name only when written as one
    if document_frequency is None:
        return True
    terms = [t for w in words for t in index_terms(w)]
    frequencies = [document_frequency(t) for t in terms]
    rarest = min((f for f in frequencies if f), default=0)
    return rarest == 0 or mentions * 2 >= rarest
