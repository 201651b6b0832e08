"""The memory block inside the apps LlamaIndex users build: a chat engine, a
``FunctionAgent`` and a ``ReActAgent``, over two sessions of two users.

Each test asserts what matters to the user: the prompt the model received in the
second session holds that user's facts from the first and never the other user's, and
exactly which messages were stored under which entity (each once; no tool calls, tool
results, memory context or ReAct reasoning).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from fakes import TOOL, Script, scripted_llm
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.tools import FunctionTool
from memtrellis import Memory

from llama_index.memory.memtrellis import MemtrellisEventHandler, MemtrellisMemoryBlock

FACTS = {
    "alice": ("I am allergic to peanuts.", "I live in Porto."),
    "bob": ("I am vegan.", "I live in Oslo."),
}
QUESTION = "Which snack should I bring to the party?"


def chat_memory(memory: Memory, user: str, session: str, **options: object) -> ChatMemory:
    block = MemtrellisMemoryBlock(memory=memory, entity_id=user, mode="fast")
    return ChatMemory.from_defaults(session_id=session, memory_blocks=[block], **options)  # type: ignore[arg-type]


def stored(memory: Memory, user: str) -> list[tuple[str, str, str | None]]:
    """(role, text, session) of every memory stored under ``user``, oldest first."""
    assert memory.flush(timeout=60)
    items = sorted(memory.list(entity_id=user, limit=1000), key=lambda m: m.created_at)
    return [(m.sources[0].role or "", m.text, m.scope.session_id) for m in items]


def prompt_text(messages: Sequence[ChatMessage]) -> str:
    return "\n".join(m.content or "" for m in messages)


def assert_only_own_facts(script: Script, user: str) -> None:
    prompt = prompt_text(script.calls[-1])
    other = next(u for u in FACTS if u != user)
    for fact in FACTS[user]:
        assert fact in prompt, (fact, prompt)
    for fact in FACTS[other]:
        assert fact not in prompt, (fact, prompt)


def test_chat_engine_remembers_each_user_across_sessions(memory: Memory) -> None:
    for user in FACTS:
        llm, _ = scripted_llm(f"Noted, {user}.", f"Got it, {user}.")
        engine = SimpleChatEngine.from_defaults(
            llm=llm, memory=chat_memory(memory, user, f"{user}-1")
        )
        for fact in FACTS[user]:
            engine.chat(fact)

    for user in FACTS:
        llm, script = scripted_llm("Apple slices.")
        engine = SimpleChatEngine.from_defaults(
            llm=llm, memory=chat_memory(memory, user, f"{user}-2")
        )
        assert str(engine.chat(QUESTION)) == "Apple slices."
        assert_only_own_facts(script, user)

    for user, (first, second) in FACTS.items():
        # A chat engine reads its memory before each model call: the user's words are
        # captured at once, a reply at the session's next read (the last reply of a
        # session waits for a next message that never came).
        assert stored(memory, user) == [
            ("user", first, f"{user}-1"),
            ("assistant", f"Noted, {user}.", f"{user}-1"),
            ("user", second, f"{user}-1"),
            ("user", QUESTION, f"{user}-2"),
        ]


def lookup_menu() -> str:
    """The party's menu."""
    return "Menu: crisps, fruit, cake."


async def test_function_agent_remembers_each_user_across_sessions(memory: Memory) -> None:
    tools = [FunctionTool.from_defaults(lookup_menu)]
    for user in FACTS:
        llm, _ = scripted_llm(TOOL, f"Noted, {user}.")
        agent = FunctionAgent(llm=llm, tools=tools, system_prompt="Be brief.")
        session = chat_memory(memory, user, f"{user}-1")
        for fact in FACTS[user]:
            await agent.run(fact, memory=session)

    for user in FACTS:
        llm, script = scripted_llm("Apple slices.")
        agent = FunctionAgent(llm=llm, tools=tools, system_prompt="Be brief.")
        reply = await agent.run(QUESTION, memory=chat_memory(memory, user, f"{user}-2"))
        assert str(reply) == "Apple slices."
        assert_only_own_facts(script, user)

    for user, (first, second) in FACTS.items():
        # An agent reads its memory again after the final answer: the whole turn is in
        # before run() returns. The tool call and its result are not memories.
        assert stored(memory, user) == [
            ("user", first, f"{user}-1"),
            ("assistant", f"Noted, {user}.", f"{user}-1"),
            ("user", second, f"{user}-1"),
            ("assistant", f"Noted, {user}.", f"{user}-1"),
            ("user", QUESTION, f"{user}-2"),
            ("assistant", "Apple slices.", f"{user}-2"),
        ]


REACT_TOOL_STEP = "Thought: I need the menu.\nAction: lookup_menu\nAction Input: {}"


async def test_react_agent_remembers_each_user_across_sessions(memory: Memory) -> None:
    tools = [FunctionTool.from_defaults(lookup_menu)]
    for user in FACTS:
        llm, _ = scripted_llm(REACT_TOOL_STEP, f"Thought: I can answer.\nAnswer: Noted, {user}.")
        # No system_prompt: the memory goes into the user message (insert_method="user"),
        # since ReActAgent drops the first system message.
        agent = ReActAgent(llm=llm, tools=tools)
        session = chat_memory(memory, user, f"{user}-1", insert_method="user")
        for fact in FACTS[user]:
            await agent.run(fact, memory=session)

    for user in FACTS:
        llm, script = scripted_llm("Thought: I can answer.\nAnswer: Apple slices.")
        agent = ReActAgent(llm=llm, tools=tools)
        session = chat_memory(memory, user, f"{user}-2", insert_method="user")
        assert str(await agent.run(QUESTION, memory=session)) == "Apple slices."
        assert_only_own_facts(script, user)

    for user, (first, second) in FACTS.items():
        # Only the answer of ReAct's reasoning is the assistant's reply.
        assert stored(memory, user) == [
            ("user", first, f"{user}-1"),
            ("assistant", f"Noted, {user}.", f"{user}-1"),
            ("user", second, f"{user}-1"),
            ("assistant", f"Noted, {user}.", f"{user}-1"),
            ("user", QUESTION, f"{user}-2"),
            ("assistant", "Apple slices.", f"{user}-2"),
        ]


async def test_react_agent_without_system_prompt_warns_that_it_drops_the_block(
    memory: Memory,
) -> None:
    memory.add("Alice is allergic to peanuts")
    llm, script = scripted_llm("Thought: I can answer.\nAnswer: Apple slices.")
    agent = ReActAgent(llm=llm, tools=[])
    with pytest.warns(UserWarning, match="insert_method='user'"):
        await agent.run(QUESTION, memory=chat_memory(memory, "alice", "a-1"))
    # What the warning is about: the recalled memory never reached the model.
    assert "allergic to peanuts" not in prompt_text(script.calls[-1])

    # With a system_prompt the memory's system message survives, and nothing warns.
    llm, script = scripted_llm("Thought: I can answer.\nAnswer: Apple slices.")
    agent = ReActAgent(llm=llm, tools=[], system_prompt="Be brief.")
    await agent.run(QUESTION, memory=chat_memory(memory, "alice", "a-2"))
    assert "allergic to peanuts" in prompt_text(script.calls[-1])


async def test_a_short_session_is_remembered_without_any_flush(memory: Memory) -> None:
    """Bug: the block stored only what Memory flushed (after ~21k tokens by default)."""
    llm, _ = scripted_llm("Noted.")
    agent = FunctionAgent(llm=llm, tools=[])
    await agent.run("I live in Porto.", memory=chat_memory(memory, "alice", "a-1"))
    assert stored(memory, "alice") == [
        ("user", "I live in Porto.", "a-1"),
        ("assistant", "Noted.", "a-1"),
    ]

    # capture="flushed" keeps LlamaIndex's own rule: nothing from a short session.
    block = MemtrellisMemoryBlock(memory=memory, entity_id="bob", capture="flushed")
    await agent.run("I live in Oslo.", memory=ChatMemory.from_defaults(memory_blocks=[block]))
    assert stored(memory, "bob") == []


async def test_flushed_messages_are_not_stored_again(memory: Memory) -> None:
    llm, _ = scripted_llm("Noted, that is one more thing about you.")
    # A small short-term queue, so that every turn soon flushes into the block.
    session = chat_memory(
        memory, "alice", "a-1", token_limit=60, chat_history_token_ratio=0.5, token_flush_size=20
    )
    said = [
        "I live in Porto and I work as a nurse.",
        "My sister Clara moved to Lisbon last spring.",
        "I prefer green tea over coffee in the morning.",
    ]
    agent = FunctionAgent(llm=llm, tools=[])
    for text in said:
        await agent.run(text, memory=session)
    assert len(await session.aget_all()) > len(await session.aget())  # some were flushed
    reply = "Noted, that is one more thing about you."
    assert stored(memory, "alice") == [
        row for text in said for row in (("user", text, "a-1"), ("assistant", reply, "a-1"))
    ]


async def test_block_and_event_handler_together_store_each_message_once(
    memory: Memory,
) -> None:
    handler = MemtrellisEventHandler(memory=memory, entity_id="alice", mode="fast")
    handler.attach()
    try:
        llm, script = scripted_llm("Noted.", "Apple slices.")
        agent = FunctionAgent(llm=llm, tools=[], system_prompt="Be brief.")
        await agent.run("I am allergic to peanuts.", memory=chat_memory(memory, "alice", "a-1"))
        await agent.run(QUESTION, memory=chat_memory(memory, "alice", "a-2"))
    finally:
        handler.detach()
    assert "I am allergic to peanuts." in prompt_text(script.calls[-1])
    assert [(role, text) for role, text, _ in stored(memory, "alice")] == [
        ("user", "I am allergic to peanuts."),
        ("assistant", "Noted."),
        ("user", QUESTION),
        ("assistant", "Apple slices."),
    ]


async def test_react_agent_with_block_and_event_handler_stores_only_the_conversation(
    memory: Memory,
) -> None:
    """The handler sees every ReAct step: acting steps and their observations are not the
    user's or the assistant's words; only the question and the final answer are."""
    handler = MemtrellisEventHandler(memory=memory, entity_id="alice", mode="fast")
    handler.attach()
    tools = [FunctionTool.from_defaults(lookup_menu)]
    try:
        for text in FACTS["alice"]:
            llm, _ = scripted_llm(REACT_TOOL_STEP, "Thought: I can answer.\nAnswer: Noted.")
            agent = ReActAgent(llm=llm, tools=tools, system_prompt="Be brief.")
            await agent.run(text, memory=chat_memory(memory, "alice", "a-1"))
    finally:
        handler.detach()
    assert [(role, text) for role, text, _ in stored(memory, "alice")] == [
        ("user", FACTS["alice"][0]),
        ("assistant", "Noted."),
        ("user", FACTS["alice"][1]),
        ("assistant", "Noted."),
    ]


async def test_the_react_warning_also_sees_react_agents_inside_an_agent_workflow(
    memory: Memory,
) -> None:
    llm, _ = scripted_llm("Thought: I can answer.\nAnswer: Hello.")
    react = ReActAgent(name="helper", description="Helps.", llm=llm, tools=[])
    workflow = AgentWorkflow(agents=[react], root_agent="helper")
    with pytest.warns(UserWarning, match="ReActAgent without a system_prompt"):
        await workflow.run("hello", memory=chat_memory(memory, "alice", "a-1"))
