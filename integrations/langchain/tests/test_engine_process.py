"""The wrapper over ``Memory(engine_process=True)``: the same app, the engine in a child."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from memtrellis.testing import HashingEmbedder

from fakes import FakeChat, texts
from langchain_memtrellis import ChatMemoryWrapper


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Memory]:
    with Memory(
        tmp_path / "store", entity_id="alice", embedder=HashingEmbedder(), engine_process=True
    ) as memory:
        memory.add("Alice is allergic to peanuts")
        yield memory


async def test_the_wrapper_places_streams_and_captures_through_the_engine_process(
    remote: Memory,
) -> None:
    inner = FakeChat(messages=iter(["Try apple slices.", "Clara is in Lisbon."]))
    chat = ChatMemoryWrapper(inner, memory=remote)

    answer = chat.invoke([SystemMessage("Be brief."), HumanMessage("Which snack is safe?")])
    chunks = [c.content async for c in chat.astream("Where does my sister Clara live?")]

    assert answer.content == "Try apple slices."
    assert "".join(chunks) == "Clara is in Lisbon."  # type: ignore[arg-type]
    system = inner.sent(0)[0]
    assert system.content.startswith("Be brief.\n\n" + OPEN_TAG)
    assert "Alice is allergic to peanuts" in system.content
    assert sorted(texts(remote, "alice")) == sorted(
        [
            "Alice is allergic to peanuts",
            "Which snack is safe?",
            "Try apple slices.",
            "Where does my sister Clara live?",
            "Clara is in Lisbon.",
        ]
    )
    assert remote.entities() == ["alice"]
    assert chat.stats.as_dict()["captured"] == 2
    assert remote.health().adapter_counts  # the wrapper's counters, kept in the app
