"""The wrapper and the middleware inside LangGraph apps, built as their users build them.

A ``StateGraph`` with the wrapper as its model node, streamed with
``stream_mode="messages"``; ``create_agent`` with two tools over two sessions of two users
named through the run's ``configurable`` and its LangGraph ``context``, with
``MemoryMiddleware`` and with the wrapper as the agent's model. Only the LLM is scripted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from memtrellis.testing import HashingEmbedder
from pydantic import BaseModel

from fakes import StreamingChat, reply
from langchain_memtrellis import ChatMemoryWrapper, MemoryMiddleware


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Memory]:
    """A store whose default entity is the shared ``default`` one, as an app's would be."""
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        yield memory


def stored(memory: Memory, entity_id: str) -> list[tuple[str, str | None]]:
    """(text, session) of every memory of one entity, in order of text."""
    assert memory.flush(30)
    items = memory.list(entity_id=entity_id, limit=1000)
    return sorted((item.text, item.scope.session_id) for item in items)


def system_text(sent: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in sent if isinstance(m, SystemMessage))


# -- a StateGraph with the wrapper as its model node -------------------------------------


def _graph(chat: ChatMemoryWrapper) -> Any:
    def model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    async def amodel(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model, afunc=amodel)  # type: ignore[call-overload]
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    return graph.compile()


def _streamed(items: list[tuple[Any, dict[str, Any]]]) -> list[tuple[str, str | None]]:
    chunks = [(msg, meta) for msg, meta in items if isinstance(msg, AIMessageChunk)]
    assert all(meta["langgraph_node"] == "model" for _, meta in chunks)
    return [(str(msg.content), msg.id) for msg, _ in chunks]


def test_graph_node_streams_each_chunk_once_with_memories_in_the_prompt(shared: Memory) -> None:
    shared.add("Ann is allergic to peanuts", entity_id="ann")
    inner = StreamingChat(messages=iter(["Try apple slices with yoghurt."]))
    app = _graph(ChatMemoryWrapper(inner, memory=shared))

    items = list(
        app.stream(
            {"messages": [("user", "Which snack is safe with my peanuts allergy?")]},
            {"configurable": {"user_id": "ann", "thread_id": "snacks-1"}},
            stream_mode="messages",
        )
    )

    chunks = _streamed(items)
    words = ["Try", " ", "apple", " ", "slices", " ", "with", " ", "yoghurt."]
    assert [text for text, _ in chunks if text] == words  # each chunk exactly once
    assert {message_id for text, message_id in chunks if text} == {"msg-1"}
    [(sent, _)] = inner.calls
    assert OPEN_TAG in system_text(sent)
    assert "Ann is allergic to peanuts" in system_text(sent)
    assert stored(shared, "ann") == [
        ("Ann is allergic to peanuts", None),
        ("Try apple slices with yoghurt.", "snacks-1"),
        ("Which snack is safe with my peanuts allergy?", "snacks-1"),
    ]
    assert stored(shared, "default") == []


async def test_graph_node_astreams_each_chunk_once(shared: Memory) -> None:
    shared.add("Ben's sister Clara lives in Lisbon", entity_id="ben")
    inner = StreamingChat(messages=iter(["Clara lives in Lisbon."]))
    app = _graph(ChatMemoryWrapper(inner, memory=shared))

    items = [
        item
        async for item in app.astream(
            {"messages": [("user", "Where does my sister Clara live?")]},
            {"configurable": {"user_id": "ben", "thread_id": "family-1"}},
            stream_mode="messages",
        )
    ]

    assert [text for text, _ in _streamed(items) if text] == [
        "Clara",
        " ",
        "lives",
        " ",
        "in",
        " ",
        "Lisbon.",
    ]
    assert "Clara lives in Lisbon" in system_text(inner.sent())
    assert stored(shared, "ben") == [
        ("Ben's sister Clara lives in Lisbon", None),
        ("Clara lives in Lisbon.", "family-1"),
        ("Where does my sister Clara live?", "family-1"),
    ]


class TokenCounter(BaseCallbackHandler):
    """What an app's own token handler (a UI printing tokens) receives."""

    def __init__(self) -> None:
        self.tokens: list[str] = []

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self.tokens.append(token)


async def test_astream_events_and_token_handlers_see_each_chunk_once(shared: Memory) -> None:
    inner = StreamingChat(messages=iter(["one two", "three four"]))
    app = _graph(ChatMemoryWrapper(inner, memory=shared))
    config = {"configurable": {"user_id": "ann"}}

    events = [
        event
        async for event in app.astream_events(
            {"messages": [("user", "count")]}, config, version="v2"
        )
    ]
    counter = TokenCounter()
    list(
        app.stream(
            {"messages": [("user", "count on")]},
            {**config, "callbacks": [counter]},
            stream_mode="messages",
        )
    )

    streamed = [e["data"]["chunk"].content for e in events if e["event"] == "on_chat_model_stream"]
    assert [text for text in streamed if text] == ["one", " ", "two"]
    assert {e["name"] for e in events if e["event"] == "on_chat_model_stream"} == {
        "ChatMemoryWrapper"
    }
    assert [token for token in counter.tokens if token] == ["three", " ", "four"]


# -- create_agent with two tools, two users, two sessions each --------------------------


@tool
def flight_status(number: str) -> str:
    """The status of a flight."""
    return f"status of {number}: on time, gate 12"


@tool
def book_seat(number: str, seat: str) -> str:
    """Book a seat on a flight."""
    return f"booking reference for {number}: {seat.upper()}-77"


@dataclass
class TravelContext:
    user_id: str


ANN_1 = "I fly TP123 to Lisbon and I always want a window seat"
ANN_1_ANSWER = "Your flight TP123 is on time."
BEN_1 = "I fly LH400 to Berlin and I always want an aisle seat"
BEN_1_ANSWER = "Booked an aisle seat on LH400."
ANN_2 = "Book my usual window or aisle seat on my flight"
ANN_2_ANSWER = "Booked a window seat on TP123."
BEN_2 = "Is my flight on time?"
BEN_2_ANSWER = "LH400 is on time."


def _script() -> list[Any]:
    """The model's answers, in the order of the four sessions below."""
    return [
        reply(name="flight_status", args={"number": "TP123"}),
        reply(ANN_1_ANSWER),
        reply(name="book_seat", args={"number": "LH400", "seat": "aisle"}),
        reply(BEN_1_ANSWER),
        reply(name="book_seat", args={"number": "TP123", "seat": "window"}),
        reply(ANN_2_ANSWER),
        reply(name="flight_status", args={"number": "LH400"}),
        reply(BEN_2_ANSWER),
    ]


def _sessions(agent: Any) -> Iterator[tuple[str, list[tuple[Any, dict[str, Any]]]]]:
    """Run the four sessions; Ann is named through the run's configurable in session 1
    and through the LangGraph context in session 2, Ben the other way round."""
    runs = [
        ("ann-1", ANN_1, {"configurable": {"user_id": "ann"}}, None),
        ("ben-1", BEN_1, {}, TravelContext(user_id="ben")),
        ("ann-2", ANN_2, {}, TravelContext(user_id="ann")),
        ("ben-2", BEN_2, {"configurable": {"user_id": "ben"}}, None),
    ]
    for thread, text, config, context in runs:
        configurable = {**config.get("configurable", {}), "thread_id": thread}
        items = list(
            agent.stream(
                {"messages": [("user", text)]},
                {"configurable": configurable},
                context=context,
                stream_mode="messages",
            )
        )
        yield thread, items


#: The tool calls of the four sessions: each model call is captured as it ends, so a call
#: the answer comes after (in the next model call) is a memory too, and a source of it.
CALLS = {
    "ann-1": '[tool call] flight_status({"number": "TP123"})',
    "ben-1": '[tool call] book_seat({"number": "LH400", "seat": "aisle"})',
    "ann-2": '[tool call] book_seat({"number": "TP123", "seat": "window"})',
    "ben-2": '[tool call] flight_status({"number": "LH400"})',
}


def _assert_memories_per_user(memory: Memory) -> None:
    ann = [(ANN_1, "ann-1"), (ANN_1_ANSWER, "ann-1"), (ANN_2, "ann-2"), (ANN_2_ANSWER, "ann-2")]
    ben = [(BEN_1, "ben-1"), (BEN_1_ANSWER, "ben-1"), (BEN_2, "ben-2"), (BEN_2_ANSWER, "ben-2")]
    for said, user in ((ann, "ann"), (ben, "ben")):
        calls = [(CALLS[session], session) for session in (f"{user}-1", f"{user}-2")]
        assert stored(memory, user) == sorted([*said, *calls])
        answers = [m for m in memory.list(entity_id=user) if m.text in {t for t, _ in said[1::2]}]
        assert all([s.kind.value for s in m.sources][1:] == ["tool_call", "tool_result"]
                   for m in answers)  # fmt: skip
    assert stored(memory, "default") == []


def _assert_session_2_of_ann_recalls_only_ann(model: StreamingChat) -> None:
    # The two model calls of Ann's second session (the tool call, then the answer).
    for sent, _ in model.calls[4:6]:
        system = system_text(sent)
        assert "always want a window seat" in system
        assert "always want an aisle seat" not in system  # Ben's fact
        assert "LH400" not in system and "Berlin" not in system


def _agent(model: Any, memory: Memory, middleware: list[Any]) -> Any:
    return create_agent(
        model,
        tools=[flight_status, book_seat],
        system_prompt="You are a travel assistant.",
        middleware=middleware,
        context_schema=TravelContext,
        checkpointer=InMemorySaver(),
    )


def test_agent_with_middleware_keeps_each_users_memories_apart(shared: Memory) -> None:
    model = StreamingChat(messages=iter(_script()))
    agent = _agent(model, shared, [MemoryMiddleware(shared)])

    for _thread, items in _sessions(agent):
        tools = [m for m, _ in items if isinstance(m, ToolMessage)]
        assert len(tools) == 1  # each session called one tool

    _assert_memories_per_user(shared)
    _assert_session_2_of_ann_recalls_only_ann(model)
    state = agent.get_state({"configurable": {"thread_id": "ann-2"}}).values
    assert not any(OPEN_TAG in str(m.content) for m in state["messages"])


def test_agent_with_the_wrapper_as_model_streams_once_and_keeps_users_apart(
    shared: Memory,
) -> None:
    model = StreamingChat(messages=iter(_script()))
    agent = _agent(ChatMemoryWrapper(model, memory=shared), shared, [])

    answers = [ANN_1_ANSWER, BEN_1_ANSWER, ANN_2_ANSWER, BEN_2_ANSWER]
    for (_thread, items), answer in zip(_sessions(agent), answers, strict=True):
        chunks = [m for m, _ in items if isinstance(m, AIMessageChunk)]
        ids = [m.id for m in chunks if m.content or m.tool_call_chunks]
        assert len(set(ids)) == 2  # the tool call, then the answer
        texts = [str(m.content) for m in chunks if m.content]
        assert "".join(texts) == answer  # every chunk of the answer, once
        calls = [c for m in chunks for c in m.tool_call_chunks]
        assert len(calls) == 1  # the tool call streamed once
        assert len([m for m, _ in items if isinstance(m, ToolMessage)]) == 1

    _assert_memories_per_user(shared)
    _assert_session_2_of_ann_recalls_only_ann(model)


async def test_agent_with_the_wrapper_as_model_astreams_once(shared: Memory) -> None:
    model = StreamingChat(messages=iter(_script()[:2]))
    agent = _agent(ChatMemoryWrapper(model, memory=shared), shared, [])

    items = [
        item
        async for item in agent.astream(
            {"messages": [("user", ANN_1)]},
            {"configurable": {"thread_id": "ann-1"}},
            context=TravelContext(user_id="ann"),
            stream_mode="messages",
        )
    ]

    chunks = [m for m, _ in items if isinstance(m, AIMessageChunk)]
    assert "".join(str(m.content) for m in chunks) == ANN_1_ANSWER
    assert len([c for m in chunks for c in m.tool_call_chunks]) == 1
    assert stored(shared, "ann") == sorted(
        [(ANN_1, "ann-1"), (CALLS["ann-1"], "ann-1"), (ANN_1_ANSWER, "ann-1")]
    )


class Trip(BaseModel):
    """A trip."""

    city: str
    days: int


def test_a_structured_output_node_streams_its_tool_call_once(shared: Memory) -> None:
    call = reply(name="Trip", args={"city": "Lisbon", "days": 3})
    chat = ChatMemoryWrapper(StreamingChat(messages=iter([call])), memory=shared)
    planner = chat.with_structured_output(Trip)

    def plan(state: MessagesState) -> dict[str, Any]:
        trip = planner.invoke(state["messages"])
        return {"messages": [("assistant", f"{trip.days} days in {trip.city}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("plan", plan)
    graph.add_edge(START, "plan")
    items = list(
        graph.compile().stream(
            {"messages": [("user", "Plan three days in Lisbon")]},
            {"configurable": {"user_id": "ann"}},
            stream_mode="messages",
        )
    )

    chunks = [m for m, _ in items if isinstance(m, AIMessageChunk)]
    assert len([c for m in chunks for c in m.tool_call_chunks]) == 1
    assert stored(shared, "ann") == [
        ("Plan three days in Lisbon", None),
        ("Trip (city: Lisbon; days: 3)", None),
    ]
