"""Spelling neighbours of a query word among one entity's keyword terms.

People misspell in chat ("freind", "campnig", "recieved") and so do their questions.
BM25 matches terms exactly, so a question and the message it asks about miss each other
over one letter. `Spellings` keeps an entity's Latin index terms by first letter and
length, and `Spellings.near` finds the terms one edit away from a query word (Damerau's
optimal string alignment: a letter dropped, added, replaced, or two swapped), two edits for
long words, through rapidfuzz in C over the few terms of the same first letter and
near length. The first letter is trusted: it is the one people get right, and it keeps
each look-up to a few hundred comparisons at 100k memories.

Stems make one more case: the index keeps ``camp`` for "camping", so a misspelt ending
("campnig") is no stem of it; a query word that is no term of the entity is also matched
by a term that starts it, when the rest is short (a garbled ending, at most
`GARBLED_ENDING` letters).

Examples:
    >>> words = Spellings()
    >>> for term in ["friend", "camp", "recipe", "receiv"]:
    ...     words.add(term)
    >>> sorted(words.near("freind")), sorted(words.near("campnig", unknown=True))
    (['friend'], ['camp'])
    >>> words.near("receiv")  # a known term is not its own neighbour
    []
"""

from __future__ import annotations

from rapidfuzz import process
from rapidfuzz.distance import OSA

__all__ = ["GARBLED_ENDING", "MIN_LENGTH", "Spellings", "edits_allowed"]

#: Words shorter than this are matched exactly only: one edit turns a short word into
#: another word ("lake", "like", "bike").
MIN_LENGTH = 5
#: Words of this length or more may be two edits away.
TWO_EDITS_FROM = 9
#: Most letters after a stem for a word that is no term to be read as that stem.
GARBLED_ENDING = 3
#: Shortest stem that may start such a word.
_MIN_STEM = 4


def edits_allowed(word: str) -> int:
    """How many edits a word of this length may be from a term it is matched with.

    Examples:
        >>> [edits_allowed(w) for w in ["lake", "house", "tomorrow", "definitely"]]
        [0, 1, 1, 2]
    """
    if len(word) < MIN_LENGTH:
        return 0
    return 2 if len(word) >= TWO_EDITS_FROM else 1


def _eligible(term: str) -> bool:
    return len(term) >= _MIN_STEM and term.isascii() and term.isalpha()


class Spellings:
    """One entity's Latin index terms, by first letter and length, kept up to date."""

    __slots__ = ("_buckets", "_lists")

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, int], set[str]] = {}
        self._lists: dict[tuple[str, int], list[str]] = {}

    def add(self, term: str) -> None:
        """A new term of the entity (ignored unless a Latin word of 4+ letters)."""
        if _eligible(term):
            key = (term[0], len(term))
            self._buckets.setdefault(key, set()).add(term)
            self._lists.pop(key, None)

    def discard(self, term: str) -> None:
        """A term no memory of the entity holds any more."""
        key = (term[:1], len(term))
        bucket = self._buckets.get(key)
        if bucket is not None and term in bucket:
            bucket.discard(term)
            self._lists.pop(key, None)
            if not bucket:
                del self._buckets[key]

    def _bucket(self, key: tuple[str, int]) -> list[str]:
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = sorted(self._buckets.get(key, ()))
        return found

    def near(self, word: str, *, unknown: bool = False) -> list[str]:
        """The terms within `edits_allowed` of ``word`` (never ``word`` itself); with
        ``unknown`` (``word`` is no term of the entity), also the stems that start it
        with a garbled ending of at most `GARBLED_ENDING` letters."""
        edits = edits_allowed(word)
        if not edits or not word.isascii() or not word.isalpha():
            return []
        first = word[0]
        out: list[str] = []
        for size in range(len(word) - edits, len(word) + edits + 1):
            bucket = self._bucket((first, size))
            if not bucket:
                continue
            found = process.extract(
                word, bucket, scorer=OSA.distance, score_cutoff=edits, limit=None
            )
            out.extend(term for term, _, _ in found if term != word)
        if unknown:
            for size in range(max(_MIN_STEM, len(word) - GARBLED_ENDING), len(word) - edits):
                if word[:size] in self._buckets.get((first, size), ()):
                    out.append(word[:size])
        return out
