"""A resent conversation adds only what is new, and never what was forgotten (issue 20).

Chat apps send their whole history again with each call; a message whose id (and text)
a memory of the same scope already cites is not stored again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

CONVERSATION = [
    {"role": "user", "content": "I live in Porto with my cat Tom.", "id": "m1"},
    {"role": "assistant", "content": "Porto is lovely in spring!", "id": "m2"},
]
NEW = {"role": "user", "content": "I started learning the cello.", "id": "m3"}


def memory_at(path: Path, **options: object) -> Memory:
    return Memory(path, entity_id="ana", embedder=HashingEmbedder(), **options)  # type: ignore[arg-type]


def test_the_same_conversation_added_twice_is_stored_once(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        first = memory.add(CONVERSATION)
        assert len(first) == 2
        assert memory.add(CONVERSATION) == []
        assert len(memory.list()) == 2
        hits = memory.recall("Where do I live?", k=5).memories
        assert len({hit.id for hit in hits}) == len(hits) == 2


def test_a_resent_history_adds_only_the_new_message(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        memory.add(CONVERSATION)
        [added] = memory.add([*CONVERSATION, NEW])
        assert added.text == NEW["content"]
        assert added.sources[0].message_id == "m3"
        assert sorted(i.sources[0].message_id or "" for i in memory.list()) == ["m1", "m2", "m3"]


def test_what_counts_as_the_same_message(tmp_path: Path) -> None:
    with memory_at(tmp_path / "s") as memory:
        memory.add(CONVERSATION)
        # Another session is another conversation: its m1 is its own.
        assert len(memory.add(CONVERSATION, session_id="s2")) == 2
        # The same id with another text is a new message.
        changed = [{"role": "user", "content": "I live in Lisbon now.", "id": "m1"}]
        assert len(memory.add(changed)) == 1
        # Without ids nothing tells two sends apart: each is stored.
        plain = [{"role": "user", "content": "I live in Porto with my cat Tom."}]
        assert len(memory.add(plain)) == 1
        assert len(memory.list()) == 6


def test_a_forgotten_message_resent_stays_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with memory_at(path) as memory:
        first = memory.add(CONVERSATION)
        cat = next(item for item in first if "Tom" in item.text)
        assert memory.forget(cat.id) == 1
        [cello] = memory.add([*CONVERSATION, NEW])
        assert cello.text == NEW["content"]
        assert cat.text not in {item.text for item in memory.list()}
    with memory_at(path) as memory:  # the snapshot written on close keeps it so
        assert memory.add([*CONVERSATION, NEW]) == []
        assert cat.text not in {item.text for item in memory.list()}
        assert memory.forget(entity_id="ana") == 2
        assert memory.add([*CONVERSATION, NEW]) == []
        assert memory.list() == []
        # New messages of the forgotten entity are stored as usual.
        assert len(memory.add([{"role": "user", "content": "Hello again.", "id": "m9"}])) == 1


def test_async_add_leaves_out_what_is_stored(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int]:
        async with memory_at(tmp_path / "s") as memory:
            first = await memory.aadd(CONVERSATION)
            again = await memory.aadd([*CONVERSATION, NEW])
            return len(first), len(again)

    assert asyncio.run(scenario()) == (2, 1)
