"""Callback handlers: capture (never place) from chains and agents, by run id, thread-safe."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from uuid import uuid4

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from memtrellis import Memory
from memtrellis.context import OPEN_TAG, tool_trail

from fakes import FakeChat, reply, texts
from langchain_memtrellis import AsyncMemoryCallbackHandler, MemoryCallbackHandler, memory_context

PROMPT = ChatPromptTemplate.from_messages(
    [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
)


def test_handler_captures_a_chain_turn_in_the_scope_of_its_metadata(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory, entity_id="alice")
    chain = PROMPT | FakeChat(messages=iter(["Noted, oat milk."]))

    chain.invoke(
        {"question": "I only drink oat milk", "history": []},
        config={"callbacks": [handler], "metadata": {"memtrellis_entity_id": "bob"}},
    )

    assert sorted(texts(memory, "bob")) == ["I only drink oat milk", "Noted, oat milk."]
    assert texts(memory, "alice") == []  # the default gave way to the run's metadata
    assert handler.stats.captured == 1
    assert handler.runs.pending == 0


def test_handler_never_places_and_strips_placed_context(memory: Memory) -> None:
    memory.add("Alice is vegetarian")
    inner = FakeChat(messages=iter(["A bean salad."]))
    handler = MemoryCallbackHandler(memory)
    chain = PROMPT | memory_context(memory) | inner

    chain.invoke(
        {"question": "Dinner idea for a vegetarian?", "history": []},
        config={"callbacks": [handler]},
    )

    assert OPEN_TAG in inner.sent()[0].content  # placed by memory_context, not the handler
    stored = texts(memory)
    assert "Dinner idea for a vegetarian?" in stored
    assert not any(OPEN_TAG in t or "You are terse." in t for t in stored)


def test_a_failed_run_is_forgotten(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory)
    chat = FakeChat(messages=iter(["never"]), fail_first=1)

    with pytest.raises(ConnectionError):
        chat.invoke("this call fails", config={"callbacks": [handler]})

    assert handler.runs.pending == 0
    assert texts(memory) == []


def test_handler_is_thread_safe(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory)
    chat = FakeChat(messages=iter([f"answer {i}" for i in range(20)]))

    def call(i: int) -> None:
        chat.invoke(f"question {i}", config={"callbacks": [handler]})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(call, range(20)))

    stored = set(texts(memory))
    assert {f"question {i}" for i in range(20)} <= stored
    assert {f"answer {i}" for i in range(20)} <= stored
    assert handler.runs.pending == 0


async def test_async_handler_captures(memory: Memory) -> None:
    handler = AsyncMemoryCallbackHandler(memory, session_id="s1")
    chat = FakeChat(messages=iter(["async noted"]))

    await chat.ainvoke("remember this asynchronously", config={"callbacks": [handler]})

    assert memory.flush(30)
    items = memory.list()
    assert sorted(i.text for i in items) == ["async noted", "remember this asynchronously"]
    assert {i.scope.session_id for i in items} == {"s1"}


def test_callbacks_under_runnable_with_message_history(memory: Memory) -> None:
    histories: dict[str, InMemoryChatMessageHistory] = {}
    chain = RunnableWithMessageHistory(
        PROMPT | FakeChat(messages=iter(["Hi Dana.", "You are Dana."])),
        lambda session_id: histories.setdefault(session_id, InMemoryChatMessageHistory()),
        input_messages_key="question",
        history_messages_key="history",
    )
    handler = MemoryCallbackHandler(memory)
    config = {
        "configurable": {"session_id": "chat-1"},
        "metadata": {"session_id": "chat-1"},  # handlers see metadata, not configurable
        "callbacks": [handler],
    }

    chain.invoke({"question": "My name is Dana"}, config=config)
    chain.invoke({"question": "What is my name?"}, config=config)

    assert len(histories["chat-1"].messages) == 4
    assert memory.flush(30)
    items = memory.list()
    # Each turn once: the history sent with the second call is not stored again.
    assert sorted(i.text for i in items) == sorted(
        ["My name is Dana", "Hi Dana.", "What is my name?", "You are Dana."]
    )
    assert {i.scope.session_id for i in items} == {"chat-1"}


# -- one turn per top-level run -------------------------------------------------------------
def test_a_run_without_a_model_stores_nothing(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory)
    notes = RunnableLambda(lambda q: [Document(page_content=f"a note about {q}")])

    (notes | RunnableLambda(lambda docs: docs[0].page_content)).invoke(
        "lunch", {"callbacks": [handler]}
    )

    assert texts(memory) == []
    assert handler.runs.pending == 0


def test_a_failed_chain_is_forgotten(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory)

    def fail(_: object) -> str:
        raise ValueError("parser broke")

    chain = PROMPT | FakeChat(messages=iter(["fine"])) | RunnableLambda(fail)
    with pytest.raises(ValueError):
        chain.invoke({"question": "this run fails", "history": []}, {"callbacks": [handler]})

    assert texts(memory) == []
    assert handler.runs.pending == 0


def test_a_handler_on_an_inner_chain_captures_that_chains_input(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory)
    inner = (PROMPT | FakeChat(messages=iter(["Porto it is."]))).with_config(callbacks=[handler])
    outer = RunnableLambda(lambda q: {"question": q.strip(), "history": []}) | inner

    outer.invoke("  I moved to Porto  ")

    assert texts(memory) == ["I moved to Porto", "Porto it is."]


def test_an_unreadable_input_falls_back_to_the_models_user_messages(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory)
    prompt = ChatPromptTemplate.from_messages([("human", "{first} and {second}")])

    (prompt | FakeChat(messages=iter(["Both noted."]))).invoke(
        {"first": "tea", "second": "biscuits"}, {"callbacks": [handler]}
    )

    assert texts(memory) == ["tea and biscuits", "Both noted."]


def test_an_agent_run_stores_what_was_said_with_the_tool_traffic_as_sources(
    memory: Memory,
) -> None:
    from langchain.agents import create_agent

    @tool
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"Sunny in {city}"

    model = FakeChat(
        messages=iter(
            [reply("Let me check.", name="lookup", args={"city": "Porto"}), reply("Sunny!")]
        )
    )
    agent = create_agent(model, tools=[lookup])
    handler = MemoryCallbackHandler(memory)

    agent.invoke({"messages": [("user", "Weather in Porto?")]}, {"callbacks": [handler]})

    # what the assistant said before its call is kept; the call and the tool's result
    # are sources of the answer, never memories of their own
    assert texts(memory) == [
        "Weather in Porto?",
        'Let me check.\n[tool call] lookup({"city": "Porto"})',
        "Sunny!",
    ]
    answer = memory.list()[-1]
    assert tool_trail(answer.sources) == ['lookup({"city": "Porto"}) → Sunny in Porto']
    assert handler.runs.pending == 0


def test_abandoned_runs_are_forgotten_beyond_max_open_runs(memory: Memory) -> None:
    handler = MemoryCallbackHandler(memory, max_open_runs=2)
    for _ in range(5):
        handler.on_chain_start({}, {"input": "never ends"}, run_id=uuid4())

    assert handler.runs.pending == 2
