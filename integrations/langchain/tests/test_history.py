"""MemoryChatMessageHistory: a session's messages as memories, for RunnableWithMessageHistory."""

from __future__ import annotations

import string
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
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


# -- every message type round-trips (bug 8) -------------------------------------------------
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
EXAMPLES: list[BaseMessage] = [
    HumanMessage("I live in Porto", id="h1", name="alice"),
    HumanMessage([{"type": "text", "text": "What is in this photo?"}, IMAGE]),
    HumanMessage([IMAGE]),
    AIMessage(
        "",
        id="run-1",
        tool_calls=[{"name": "lookup", "args": {"city": "Porto"}, "id": "call-1"}],
    ),
    AIMessage(
        "Let me check both.",
        tool_calls=[
            {"name": "weather", "args": {"city": "Porto"}, "id": "call-2"},
            {"name": "time", "args": {}, "id": "call-3"},
        ],
        response_metadata={"model_name": "fake"},
    ),
    ToolMessage("Sunny, 24 °C", tool_call_id="call-2", name="weather", artifact={"raw": [1, 2]}),
    ToolMessage("boom", tool_call_id="call-3", status="error"),
    SystemMessage("You are terse.", id="sys"),
    ChatMessage(content="Looks fine to me.", role="reviewer"),
    FunctionMessage(content='{"ok": true}', name="legacy_fn"),
    AIMessage("", id="empty"),
    AIMessageChunk(content="streamed answer", id="chunk-1"),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: f"{m.type}")
def test_each_message_type_round_trips(memory: Memory, message: BaseMessage) -> None:
    history = MemoryChatMessageHistory("rt", memory)

    history.add_messages([message])

    assert history.messages == [message]


def test_a_tool_conversation_round_trips_in_order(memory: Memory) -> None:
    history = MemoryChatMessageHistory("tools", memory)

    history.add_messages(EXAMPLES)

    assert history.messages == EXAMPLES
    texts = [item.text for item in memory.list(session_id="tools", limit=100)]
    assert 'Tool call: lookup({"city": "Porto"})' in texts  # recall can find the call
    assert "[image_url]" in texts
    assert "What is in this photo?" in texts


def test_messages_stored_by_an_earlier_version_still_read(memory: Memory) -> None:
    memory.add(
        [
            {"role": "user", "content": "old hello", "id": "o1"},
            {"role": "assistant", "content": "old reply", "id": "o2", "name": "bot"},
        ],
        mode="fast",
        session_id="old",
    )

    read = MemoryChatMessageHistory("old", memory).messages

    assert [(m.type, m.content, m.id, m.name) for m in read] == [
        ("human", "old hello", "o1", None),
        ("ai", "old reply", "o2", "bot"),
    ]


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
_ids = st.none() | st.text(string.ascii_letters + string.digits + "-", min_size=1, max_size=12)
_names = st.none() | st.text(string.ascii_letters + "_", min_size=1, max_size=10)
_args = st.dictionaries(
    st.text(string.ascii_lowercase, min_size=1, max_size=6),
    st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
    max_size=3,
)
_tool_calls = st.lists(
    st.builds(
        lambda name, args, call_id: {"name": name, "args": args, "id": call_id},
        st.text(string.ascii_lowercase + "_", min_size=1, max_size=10),
        _args,
        st.text(string.ascii_letters + string.digits, min_size=1, max_size=8),
    ),
    max_size=3,
)
_parts = st.lists(
    st.builds(lambda t: {"type": "text", "text": t}, _text)
    | st.builds(
        lambda url: {"type": "image_url", "image_url": {"url": url}},
        st.sampled_from(["https://example.com/a.png", "data:image/png;base64,AAAA"]),
    ),
    min_size=1,
    max_size=3,
)
_content = _text | _parts
_messages = st.one_of(
    st.builds(HumanMessage, content=_content, id=_ids, name=_names),
    st.builds(AIMessage, content=_text, id=_ids, name=_names, tool_calls=_tool_calls),
    st.builds(
        ToolMessage,
        content=_content,
        tool_call_id=st.text(string.ascii_letters, min_size=1, max_size=8),
        name=_names,
        id=_ids,
        status=st.sampled_from(["success", "error"]),
    ),
    st.builds(SystemMessage, content=_text, id=_ids),
    st.builds(
        ChatMessage,
        content=_text,
        role=st.sampled_from(["user", "assistant", "critic", "developer"]),
        id=_ids,
    ),
)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(conversation=st.lists(_messages, min_size=1, max_size=5))
def test_any_conversation_round_trips(memory: Memory, conversation: list[BaseMessage]) -> None:
    history = MemoryChatMessageHistory(uuid.uuid4().hex, memory)

    history.add_messages(conversation)

    assert history.messages == conversation
