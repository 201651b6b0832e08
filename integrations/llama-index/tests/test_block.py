"""MemtrellisMemoryBlock inside llama_index.core.memory.Memory with real engines and agents."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from fakes import GatedEmbedder, scripted_llm
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory as ChatMemory
from memtrellis import Memory, StoreClosedError

from llama_index.memory.memtrellis import MemtrellisMemoryBlock


def _no_context_stored(memory: Memory) -> None:
    for item in memory.list(limit=1000):
        assert "memory_context" not in item.text and "<memory>" not in item.text, item.text


def test_chat_engine_reads_memory_context_from_the_block(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    llm, script = scripted_llm("Try apple slices.")
    chat_memory = ChatMemory.from_defaults(
        session_id="s1", memory_blocks=[MemtrellisMemoryBlock(memory=memory)]
    )
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=chat_memory)

    assert str(engine.chat("Suggest a snack, I am allergic to something")) == "Try apple slices."

    system = script.system_text()
    assert "<memtrellis>" in system and "<memory_context>" in system
    assert "Alice is allergic to peanuts" in system


def test_block_recalls_for_the_latest_user_message(memory: Memory) -> None:
    memory.add("Bob's birthday is on 3 May")
    memory.add("The office closes at six")
    block = MemtrellisMemoryBlock(memory=memory, k=1)
    history = [
        ChatMessage(role="user", content="When does the office close?"),
        ChatMessage(role="assistant", content="At six."),
        ChatMessage(role="user", content="And when is Bob's birthday?"),
    ]
    text = asyncio.run(block.aget(history))
    # Recall answers the latest message; the earlier turns are in the chat history the
    # model is sent, so the block does not repeat them.
    assert "3 May" in text and "six" not in text
    assert "Recent conversation:" not in text and "office" not in text
    assert asyncio.run(block.aget([ChatMessage(role="assistant", content="hi")])) == ""


async def test_agent_captures_messages_flushed_from_the_short_term_queue(memory: Memory) -> None:
    llm, script = scripted_llm("Noted.")
    block = MemtrellisMemoryBlock(memory=memory, mode="fast")
    # A small short-term queue, so that older messages are flushed into the block.
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
        "I prefer green tea over coffee in the morning.",
    ):
        await agent.run(text, memory=chat_memory)
    assert await memory.aflush(timeout=60)

    stored = memory.list(limit=100)
    texts = [item.text for item in stored]
    assert "I live in Porto and I work as a nurse." in texts
    assert {item.scope.session_id for item in stored} == {"sess-7"}
    assert {item.scope.entity_id for item in stored} == {"alice"}
    assert all("llama_index" in item.tags for item in stored)
    _no_context_stored(memory)
    # What was captured is recalled for the next question through the same block.
    later = await block.aget([ChatMessage(role="user", content="Where do I live, Porto?")])
    assert "I live in Porto" in later
    assert len(script.calls) == 3


async def test_block_recall_runs_off_the_event_loop(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    with Memory(tmp_path / "s", embedder=embedder) as memory:
        memory.add("Alice is allergic to peanuts")
        block = MemtrellisMemoryBlock(memory=memory, strict=True)
        embedder.close_gate()
        text, _ = await asyncio.gather(
            block.aget([ChatMessage(role="user", content="peanuts?")]), embedder.open_gate()
        )
        assert "allergic to peanuts" in text


async def test_memory_failures_read_as_empty_and_are_counted(closed_memory: Memory) -> None:
    block = MemtrellisMemoryBlock(memory=closed_memory)
    asked = [ChatMessage(role="user", content="anything?")]
    assert await block.aget(asked) == ""  # the recall and the capture of the question fail
    await block.aput([ChatMessage(role="user", content="I live in Porto")])
    assert block.failures == 3

    strict = MemtrellisMemoryBlock(memory=closed_memory, strict=True)
    with pytest.raises(StoreClosedError):
        await strict.aget(asked)


async def test_a_failing_block_does_not_break_the_agent(closed_memory: Memory) -> None:
    llm, _ = scripted_llm("Still here.")
    chat_memory = ChatMemory.from_defaults(
        memory_blocks=[MemtrellisMemoryBlock(memory=closed_memory)]
    )
    agent = FunctionAgent(llm=llm, tools=[])
    assert str(await agent.run("hello", memory=chat_memory)) == "Still here."


async def test_truncate_renders_the_block_again_within_fewer_tokens(memory: Memory) -> None:
    for text in (
        "The deploy freeze starts on Friday",
        "Team lunch is every Friday at noon",
        "The office closes at six on Fridays",
        "Clara moved to Lisbon in spring",
    ):
        memory.add(text)
    block = MemtrellisMemoryBlock(memory=memory, priority=1)
    full = await block.aget([ChatMessage(role="user", content="what happens on Friday?")])
    assert full.count("\n- ") == 4
    shorter = await block.atruncate(full, 20)
    assert shorter is not None and len(shorter) < len(full)
    assert shorter.startswith("<memory_context>") and shorter.endswith("</memory_context>")
    assert await block.atruncate(full, 10_000) is None
    assert await block.atruncate("not rendered by this block", 5) is None
