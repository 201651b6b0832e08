"""Inputs at the edges of size and content (issue 19, items 4, 5 and 9).

* A long message costs time linear in its length: the entity heuristic reads each
  character a bounded number of times (counted, not timed), and a 1 MB message is stored
  by ``add`` and by ``capture``.
* More memories in one ``add`` than Chroma takes in one call (5,461) all reach the index.
* Distinct symbol-only texts (``:)``, ``:(``, emoji, ``?!``) stay distinct memories, with
  the hashing embedder and with the default MiniLM one.

Real Chroma ``PersistentClient`` under ``tmp_path``; only the embedder is fake, or real.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, SupportsIndex

import pytest

from memtrellis import ExtractionConfig, Memory
from memtrellis.embeddings import default_embedder
from memtrellis.lifecycle import plan
from memtrellis.lifecycle.entities import heuristic_entities
from memtrellis.store.vectors import DEFAULT_MAX_BATCH
from memtrellis.testing import HashingEmbedder, store_of
from memtrellis.types import SourceRef

_SENTENCE = "Clara Smith met Bruno in Porto. they talked about the Blue Fox; then Ana left! "


class _CountingText(str):
    """A str that counts the characters its indexing and slicing hand out."""

    read = 0

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        part = str.__getitem__(self, key)
        _CountingText.read += len(part)
        return part


@pytest.mark.parametrize("repeats", [50, 500])
def test_entity_heuristic_reads_each_character_a_bounded_number_of_times(repeats: int) -> None:
    # Before the fix, each word searched the whole text before it for a sentence end:
    # the characters read grew with the square of the length (about 1,000x at 500 repeats).
    text = _CountingText(_SENTENCE * repeats)
    _CountingText.read = 0
    names = heuristic_entities(text)
    assert {"Clara Smith", "Porto", "Blue Fox"} <= set(names)
    assert _CountingText.read <= 3 * len(text)


def test_a_title_cased_line_is_not_one_long_name() -> None:
    line = " ".join(["Word"] * 200_000)  # 1 MB of capitalised words
    assert heuristic_entities(line) == []
    assert heuristic_entities("Met Clara Smith in Porto.") == ["Clara Smith", "Porto"]


def _long_text(size: int) -> str:
    return (_SENTENCE * (size // len(_SENTENCE) + 1))[:size]


def test_a_one_megabyte_message_is_stored_by_add_and_by_capture(tmp_path: Path) -> None:
    text = _long_text(1_000_000)
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder()) as memory:
        (stored,) = memory.add([{"role": "user", "content": text}])
        assert memory.get(stored.id).text == text
        memory.capture([{"role": "user", "content": "I keep bees."}], mode="fast")
        memory.capture([{"role": "user", "content": text + " Later."}], mode="fast")
        memory.capture([{"role": "user", "content": "I moved to Lyon."}], mode="fast")
        assert memory.flush(timeout=300)  # a generous cap; the run takes about 2 s
        texts = [m.text for m in memory.list()]
        assert sorted(len(t) for t in texts) == sorted(
            [len(text), len(text) + 7, len("I keep bees."), len("I moved to Lyon.")]
        )
        assert memory.health().capture_failures == 0


@pytest.mark.parametrize("vector_process", [False, True])
def test_more_memories_than_one_chroma_call_takes_all_reach_the_index(
    tmp_path: Path, vector_process: bool
) -> None:
    options: dict[str, Any] = {"embedder": HashingEmbedder(), "vector_process": vector_process}
    with Memory(tmp_path / "s", entity_id="u", **options) as memory:
        vectors: Any = store_of(memory).vectors
        # 5,461 for Chroma 1.5 on SQLite; the child process serves a VectorIndex like it
        limit = DEFAULT_MAX_BATCH if vector_process else vectors._client.get_max_batch_size()
        count = limit + 600
        words = [uuid.uuid4().hex for _ in range(2 * count)]
        messages = [
            {"role": "user", "content": f"w{words[2 * n]} x{words[2 * n + 1]}"}
            for n in range(count)
        ]
        stored = memory.add(messages)
        assert len(stored) == count
        assert vectors.count("u") == count
        assert memory.health().pending_index_writes == 0
        ids = [m.id for m in stored]
        assert vectors.has("u", ids) == set(ids)
        assert len(vectors.embeddings("u", ids)) == count
        memory.forget(ids[0])
        assert vectors.count("u") == count - 1
    with Memory(tmp_path / "s", entity_id="u", **options) as memory:
        assert len(memory.list(limit=count)) == count - 1
        assert memory.health().pending_index_writes == 0


SYMBOLS = [":)", ":(", "😀", "😢", "?!", "!!!", "👍", "❤️", ":-D", "¯\\_(ツ)_/¯"]


@pytest.mark.parametrize("embedder", ["hashing", "minilm"])
def test_distinct_symbol_only_texts_stay_distinct(tmp_path: Path, embedder: str) -> None:
    chosen = HashingEmbedder() if embedder == "hashing" else default_embedder()
    with Memory(tmp_path / "s", entity_id="u", embedder=chosen) as memory:
        for text in SYMBOLS:
            memory.add(text)
        memory.add(":)")  # the same characters again: one memory
        memory.add("I feel 😀")
        memory.add("I feel 😢")  # other symbols, same words: not a duplicate
        memory.add("Ana lives in Lyon.")
        memory.add("Ana lives in Lyon!")  # punctuation only: a duplicate
        texts = sorted(m.text for m in memory.list())
    assert texts == sorted([*SYMBOLS, "I feel 😀", "I feel 😢", "Ana lives in Lyon."])


def test_each_new_memory_is_related_to_a_bounded_number_of_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One add of many memories (a long document's windows, a long conversation): each is
    # related to its closest earlier ones only, not to every one before it (quadratic).
    calls = []
    original = plan.relate

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(plan, "relate", counted)
    count = 150
    words = [uuid.uuid4().hex for _ in range(2 * count)]
    texts = [f"w{words[2 * n]} x{words[2 * n + 1]}." for n in range(count)]  # facts
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder()) as memory:
        assert len(memory.add(texts)) == count
        assert len(memory.list(limit=count)) == count
    assert len(calls) <= plan.DENSE_CANDIDATES * count  # was count * (count - 1) / 2


def test_merging_many_like_windows_copies_each_source_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long text of one repeated sentence: every window says the same and merges into
    # the first. Each merge deep-copied all the sources gathered so far (quadratic).
    copies = []
    original = SourceRef.__deepcopy__

    def counted(self: SourceRef, memo: dict[int, Any] | None = None) -> SourceRef:
        copies.append(1)
        return original(self, memo)

    monkeypatch.setattr(SourceRef, "__deepcopy__", counted)
    config = ExtractionConfig(max_tokens=16, overlap_tokens=0)
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), extraction=config) as m:
        outcomes = m.add("Ana keeps bees. " * 400)
        (kept,) = m.list()
    windows = len(outcomes)
    assert windows > 50 and len(kept.sources) == windows
    assert len(copies) <= 2 * windows
