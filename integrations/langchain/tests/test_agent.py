"""MemoryMiddleware inside a real LangChain 1.x create_agent with a fake model."""

from __future__ import annotations

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from memtrellis import Memory
from memtrellis.context import OPEN_TAG
from pydantic import BaseModel

from fakes import FakeChat, reply, texts
from langchain_memtrellis import MemoryMiddleware


@tool
def flight_status(number: str) -> str:
    """The status of a flight."""
    return f"{number} is on time"


def _agent(memory: Memory, model: FakeChat, **options: object):  # type: ignore[no-untyped-def]
    return create_agent(
        model,
        tools=[flight_status],
        system_prompt="You are a travel assistant.",
        middleware=[MemoryMiddleware(memory, **options)],  # type: ignore[arg-type]
        checkpointer=InMemorySaver(),
    )


def _model() -> FakeChat:
    return FakeChat(
        messages=iter(
            [reply(name="flight_status", args={"number": "TP123"}), reply("TP123 is on time.")]
        )
    )


def test_context_is_placed_per_model_call_and_never_checkpointed(memory: Memory) -> None:
    memory.add("Alice is flying TP123 to Lisbon on Friday")
    model = _model()
    agent = _agent(memory, model)
    config = {"configurable": {"thread_id": "trip-1"}}

    state = agent.invoke({"messages": [("user", "Is my TP123 flight on time?")]}, config)

    assert state["messages"][-1].content == "TP123 is on time."
    assert len(model.calls) == 2
    for sent, _ in model.calls:  # both model calls of the loop got memory context
        assert isinstance(sent[0], SystemMessage)
        assert sent[0].content.startswith("You are a travel assistant.\n\n" + OPEN_TAG)
        assert "Alice is flying TP123" in sent[0].content
    saved = agent.get_state(config).values["messages"]
    assert not any(OPEN_TAG in str(m.content) for m in saved)
    assert not any(isinstance(m, SystemMessage) for m in saved)


def test_turns_are_captured_once_with_the_thread_as_session(memory: Memory) -> None:
    agent = _agent(memory, _model())

    agent.invoke(
        {"messages": [("user", "Is my TP123 flight on time?")]},
        {"configurable": {"thread_id": "trip-2"}},
    )

    stored = texts(memory)
    # each model call is captured as it ends: the question and the call, then the answer
    assert sorted(stored) == [
        "Is my TP123 flight on time?",
        "TP123 is on time.",
        '[tool call] flight_status({"number": "TP123"})',
    ]
    assert {i.scope.session_id for i in memory.list()} == {"trip-2"}
    [answer] = [i for i in memory.list() if i.text == "TP123 is on time."]
    assert [s.content for s in answer.sources] == [
        "TP123 is on time.",
        'flight_status({"number": "TP123"})',
        "TP123 is on time",  # the tool's result
    ]


async def test_async_agent(memory: Memory) -> None:
    memory.add("Alice prefers aisle seats")
    model = FakeChat(messages=iter([reply("Aisle seat booked.")]))
    middleware = MemoryMiddleware(memory, entity_id="alice")
    agent = create_agent(model, middleware=[middleware])

    state = await agent.ainvoke({"messages": [("user", "Book me a seat, aisle seats please")]})

    assert state["messages"][-1].content == "Aisle seat booked."
    assert "Alice prefers aisle seats" in model.sent()[0].content
    assert "Aisle seat booked." in texts(memory)
    assert middleware.stats.captured == 1


class City(BaseModel):
    """A city."""

    name: str
    country: str


def test_a_structured_response_is_captured_as_readable_text(memory: Memory) -> None:
    model = FakeChat(
        messages=iter([reply(name="City", args={"name": "Lisbon", "country": "Portugal"})])
    )
    agent = create_agent(
        model, middleware=[MemoryMiddleware(memory)], response_format=ToolStrategy(City)
    )

    state = agent.invoke({"messages": [("user", "Which city is Clara's home?")]})

    assert state["structured_response"] == City(name="Lisbon", country="Portugal")
    assert sorted(texts(memory)) == [
        "City (name: Lisbon; country: Portugal)",
        "Which city is Clara's home?",
    ]


async def test_an_async_structured_response_is_captured(memory: Memory) -> None:
    model = FakeChat(messages=iter([reply(name="City", args={"name": "Porto", "country": "PT"})]))
    agent = create_agent(
        model, middleware=[MemoryMiddleware(memory)], response_format=ToolStrategy(City)
    )

    await agent.ainvoke({"messages": [("user", "A city in the north?")]})

    assert sorted(texts(memory)) == ["A city in the north?", "City (name: Porto; country: PT)"]
