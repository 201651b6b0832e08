"""MemoryChatMessageHistory: a session's messages as memories, for RunnableWithMessageHistory."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from memtrellis import Memory

from fakes import FakeChat
from langchain_memtrellis import MemoryChatMessageHistory


def test_messages_are_stored_in_order_per_session(memory: Memory) -> None:
    one = MemoryChatMessageHistory("s1", memory)
    two = MemoryChatMessageHistory("s2", memory)

    one.add_messages([HumanMessage("I'm Alice", id="h1"), AIMessage("Hello Alice")])
    two.add_messages([HumanMessage("Other session")])
    one.add_messages([HumanMessage("Bye")])

    assert [(m.type, m.content) for m in one.messages] == [
        ("human", "I'm Alice"),
        ("ai", "Hello Alice"),
        ("human", "Bye"),
    ]
    assert one.messages[0].id == "h1"
    assert all(i.scope.session_id == "s1" for i in memory.list(session_id="s1"))
    assert memory.history(memory.list(session_id="s1")[0].id)[0].detail["mode"] == "fast"
    assert [m.content for m in two.messages] == ["Other session"]


def test_clear_forgets_only_that_session(memory: Memory) -> None:
    one = MemoryChatMessageHistory("s1", memory)
    two = MemoryChatMessageHistory("s2", memory)
    one.add_messages([HumanMessage("forget me")])
    two.add_messages([HumanMessage("keep me")])

    one.clear()

    assert one.messages == []
    assert [m.content for m in two.messages] == ["keep me"]
    assert memory.list(session_id="s1") == []
    assert [i.text for i in memory.list()] == ["keep me"]


async def test_async_methods(memory: Memory) -> None:
    history = MemoryChatMessageHistory("s3", memory, entity_id="bob")

    await history.aadd_messages([HumanMessage("async hello")])

    assert [m.content for m in await history.aget_messages()] == ["async hello"]
    assert [i.text for i in memory.list(entity_id="bob")] == ["async hello"]
    await history.aclear()
    assert await history.aget_messages() == []


def test_with_runnable_with_message_history(memory: Memory) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    llm = FakeChat(messages=iter(["Hi Dana.", "You are Dana."]))
    chain = RunnableWithMessageHistory(
        prompt | llm,
        lambda session_id: MemoryChatMessageHistory(session_id, memory),
        input_messages_key="question",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": "chat-7"}}

    chain.invoke({"question": "My name is Dana"}, config=config)
    chain.invoke({"question": "What is my name?"}, config=config)

    assert [m.content for m in llm.sent()] == ["My name is Dana", "Hi Dana.", "What is my name?"]
    assert [m.content for m in MemoryChatMessageHistory("chat-7", memory).messages] == [
        "My name is Dana",
        "Hi Dana.",
        "What is my name?",
        "You are Dana.",
    ]
