"""Staged memory context in LangGraph apps (issue 22 item 4): the prompt the model
receives holds facts, supporting excerpts with timestamps, the user's open items (one
that recall did not return among them) and the recent conversation, in that order and
within the one token budget. The recent stage holds only conversation the call does not
carry: an app that sends the whole thread gets none (its earlier turns are in the
messages, once), an app that sends only the latest message gets the session's earlier
turns with ``session_history``. Only the LLM is scripted."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from memtrellis import InvalidInputError, Memory, MemoryItem, Scope
from memtrellis.context import CLOSE_TAG, OPEN_TAG
from memtrellis.testing import HashingEmbedder
from memtrellis.tokens import count_tokens
from memtrellis.types import SourceKind, SourceRef

from fakes import FakeChat, StreamingChat
from langchain_memtrellis import ChatMemoryWrapper, MemoryMiddleware

STAGES = ["Facts:", "Sources:", "Open decisions and action items:", "Recent conversation:"]
TICKETS = "Buy the tickets for the Lisbon trip before Friday"
FIRST = "We are planning the museum trip with Bob."
FIRST_ANSWER = "Happy to help with the museum trip."
QUESTION = "Which museums did Alice visit in Porto?"
ANSWER = "The Serralves museum and the Soares dos Reis museum."
QUESTION_FRIDAY = "What is booked for Friday?"
BUDGET = 400
K = 2  # recall returns the two museum facts, not the open item


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as m:
        for museum, day in (("Serralves", 3), ("Soares dos Reis", 9)):
            said = f"Guess what, Alice went to the {museum} museum in Porto with her cousin!"
            m.store(
                MemoryItem(
                    text=f"Alice visited the {museum} museum in Porto.",
                    scope=Scope(entity_id="ann"),
                    sources=[
                        SourceRef(
                            kind=SourceKind.CHAT,
                            role="user",
                            content=said,
                            timestamp=datetime(2026, 1, day, 10, tzinfo=timezone.utc),
                        )
                    ],
                )
            )
        m.add(TICKETS, memory_type="action_item", entity_id="ann")
        yield m


def block_of(sent: list[BaseMessage]) -> str:
    system = "\n".join(str(m.content) for m in sent if isinstance(m, SystemMessage))
    assert system.count(OPEN_TAG) == 1
    return system[system.index(OPEN_TAG) : system.index(CLOSE_TAG) + len(CLOSE_TAG)]


def assert_staged(block: str, *, recent: bool) -> None:
    stages = STAGES if recent else STAGES[:-1]
    assert [s for s in STAGES if s in block] == stages
    positions = [block.index(s) for s in stages]
    assert positions == sorted(positions)
    facts = block.split("Sources:")[0]
    assert "Alice visited the Serralves museum in Porto." in facts
    sources = block.split("Sources:")[1].split("Open decisions")[0]
    assert "- [2026-01-03 10:00, user] Guess what, Alice went to the Serralves" in sources
    assert f"- Action item: {TICKETS} (no deadline" in block
    if recent:
        said = block.split("Recent conversation:\n")[1]
        assert said.splitlines()[:2] == [f"- user: {FIRST}", f"- assistant: {FIRST_ANSWER}"]
    assert count_tokens(block) <= BUDGET


def assert_said_once(sent: list[BaseMessage]) -> None:
    """The first exchange reaches the model once, as messages of the prompt, and the
    memory block does not repeat it."""
    block = block_of(sent)
    everything = "\n".join(str(m.content) for m in sent)
    for text in (FIRST, FIRST_ANSWER):
        assert text not in block
        assert everything.count(text) == 1


def stored(memory: Memory) -> list[tuple[str, str | None]]:
    assert memory.flush(30)
    return sorted((i.text, i.scope.session_id) for i in memory.list(entity_id="ann", limit=100))


def _recall_misses_the_open_item(memory: Memory) -> None:
    recalled = memory.recall(QUESTION, entity_id="ann", k=K)
    assert TICKETS not in [h.memory.text for h in recalled.items]


def _graph(chat: ChatMemoryWrapper, *, latest_only: bool = False) -> Any:
    def model(state: MessagesState) -> dict[str, Any]:
        # latest_only: a stateless call, as an app that trims its history sends
        sent = state["messages"][-1:] if latest_only else state["messages"]
        return {"messages": [chat.invoke(sent)]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    return graph.compile(checkpointer=InMemorySaver())


def _two_turns(app: Any, thread: str) -> str:
    """The first exchange, then the question streamed with stream_mode="messages"."""
    config = {"configurable": {"user_id": "ann", "thread_id": thread}}
    app.invoke({"messages": [("user", FIRST)]}, config)
    chunks = [
        str(m.content)
        for m, _ in app.stream({"messages": [("user", QUESTION)]}, config, stream_mode="messages")
        if str(m.content)
    ]
    return "".join(chunks)


def test_state_graph_with_the_whole_thread_gets_no_turn_twice(memory: Memory) -> None:
    _recall_misses_the_open_item(memory)
    inner = StreamingChat(messages=iter([FIRST_ANSWER, ANSWER]))
    chat = ChatMemoryWrapper(inner, memory=memory, token_budget=BUDGET, k=K, session_history=4)
    assert _two_turns(_graph(chat), "trip-1") == ANSWER

    sent = inner.sent()
    assert [m.type for m in sent] == ["system", "human", "ai", "human"]
    assert_staged(block_of(sent), recent=False)
    assert_said_once(sent)
    assert stored(memory) == sorted(
        [
            ("Alice visited the Serralves museum in Porto.", None),
            ("Alice visited the Soares dos Reis museum in Porto.", None),
            (TICKETS, None),
            (FIRST, "trip-1"),
            (FIRST_ANSWER, "trip-1"),
            (QUESTION, "trip-1"),
            (ANSWER, "trip-1"),
        ]
    )


def test_state_graph_sending_the_latest_message_gets_the_session_turns(memory: Memory) -> None:
    _recall_misses_the_open_item(memory)
    inner = StreamingChat(messages=iter([FIRST_ANSWER, ANSWER]))
    chat = ChatMemoryWrapper(inner, memory=memory, token_budget=BUDGET, k=K, session_history=4)
    assert _two_turns(_graph(chat, latest_only=True), "trip-3") == ANSWER

    sent = inner.sent()
    assert [m.type for m in sent] == ["system", "human"]
    assert_staged(block_of(sent), recent=True)  # the turns the call lacks, once each
    for text in (FIRST, FIRST_ANSWER):
        assert "\n".join(str(m.content) for m in sent).count(text) == 1

    # Without session history (the default) the stateless call gets no recent stage.
    inner = StreamingChat(messages=iter([FIRST_ANSWER, ANSWER]))
    chat = ChatMemoryWrapper(inner, memory=memory, token_budget=BUDGET, k=K)
    assert _two_turns(_graph(chat, latest_only=True), "trip-4") == ANSWER
    assert "Recent conversation:" not in block_of(inner.sent())


def test_create_agent_with_middleware_gets_the_stages_and_no_turn_twice(memory: Memory) -> None:
    _recall_misses_the_open_item(memory)
    model = FakeChat(messages=iter([FIRST_ANSWER, ANSWER]))
    agent = create_agent(
        model,
        tools=[],
        system_prompt="You are a trip planner.",
        middleware=[MemoryMiddleware(memory, token_budget=BUDGET, k=K)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"user_id": "ann", "thread_id": "trip-2"}}

    agent.invoke({"messages": [("user", FIRST)]}, config)
    result = agent.invoke({"messages": [("user", QUESTION)]}, config)

    assert result["messages"][-1].content == ANSWER
    sent = model.sent()
    assert str(sent[0].content).startswith("You are a trip planner.")
    assert_staged(block_of(sent), recent=False)
    assert_said_once(sent)
    state = agent.get_state(config).values["messages"]
    assert not any(OPEN_TAG in str(m.content) for m in state)  # the block is not kept
    assert stored(memory) == sorted(
        [
            ("Alice visited the Serralves museum in Porto.", None),
            ("Alice visited the Soares dos Reis museum in Porto.", None),
            (TICKETS, None),
            (FIRST, "trip-2"),
            (FIRST_ANSWER, "trip-2"),
            (QUESTION, "trip-2"),
            (ANSWER, "trip-2"),
        ]
    )


def test_retriever_takes_the_chat_history_as_a_hint_and_adds_open_items(memory: Memory) -> None:
    from langchain_memtrellis import MemoryRetriever

    memory.add("The restaurant table is booked for Friday", entity_id="ann")
    memory.add("The dentist visit is booked for Friday", entity_id="ann")
    retriever = MemoryRetriever(memory=memory, entity_id="ann", k=1, open_items=True)
    history = [("human", "My tooth hurts, I need my dentist."), ("ai", "Sorry to hear it.")]

    docs = retriever.invoke("What is booked for Friday?", chat_history=history)
    hinted = retriever.invoke("What is booked for Friday?", context_hint="the restaurant table")

    assert docs[0].page_content == "The dentist visit is booked for Friday"
    assert hinted[0].page_content == "The restaurant table is booked for Friday"
    assert [d.page_content for d in docs if d.metadata.get("open_item")] == [TICKETS]


def test_retriever_stage_options_are_checked_and_bound(memory: Memory) -> None:
    from langchain_memtrellis import MemoryRetriever

    memory.add("Book the museum tickets", memory_type="action_item", entity_id="ann")
    for bad in ({"open_items": -1}, {"open_items": "3"}, {"context_hint": 3}):
        with pytest.raises(InvalidInputError, match=next(iter(bad))):
            MemoryRetriever(memory=memory, **bad)
    for limit, expected in ((1, 1), (10, 2), (True, 2)):
        retriever = MemoryRetriever(memory=memory, entity_id="ann", k=1, open_items=limit)
        opened = [d for d in retriever.invoke(QUESTION) if d.metadata.get("open_item")]
        assert len(opened) == expected
    memory.add("The restaurant table is booked for Friday", entity_id="ann")
    memory.add("The dentist visit is booked for Friday", entity_id="ann")
    talks = (
        [("human", "My tooth hurts, I need my dentist.")],
        [("human", "Our restaurant table?")],
    )
    for hint, firsts in ((True, 2), (False, 1)):
        retriever = MemoryRetriever(memory=memory, entity_id="ann", k=1, context_hint=hint)
        found = {retriever.invoke(QUESTION_FRIDAY, chat_history=t)[0].page_content for t in talks}
        assert len(found) == firsts  # steered by each talk, or the same either way
    plain = MemoryRetriever(memory=memory, entity_id="ann", k=1)
    assert not [d for d in plain.invoke("museums?") if d.metadata.get("open_item")]
