"""The BM25 keyword index, checked against a plain reference implementation."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from memtrellis.store.keyword import KeywordIndex, tokenize

WORDS = ["clara", "lisbon", "porto", "cat", "nurse", "band", "fado", "train", "rain", "pike"]


def reference_bm25(docs: dict[str, str], query: str, k1: float = 1.5, b: float = 0.75) -> dict:
    """Okapi BM25 written out term by term, the textbook way."""
    terms = {d: tokenize(t) for d, t in docs.items()}
    average = sum(len(t) for t in terms.values()) / len(terms) or 1.0
    scores: dict[str, float] = {}
    for term in set(tokenize(query)):
        holders = [d for d, t in terms.items() if term in t]
        if not holders:
            continue
        idf = math.log((len(docs) - len(holders) + 0.5) / (len(holders) + 0.5) + 1.0)
        for d in holders:
            tf = Counter(terms[d])[term]
            norm = k1 * (1 - b + b * len(terms[d]) / average)
            scores[d] = scores.get(d, 0.0) + idf * tf * (k1 + 1) / (tf + norm)
    return scores


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
operations = st.lists(
    st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 11), texts), max_size=40
)


@settings(max_examples=150, deadline=None)
@given(operations, st.lists(st.sampled_from(WORDS), min_size=1, max_size=3), st.integers(1, 15))
def test_search_matches_reference_after_any_adds_and_removes(ops, query_words, n) -> None:
    index = KeywordIndex()
    docs: dict[str, str] = {}
    for op, number, text in ops:
        memory_id = f"m{number:02d}"
        if op == "add":
            index.add("t", memory_id, text)
            docs[memory_id] = text
        else:
            index.remove(memory_id)
            docs.pop(memory_id, None)
    query = " ".join(query_words)
    found = index.search("t", query, n)
    if not docs:
        assert found == []
        return
    expected = reference_bm25(docs, query)
    assert len(found) == min(n, len(expected))
    for memory_id, score in found:
        assert math.isclose(score, expected[memory_id], rel_tol=1e-5)
    # best first, ties by id, and nothing left out that beats the last one returned
    assert found == sorted(found, key=lambda kv: (-kv[1], kv[0]))
    if found:
        last = found[-1][1]
        returned = {m for m, _ in found}
        assert all(s <= last + 1e-5 for m, s in expected.items() if m not in returned)


def test_ties_are_broken_by_id_and_slots_are_reused() -> None:
    index = KeywordIndex()
    for memory_id in ["c", "a", "b"]:
        index.add("t", memory_id, "clara lisbon")
    assert [m for m, _ in index.search("t", "clara", 10)] == ["a", "b", "c"]
    assert [m for m, _ in index.search("t", "clara", 2)] == ["a", "b"]
    index.remove("a")
    index.add("t", "d", "clara porto")  # takes the freed slot
    assert {m for m, _ in index.search("t", "clara", 10)} == {"b", "c", "d"}
    assert index.search("t", "porto", 10)[0][0] == "d"
    assert index.search("t", "lisbon porto", 1)[0][0] in {"b", "c", "d"}
    assert len(index) == 3


def test_tenants_are_separate_and_can_be_dropped() -> None:
    index = KeywordIndex()
    index.add("alice", "a1", "Clara lives in Lisbon")
    index.add("bob", "b1", "Clara lives in Porto")
    assert [m for m, _ in index.search("alice", "clara", 10)] == ["a1"]
    index.drop_entity("alice")
    assert index.search("alice", "clara", 10) == []
    assert [m for m, _ in index.search("bob", "clara", 10)] == ["b1"]
    assert len(index) == 1


def test_replacing_a_memory_reindexes_it() -> None:
    index = KeywordIndex()
    index.add("t", "m", "Clara lives in Lisbon")
    index.add("t", "m", "Clara moved to Porto")
    assert index.search("t", "lisbon", 10) == []
    assert [m for m, _ in index.search("t", "porto", 10)] == ["m"]


def test_no_match_and_empty_queries() -> None:
    index = KeywordIndex()
    assert index.search("t", "anything", 5) == []
    index.add("t", "m", "Clara lives in Lisbon")
    assert index.search("t", "the of and", 5) == []  # stop words only
    assert index.search("t", "zebra", 5) == []
    assert index.search("t", "clara", 0) == []


def test_tokenize_drops_stop_words_and_splits_cjk() -> None:
    assert tokenize("Where did Clara move to?") == ["clara", "move"]
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokenize("猫") == ["猫"]
