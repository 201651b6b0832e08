"""The memory block over ``Memory(engine_process=True)``: the same agent, the engine in a
child process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes import scripted_llm
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory as ChatMemory
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

from llama_index.memory.memtrellis import MemtrellisMemoryBlock


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Memory]:
    with Memory(
        tmp_path / "store", entity_id="alice", embedder=HashingEmbedder(), engine_process=True
    ) as memory:
        yield memory


async def test_an_agent_reads_and_captures_through_the_block_over_the_engine_process(
    remote: Memory,
) -> None:
    remote.add("Alice is allergic to peanuts")
    llm, script = scripted_llm("Noted.")
    block = MemtrellisMemoryBlock(memory=remote, mode="fast")
    chat_memory = ChatMemory.from_defaults(
        session_id="sess-7",
        token_limit=60,
        chat_history_token_ratio=0.5,
        token_flush_size=20,
        memory_blocks=[block],
    )
    agent = FunctionAgent(llm=llm, tools=[], system_prompt="Be brief.")
    for text in (
        "I live in Porto and I work as a nurse.",
        "My sister Clara moved to Lisbon last spring.",
        "Which snack is safe with my peanuts allergy?",
    ):
        await agent.run(text, memory=chat_memory)
    assert await remote.aflush(timeout=60)

    prompt = " ".join(str(m.content) for m in script.calls[-1])
    assert "Alice is allergic to peanuts" in prompt  # recalled for the last question
    stored = [m for m in remote.list(limit=100) if m.scope.session_id == "sess-7"]
    texts = [item.text for item in stored]
    asked = [m.content for m in chat_memory.get_all() if m.role == "user"]
    assert len(asked) == 3 and all(texts.count(t) == 1 for t in asked)  # each once
    assert "I live in Porto and I work as a nurse." in texts
    assert {item.scope.entity_id for item in stored} == {"alice"}
    assert remote.entities() == ["alice"]
    assert all("llama_index" in item.tags for item in stored)
    later = await block.aget([ChatMessage(role="user", content="Where do I live, Porto?")])
    assert "I live in Porto" in later
