"""Conversation neighbours: the messages around a candidate, slight ones passed over.

An answer is often the turn next to the one that matches a question ("Guess where I
moved?" / "Porto!"), so recall lends a share of a candidate's score to the messages
before and after it along ``follows`` edges (`memtrellis.recall.hybrid`, step 4). Real
chats put reactions between a turn and its reply ("lol same", "omg yes!!", "wait
what"): counted as neighbours they take the share the reply should get, push the reply
out of reach, and then compete for the top k with nothing to say.

A *slight* memory is one whose every index term is common in its entity: each is held
by more than `COMMON_SHARE` of the entity's memories (and at least `COMMON_MIN`), as
"lol", "same", "yeah" are in a chat and a speaker's name is in every message they
search under. The walk passes over slight memories without counting them and lends
them nothing; the radius counts messages with something to say. A slight memory a
search found keeps its own score: it is passed over, not hidden. Which terms are common
is read from the entity's keyword index at recall time, so it follows the conversation
(a word that is rare in one chat is common in another), and only the messages walked
are looked at.

Examples:
    >>> from memtrellis.store import KeywordIndex
    >>> index = KeywordIndex()
    >>> for n in range(30):
    ...     index.add("a", f"m{n}", "lol same" if n % 3 else f"I adopted puppy number {n}")
    >>> is_slight = slight_test(index, "a")
    >>> is_slight("m1"), is_slight("m0")
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from memtrellis.store import KeywordIndex, MemoryGraph
from memtrellis.types import EdgeKind

__all__ = ["COMMON_MIN", "COMMON_SHARE", "SKIP_SLIGHT", "conversation_neighbours", "slight_test"]

#: A term held by more than this share of an entity's memories is common.
COMMON_SHARE = 0.01
#: ... and by at least this many (a small entity has few memories to share a term).
COMMON_MIN = 3
#: Pass over slight memories in the walk (off: every message counts, as before).
SKIP_SLIGHT = True
#: Most slight memories passed over in a row on one side.
_MAX_PASSED = 6


def slight_test(keywords: KeywordIndex, entity_id: str) -> Callable[[str], bool]:
    """A test of whether a memory of ``entity_id`` is slight (see the module notes)."""
    common = max(COMMON_MIN, int(COMMON_SHARE * keywords.count(entity_id)))
    known: dict[str, bool] = {}

    def df_common(term: str) -> bool:
        found = known.get(term)
        if found is None:
            found = known[term] = keywords.document_frequency(entity_id, term) > common
        return found

    verdicts: dict[str, bool] = {}  # the lenders' walks cross the same messages

    def slight(memory_id: str) -> bool:
        found = verdicts.get(memory_id)
        if found is None:
            terms = keywords.terms_of(memory_id)
            found = verdicts[memory_id] = bool(terms) and all(df_common(t) for t in terms)
        return found

    return slight


def conversation_neighbours(
    graph: MemoryGraph, memory_id: str, radius: int, slight: Callable[[str], bool] | None
) -> Iterator[tuple[str, int]]:
    """``(memory, distance)`` of the messages up to ``radius`` before and after one,
    along ``follows`` edges; with ``slight``, slight memories are passed over and not
    counted (at most `_MAX_PASSED` in a row)."""
    if memory_id not in graph:
        return
    kind = EdgeKind.FOLLOWS.value
    # The adjacency dicts themselves: even the graph's views cost more than the walk.
    for links in (graph.g._succ, graph.g._pred):
        current = memory_id
        distance = passed = 0
        while distance < radius:
            step = next((n for n, keys in links[current].items() if kind in keys), None)
            if step is None:
                break
            current = step
            if slight is not None and passed < _MAX_PASSED and slight(step):
                passed += 1
                continue
            distance += 1
            passed = 0
            yield step, distance
