"""Keyword index: BM25 over memory text, per tenant, maintained incrementally.

Adding or removing a memory touches only its own terms; a query walks the postings of
its terms, so nothing is rebuilt per query.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["KeywordIndex", "tokenize"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
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


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens; CJK runs become character bigrams (and the lone char)."""
    tokens: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if _CJK.search(word):
            chars = [c for c in word if _CJK.match(c)]
            rest = "".join(c for c in word if not _CJK.match(c))
            if len(chars) == 1:
                tokens.append(chars[0])
            tokens.extend(a + b for a, b in itertools.pairwise(chars))
            if rest and rest not in _STOP:
                tokens.append(rest)
        elif word not in _STOP:
            tokens.append(word)
    return tokens


@dataclass
class _Shard:
    postings: dict[str, dict[str, int]] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    total_length: int = 0


class KeywordIndex:
    """Okapi BM25 (k1 1.5, b 0.75) with one shard per tenant."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._shards: dict[str, _Shard] = {}
        self._terms: dict[str, tuple[str, list[str]]] = {}  # memory id -> (tenant, terms)

    def __len__(self) -> int:
        return len(self._terms)

    def add(self, tenant: str, memory_id: str, text: str) -> None:
        """Index a memory's text, replacing what was indexed for it before."""
        self.remove(memory_id)
        terms = tokenize(text)
        shard = self._shards.setdefault(tenant, _Shard())
        for term, count in Counter(terms).items():
            shard.postings.setdefault(term, {})[memory_id] = count
        shard.lengths[memory_id] = len(terms)
        shard.total_length += len(terms)
        self._terms[memory_id] = (tenant, sorted(set(terms)))

    def remove(self, memory_id: str) -> None:
        """Forget a memory's terms (no-op when unknown)."""
        known = self._terms.pop(memory_id, None)
        if known is None:
            return
        tenant, terms = known
        shard = self._shards[tenant]
        for term in terms:
            posting = shard.postings.get(term)
            if posting is not None:
                posting.pop(memory_id, None)
                if not posting:
                    del shard.postings[term]
        shard.total_length -= shard.lengths.pop(memory_id, 0)

    def drop_tenant(self, tenant: str) -> None:
        """Forget one tenant entirely."""
        shard = self._shards.pop(tenant, None)
        if shard is not None:
            for memory_id in shard.lengths:
                self._terms.pop(memory_id, None)

    def search(self, tenant: str, query: str, n: int) -> list[tuple[str, float]]:
        """Top ``n`` memories of one tenant as ``(id, BM25 score)``, best first."""
        shard = self._shards.get(tenant)
        if shard is None or not shard.lengths:
            return []
        docs = len(shard.lengths)
        average = shard.total_length / docs or 1.0
        scores: dict[str, float] = {}
        for term in set(tokenize(query)):
            posting = shard.postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log((docs - df + 0.5) / (df + 0.5) + 1.0)
            for memory_id, tf in posting.items():
                norm = self.k1 * (1.0 - self.b + self.b * shard.lengths[memory_id] / average)
                scores[memory_id] = scores.get(memory_id, 0.0) + idf * tf * (self.k1 + 1) / (
                    tf + norm
                )
        return heapq.nsmallest(n, scores.items(), key=lambda kv: (-kv[1], kv[0]))
