"""Keyword index: BM25 over memory text, per entity, maintained incrementally.

Adding or removing a memory touches only its own terms; a query walks the postings of
its terms, so nothing is rebuilt per query.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import sys
from array import array
from bisect import bisect_left
from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import OSA

from memtrellis._deprecated import renamed
from memtrellis.store.spelling import Spellings, edits_allowed

__all__ = [
    "FUZZY",
    "STOP_WORDS",
    "ZH_FUNCTION_CHARS",
    "KeywordIndex",
    "index_terms",
    "stem",
    "tokenize",
]

#: Query words also match the entity's terms spelt one edit away (`memtrellis.store.spelling`).
FUZZY = True

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK = re.compile(f"[{_CJK_CHARS}]")
# A word of mixed scripts ("今天的meeting又delay了") in runs of one script each.
_SCRIPT_RUN = re.compile(f"[{_CJK_CHARS}]+|[^{_CJK_CHARS}]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
#: Chinese function characters: no index term alone, nor a bigram of two of them (的了, 什么).
ZH_FUNCTION_CHARS = frozenset(
    "的了是在我你他她它们吗呢吧啊呀么什怎哪谁这那有和与及就都也还又很太把被给对从到要会能可以个一不没"
)
# Very common English words carry almost no BM25 weight but cost long postings walks.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
#: The English words `tokenize` leaves out.
STOP_WORDS = _STOP


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens; CJK runs become character bigrams (and the lone char).

    A word that mixes scripts without spaces is cut where the script changes, so the
    English words of a code-switched sentence stay words of their own.

    Examples:
        >>> tokenize("Ana moved to Porto!")
        ['ana', 'moved', 'porto']
        >>> tokenize("今天的meeting又delay了")
        ['今天', '天的', 'meeting', '又', 'delay', '了']
    """
    tokens: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if not _CJK.search(word):
            if word not in _STOP:
                tokens.append(word)
            continue
        for run in _SCRIPT_RUN.findall(word):
            if not _CJK.match(run):
                if run not in _STOP:
                    tokens.append(run)
            elif len(run) == 1:
                tokens.append(run)
            else:
                tokens.extend(a + b for a, b in itertools.pairwise(run))
    return tokens


def index_terms(text: str) -> list[str]:
    """The terms the BM25 index keeps for ``text``: `tokenize`, tuned for Chinese.

    English words are cut to a light stem (`stem`: "camped", "camping" and "camps" are
    all ``camp``), so a question and the message it asks about meet whatever the
    inflection. A run of Han characters gives its character bigrams and also each content
    character alone: a question rarely repeats the words of the message it asks about ("我的工作"
    for "做夜班护士"), and single characters still match where bigrams do not. Terms
    made only of function characters (`ZH_FUNCTION_CHARS`: 的, 了, 什么...) are left out,
    as English stop words are. Text without CJK gives exactly `tokenize`.

    Examples:
        >>> index_terms("我的工作是什么？")
        ['的工', '工作', '作是', '工', '作']
        >>> index_terms("Ana moved to Porto!")
        ['ana', 'mov', 'porto']
    """
    tokens = [stem(t) for t in tokenize(text)]
    if not _CJK.search(text):
        return tokens
    stop = ZH_FUNCTION_CHARS
    terms = [t for t in tokens if not (_HAN.match(t) and stop.issuperset(t))]
    for word in _WORD.findall(text.casefold()):
        for run in _SCRIPT_RUN.findall(word):
            if len(run) > 1 and _HAN.match(run):
                terms.extend(c for c in run if c not in stop and _HAN.match(c))
    return terms


def _spellings(query: str) -> dict[str, tuple[str, ...]]:
    """The query's Latin words by their index term (a stem may come from two words)."""
    out: dict[str, tuple[str, ...]] = {}
    for word in tokenize(query):
        if word.isascii() and word.isalpha():
            term = stem(word)
            if word not in out.get(term, ()):
                out[term] = (*out.get(term, ()), word)
    return out


def _variants(
    spellings: Spellings, term: str, words: tuple[str, ...], unknown: bool
) -> list[tuple[str, float]]:
    """The entity's terms a query term (and the words it was cut from) may be misspelt
    as, each with the share of the word it keeps (``1 - edits / length``)."""
    if not words:
        return []
    out: dict[str, float] = {}
    for word in dict.fromkeys((term, *words)):
        for other in spellings.near(word, unknown=unknown):
            if other == term:
                continue
            if word.startswith(other) and len(other) < len(word) - edits_allowed(word):
                share = len(other) / len(word)  # a stem read under a garbled ending
            else:
                share = 1.0 - OSA.distance(word, other) / max(len(word), len(other))
            out[other] = max(out.get(other, 0.0), share)
    return list(out.items())


_VOWEL = re.compile(r"[aeiouy]")


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English stem: a plural, then ``-ing`` or ``-ed``, then a final ``e``.

    Only the inflections that make a question miss its answer ("Where has she camped?"
    for "camping at the beach") are cut, never derivations; a word of three letters or
    fewer, or with a digit or a letter outside ASCII, stays as it is. Both the index and
    the query go through it.

    Examples:
        >>> [stem(w) for w in ["camped", "camping", "camps", "hikes", "hiking", "stopped"]]
        ['camp', 'camp', 'camp', 'hik', 'hik', 'stop']
        >>> [stem(w) for w in ["parties", "studied", "glass", "trees", "thing", "bus"]]
        ['party', 'study', 'glass', 'tree', 'thing', 'bus']
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) < 3 or not _VOWEL.search(base):
                break
            if suffix == "ed" and base.endswith("i"):
                base = base[:-1] + "y"
            elif len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "stopped", "running"
            word = base
            break
    if len(word) > 3 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word


#: A posting entry is ``slot << _TF_BITS | term frequency`` in one signed 64-bit integer.
_TF_BITS = 32
_TF_MASK = (1 << _TF_BITS) - 1


def _posting_add(posting: array[int], slot: int, tf: int) -> None:
    # Entries stay sorted by slot: new slots come last, a reused one is put in its place.
    entry = slot << _TF_BITS | min(tf, _TF_MASK)
    if not posting or posting[-1] < entry:
        posting.append(entry)
    else:
        posting.insert(bisect_left(posting, entry), entry)


def _posting_discard(posting: array[int], slot: int) -> None:
    at = bisect_left(posting, slot << _TF_BITS)
    if at < len(posting) and posting[at] >> _TF_BITS == slot:
        del posting[at]


class _Shard:
    """One entity's postings, keyed by slot numbers that index ``lengths``.

    A term's posting is one array of ``slot << 32 | tf`` sorted by slot: eight bytes a
    memory (a ``{slot: tf}`` dict took about fifty), and a slot is found by bisection, so
    changing one memory stays cheap in long postings. A query reads each term's posting
    as two numpy arrays, built on first use and dropped when the term changes, so scoring
    a term with tens of thousands of postings is a few vector operations.
    """

    __slots__ = (
        "_arrays",
        "free",
        "ids",
        "lengths",
        "postings",
        "slot_of",
        "spellings",
        "total_length",
    )

    def __init__(self) -> None:
        self.postings: dict[str, array[int]] = {}
        self.slot_of: dict[str, int] = {}
        self.ids: list[str | None] = []
        self.free: list[int] = []
        self.lengths = np.zeros(64, dtype=np.float32)
        self.total_length = 0
        self._arrays: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]] = {}
        self.spellings = Spellings()

    def __len__(self) -> int:
        return len(self.slot_of)

    def add(self, memory_id: str, terms: list[str]) -> None:
        slot = self.free.pop() if self.free else len(self.ids)
        if slot == len(self.ids):
            self.ids.append(memory_id)
            if slot >= len(self.lengths):
                self.lengths = np.concatenate([self.lengths, np.zeros_like(self.lengths)])
        else:
            self.ids[slot] = memory_id
        self.slot_of[memory_id] = slot
        postings = self.postings
        for term, count in Counter(terms).items():
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = array("q")
                self.spellings.add(term)
            _posting_add(posting, slot, count)
            self._arrays.pop(term, None)
        self.lengths[slot] = len(terms)
        self.total_length += len(terms)

    def remove(self, memory_id: str, terms: list[str]) -> None:
        slot = self.slot_of.pop(memory_id)
        for term in terms:
            posting = self.postings.get(term)
            if posting is not None:
                _posting_discard(posting, slot)
                self._arrays.pop(term, None)
                if not posting:
                    del self.postings[term]
                    self.spellings.discard(term)
        self.total_length -= int(self.lengths[slot])
        self.lengths[slot] = 0
        self.ids[slot] = None
        self.free.append(slot)

    def arrays(self, term: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]] | None:
        """``(slots, term frequencies)`` of a term's posting, or ``None``."""
        cached = self._arrays.get(term)
        if cached is None:
            posting = self.postings.get(term)
            if not posting:
                return None
            # A copy: a view would pin the array, which could then not grow.
            packed = np.array(posting, dtype=np.int64)
            slots = (packed >> _TF_BITS).astype(np.intp)
            tfs = (packed & _TF_MASK).astype(np.float32)
            cached = self._arrays[term] = (slots, tfs)
        return cached


class KeywordIndex:
    """Okapi BM25 (k1 1.5, b 0.75) with one shard per entity.

    Examples:
        >>> index = KeywordIndex()
        >>> index.add("ana", "m1", "Ana drinks green tea")
        >>> index.add("ana", "m2", "Ana moved to Porto")
        >>> [memory_id for memory_id, _ in index.search("ana", "green tea", 5)]
        ['m1']
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._shards: dict[str, _Shard] = {}
        # memory id -> (entity_id, *its distinct terms): one tuple of strings shared with the
        # postings (interned), not a list of copies per memory.
        self._terms: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, entity_id: str, memory_id: str, text: str) -> None:
        """Index a memory's text, replacing what was indexed for it before."""
        self.remove(memory_id)
        terms = [sys.intern(term) for term in index_terms(text)]
        self._shards.setdefault(entity_id, _Shard()).add(memory_id, terms)
        self._terms[memory_id] = (sys.intern(entity_id), *sorted(set(terms)))

    def remove(self, memory_id: str) -> None:
        """Forget a memory's terms (no-op when unknown)."""
        known = self._terms.pop(memory_id, None)
        if known is not None:
            self._shards[known[0]].remove(memory_id, list(known[1:]))

    def drop_tenant(self, entity_id: str) -> None:
        """Deprecated: [`drop_entity`][memtrellis.store.KeywordIndex.drop_entity]."""
        renamed("KeywordIndex.drop_tenant", "KeywordIndex.drop_entity")
        self.drop_entity(entity_id)

    def drop_entity(self, entity_id: str) -> None:
        """Forget one entity entirely."""
        shard = self._shards.pop(entity_id, None)
        if shard is not None:
            for memory_id in shard.slot_of:
                self._terms.pop(memory_id, None)

    def document_frequency(self, entity_id: str, term: str) -> int:
        """How many of one entity's memories hold ``term`` (an index term), 0 when none.

        Examples:
            >>> index = KeywordIndex()
            >>> index.add("ana", "m1", "Ana drinks green tea")
            >>> index.document_frequency("ana", "tea"), index.document_frequency("bo", "tea")
            (1, 0)
        """
        shard = self._shards.get(entity_id)
        posting = shard.postings.get(term) if shard is not None else None
        return len(posting) if posting else 0

    def terms_of(self, memory_id: str) -> tuple[str, ...]:
        """The distinct index terms of one memory (empty when it is not indexed).

        Examples:
            >>> index = KeywordIndex()
            >>> index.add("ana", "m1", "Ana drinks green tea")
            >>> index.terms_of("m1")
            ('ana', 'drink', 'green', 'tea')
        """
        known = self._terms.get(memory_id)
        return known[1:] if known is not None else ()

    def count(self, entity_id: str) -> int:
        """How many memories of one entity are indexed."""
        shard = self._shards.get(entity_id)
        return len(shard) if shard is not None else 0

    def search(
        self, entity_id: str, query: str, n: int, *, fuzzy: bool | None = None
    ) -> list[tuple[str, float]]:
        """Top ``n`` memories of one entity as ``(id, BM25 score)``, best first.

        With ``fuzzy`` (default `FUZZY`), a query word also matches the entity's terms
        spelt one edit away (two for long words; `memtrellis.store.spelling`): such a
        term scores as the word would, at most its own idf, times how much of the word
        it shares (``1 - edits / length``); a memory counts each query word once, by
        its best spelling.

        Ties are broken by memory id, so the same index and query give the same list.

        Examples:
            >>> index = KeywordIndex()
            >>> index.add("ana", "m1", "Ana loves her freind Bo")
            >>> index.add("ana", "m2", "Ana moved to Porto")
            >>> [memory_id for memory_id, _ in index.search("ana", "her friend", 5)]
            ['m1']
            >>> index.search("ana", "her friend", 5, fuzzy=False)
            []
        """
        shard = self._shards.get(entity_id)
        if shard is None or not len(shard) or n <= 0:
            return []
        docs = len(shard)
        average = shard.total_length / docs or 1.0
        acc: npt.NDArray[np.float64] | None = None

        def idf_of(df: int) -> float:
            return math.log((docs - df + 0.5) / (df + 0.5) + 1.0)

        def scored(found: tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]], idf: float) -> Any:
            slots, tfs = found
            norm = self.k1 * (1.0 - self.b + self.b * shard.lengths[slots] / average)
            return idf * tfs * (self.k1 + 1.0) / (tfs + norm)

        spelt = _spellings(query) if (FUZZY if fuzzy is None else fuzzy) else {}
        for term in set(index_terms(query)):
            found = shard.arrays(term)
            idf = idf_of(len(found[0])) if found is not None else 0.0
            variants = _variants(shard.spellings, term, spelt.get(term, ()), found is None)
            if acc is None and (found is not None or variants):
                acc = np.zeros(len(shard.ids), dtype=np.float64)
            if not variants:
                if found is not None and acc is not None:
                    acc[found[0]] += scored(found, idf)  # slots are unique
                continue
            best = np.zeros(len(shard.ids), dtype=np.float64)
            if found is not None:
                best[found[0]] = scored(found, idf)
            for other, share in variants:
                near = shard.arrays(other)
                if near is None:
                    continue
                own = idf_of(len(near[0]))
                value = share * scored(near, min(idf, own) if found is not None else own)
                best[near[0]] = np.maximum(best[near[0]], value)
            assert acc is not None
            acc += best
        if acc is None:
            return []
        hit = np.flatnonzero(acc)
        if len(hit) > n:
            # Everything scoring at least the n-th best, so ties at the cut are all seen.
            cut = np.partition(acc[hit], len(hit) - n)[len(hit) - n]
            hit = hit[acc[hit] >= cut]
        ranked = sorted(
            ((str(shard.ids[slot]), float(acc[slot])) for slot in hit.tolist()),
            key=lambda kv: (-kv[1], kv[0]),
        )
        return ranked[:n]
