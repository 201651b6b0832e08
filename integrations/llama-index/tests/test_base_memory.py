"""MemtrellisMemory: a whole LlamaIndex BaseMemory, on its own and inside real engines and
agents."""

from __future__ import annotations

import pytest
from fakes import TOOL, scripted_llm
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.tools import FunctionTool
from memtrellis import Memory, StoreClosedError

from llama_index.memory.memtrellis import MemtrellisMemory


def rows(memory: Memory, user: str) -> list[tuple[str, str, str | None]]:
    assert memory.flush(timeout=60)
    items = sorted(memory.list(entity_id=user, limit=1000), key=lambda m: m.created_at)
    return [(m.sources[0].role or "", m.text, m.scope.session_id) for m in items]


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


def test_it_is_a_llamaindex_memory(memory: Memory) -> None:
    mem = MemtrellisMemory.from_defaults(memory=memory, session_id="s1")
    assert isinstance(mem, BaseMemory)
    assert mem.class_name() == "MemtrellisMemory"
    assert mem.get() == [] and mem.get_all() == []


def test_put_get_set_reset(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    mem = MemtrellisMemory.from_defaults(memory=memory, session_id="s1", mode="fast")
    mem.put(user("Any snack ideas without peanuts?"))

    system, question = mem.get()
    assert system.role == "system" and "Alice is allergic to peanuts" in system.content
    assert question.content == "Any snack ideas without peanuts?"
    assert [m.content for m in mem.get_all()] == ["Any snack ideas without peanuts?"]

    # input= is the message about to be sent: recalled for, not added (as in LlamaIndex).
    [only] = MemtrellisMemory.from_defaults(memory=memory).get(input="peanuts?")
    assert only.role == "system" and "allergic to peanuts" in only.content

    mem.put(assistant("Apple slices."))
    assert rows(memory, "alice")[1:] == [
        ("user", "Any snack ideas without peanuts?", "s1"),
        ("assistant", "Apple slices.", "s1"),
    ]

    mem.set([user("I live in Porto."), assistant("Nice.")])  # an app's own history
    assert [m.content for m in mem.get_all()] == ["I live in Porto.", "Nice."]
    mem.put(user("I have a cat."))
    mem.reset()  # the pending message is captured; the history is cleared
    assert mem.get_all() == []
    assert [text for _, text, _ in rows(memory, "alice")] == [
        "Alice is allergic to peanuts",
        "Any snack ideas without peanuts?",
        "Apple slices.",
        "I have a cat.",
    ]


async def test_async_variants(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    mem = MemtrellisMemory.from_defaults(memory=memory, session_id="s1", mode="fast")
    await mem.aput(user("Snacks without peanuts?"))
    system, _ = await mem.aget()
    assert "allergic to peanuts" in system.content
    await mem.aput_messages(
        [
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="c1", tool_name="menu", tool_kwargs={})],
            ),
            ChatMessage(role="tool", content="crisps", additional_kwargs={"tool_call_id": "c1"}),
            assistant("Crisps."),
        ]
    )
    assert len(await mem.aget_all()) == 4
    await mem.aset([])
    assert await mem.aget_all() == []
    await mem.areset()
    assert rows(memory, "alice")[1:] == [
        ("user", "Snacks without peanuts?", "s1"),
        ("assistant", "Crisps.", "s1"),
    ]


def test_any_primary_memory_and_the_user_message_placement(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    buffer = ChatMemoryBuffer.from_defaults(chat_history=[user("Snack ideas? peanuts")])
    mem = MemtrellisMemory.from_defaults(memory=memory, primary_memory=buffer, insert_method="user")
    [question] = mem.get()
    assert question.role == "user" and question.content.endswith("Snack ideas? peanuts")
    assert "<memory_context>" in question.content and "allergic to peanuts" in question.content
    assert buffer.get_all()[0].content == "Snack ideas? peanuts"  # the history is untouched


def test_memory_failures_return_the_history_alone(closed_memory: Memory) -> None:
    mem = MemtrellisMemory.from_defaults(memory=closed_memory)
    mem.put(user("hello"))
    mem.put(assistant("hi"))
    assert [m.content for m in mem.get()] == ["hello", "hi"]
    assert mem.failures == 2  # the capture and the recall
    strict = MemtrellisMemory.from_defaults(memory=closed_memory, strict=True)
    strict.put(user("hello"))
    with pytest.raises(StoreClosedError):
        strict.get()


FACTS = {"alice": "I am allergic to peanuts.", "bob": "I am vegan."}


def test_chat_engine_with_the_memory_over_two_sessions(memory: Memory) -> None:
    for who, fact in FACTS.items():
        llm, _ = scripted_llm(f"Noted, {who}.")
        mem = MemtrellisMemory.from_defaults(
            memory=memory, entity_id=who, session_id=f"{who}-1", mode="fast"
        )
        SimpleChatEngine.from_defaults(llm=llm, memory=mem).chat(fact)
    for who, fact in FACTS.items():
        llm, script = scripted_llm("Apple slices.")
        mem = MemtrellisMemory.from_defaults(
            memory=memory, entity_id=who, session_id=f"{who}-2", mode="fast"
        )
        SimpleChatEngine.from_defaults(llm=llm, memory=mem).chat("A snack for me?")
        prompt = "\n".join(m.content or "" for m in script.calls[-1])
        other = next(f for w, f in FACTS.items() if w != who)
        assert fact in prompt and other not in prompt
    for who, fact in FACTS.items():
        # Every put is seen: the reply of a chat engine's last turn is captured too.
        assert rows(memory, who) == [
            ("user", fact, f"{who}-1"),
            ("assistant", f"Noted, {who}.", f"{who}-1"),
            ("user", "A snack for me?", f"{who}-2"),
            ("assistant", "Apple slices.", f"{who}-2"),
        ]


def lookup_menu() -> str:
    """The party's menu."""
    return "Menu: crisps, fruit, cake."


async def test_function_agent_with_the_memory(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    llm, script = scripted_llm(TOOL, "Bring fruit.")
    agent = FunctionAgent(llm=llm, tools=[FunctionTool.from_defaults(lookup_menu)])
    mem = MemtrellisMemory.from_defaults(memory=memory, session_id="s1", mode="fast")
    assert str(await agent.run("What should I bring? peanuts", memory=mem)) == "Bring fruit."
    assert "Alice is allergic to peanuts" in script.system_text(0)
    assert rows(memory, "alice")[1:] == [
        ("user", "What should I bring? peanuts", "s1"),
        ("assistant", "Bring fruit.", "s1"),
    ]


async def test_react_agent_with_the_memory(memory: Memory) -> None:
    memory.add("Alice is allergic to peanuts")
    reply = "Thought: I can answer.\nAnswer: Bring fruit."
    llm, script = scripted_llm(reply)
    mem = MemtrellisMemory.from_defaults(memory=memory, session_id="s1", mode="fast")
    with pytest.warns(UserWarning, match="ReActAgent without a system_prompt"):
        await ReActAgent(llm=llm, tools=[]).run("What should I bring? peanuts", memory=mem)
    assert "allergic to peanuts" not in "\n".join(m.content or "" for m in script.calls[-1])

    llm, script = scripted_llm(reply)
    mem = MemtrellisMemory.from_defaults(
        memory=memory, session_id="s2", mode="fast", insert_method="user"
    )
    answer = await ReActAgent(llm=llm, tools=[]).run("What should I bring? peanuts", memory=mem)
    assert str(answer) == "Bring fruit."
    assert "allergic to peanuts" in "\n".join(m.content or "" for m in script.calls[-1])
    assert [r for r in rows(memory, "alice") if r[2] == "s2"] == [
        ("user", "What should I bring? peanuts", "s2"),
        ("assistant", "Bring fruit.", "s2"),
    ]
