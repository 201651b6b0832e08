"""A ``create_agent`` app with a real tool and memtrellis's own memory tools, streamed, for
two users over two sessions each (issue 23): what was streamed, what the model was sent,
and exactly which memories, with which sources, were stored under which user.

The model is scripted; the agent, its tool node, the checkpointer, the middleware and the
store are real. ``MemoryMiddleware`` captures each model call: the call that asks for a
tool stores the question and the call; the call after the tool's result stores the
answer, whose sources are the call and the result it came from. A ``save_memory`` call is
the tool's own business: what it saves is stored once, by the tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from memtrellis import Memory, MemoryItem
from memtrellis.context import tool_trail

from fakes import StreamingChat
from langchain_memtrellis import MemoryMiddleware, memory_tools
from langchain_memtrellis.tools import SAVED_TAG


@dataclass
class UserContext:
    user_id: str


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"18 °C and sunny in {city}"


def _call(call_id: str, name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"id": call_id, "name": name, "args": args}])


def _stream(agent: Any, text: str, user: str, thread: str) -> tuple[str, list[Any]]:
    """Run one turn streamed as a chat UI does; the answer's text and the tool messages."""
    pieces, tools = [], []
    for chunk, _ in agent.stream(
        {"messages": [("user", text)]},
        {"configurable": {"thread_id": thread}},
        context=UserContext(user),
        stream_mode="messages",
    ):
        if isinstance(chunk, AIMessageChunk):
            pieces.append(chunk.text)
        elif isinstance(chunk, ToolMessage):
            tools.append(chunk)
    return "".join(pieces), tools


def _stored(memory: Memory, user: str) -> list[tuple[str | None, str, list[str], list[str]]]:
    """(session, text, source kinds, tool trail) of each memory of one user, by text."""
    assert memory.flush(30)
    items: list[MemoryItem] = memory.list(entity_id=user, limit=100)
    return sorted(
        (
            item.scope.session_id,
            item.text,
            [s.kind.value for s in item.sources],
            tool_trail(item.sources),
        )
        for item in items
    )


def test_a_tool_using_agent_stores_answers_with_the_tools_they_came_from(memory: Memory) -> None:
    model = StreamingChat(
        messages=iter(
            [
                _call("c1", "get_weather", city="Porto"),
                AIMessage("It is 18 °C and sunny in Porto."),
                _call("c2", "get_weather", city="Lisbon"),
                AIMessage("Lisbon is sunny, 18 °C."),
                _call("c3", "save_memory", content="Ana loves sunny days"),
                AIMessage("Noted: you love sunny days."),
                AIMessage("You're welcome, Bo."),
            ]
        )
    )
    agent = create_agent(
        model,
        tools=[get_weather, *memory_tools(memory)],
        system_prompt="You are a weather assistant.",
        middleware=[MemoryMiddleware(memory, capture_mode="fast")],
        context_schema=UserContext,
        checkpointer=InMemorySaver(),
    )

    answer, tools = _stream(agent, "What's the weather in Porto?", "ana", "ana-1")
    assert answer == "It is 18 °C and sunny in Porto."
    assert [t.content for t in tools] == ["18 °C and sunny in Porto"]
    answer, tools = _stream(agent, "And in Lisbon?", "bo", "bo-1")
    assert (answer, tools[0].tool_call_id) == ("Lisbon is sunny, 18 °C.", "c2")
    memory.flush(30)

    # A new session of ana's: the model is shown what her earlier answer came from.
    answer, tools = _stream(agent, "Is Porto sunny again? I love sunny days.", "ana", "ana-2")
    assert answer == "Noted: you love sunny days."
    assert tools[0].content.startswith("Saved memory ")
    system = model.sent(-2)[0]
    assert isinstance(system, SystemMessage)
    assert "It is 18 °C and sunny in Porto." in system.content
    assert 'get_weather({"city": "Porto"}) → 18 °C and sunny in Porto' in (
        system.content.replace("&quot;", '"')
    )
    assert "Lisbon" not in system.content  # bo's memories are his
    answer, _ = _stream(agent, "Thanks!", "bo", "bo-2")
    assert answer == "You're welcome, Bo."

    porto = ['get_weather({"city": "Porto"}) → 18 °C and sunny in Porto']
    assert _stored(memory, "ana") == [
        ("ana-1", "It is 18 °C and sunny in Porto.", ["chat", "tool_call", "tool_result"], porto),
        ("ana-1", "What's the weather in Porto?", ["chat"], []),
        (
            "ana-1",
            '[tool call] get_weather({"city": "Porto"})',
            ["chat", "tool_call"],
            ['get_weather({"city": "Porto"})'],
        ),
        ("ana-2", "Ana loves sunny days", [], []),  # saved once, by the tool
        ("ana-2", "Is Porto sunny again? I love sunny days.", ["chat"], []),
        ("ana-2", "Noted: you love sunny days.", ["chat"], []),  # no save_memory source
    ]
    [saved] = [m for m in memory.list(entity_id="ana") if SAVED_TAG in m.tags]
    assert saved.text == "Ana loves sunny days"
    lisbon = ['get_weather({"city": "Lisbon"}) → 18 °C and sunny in Lisbon']
    assert _stored(memory, "bo") == [
        ("bo-1", "And in Lisbon?", ["chat"], []),
        ("bo-1", "Lisbon is sunny, 18 °C.", ["chat", "tool_call", "tool_result"], lisbon),
        (
            "bo-1",
            '[tool call] get_weather({"city": "Lisbon"})',
            ["chat", "tool_call"],
            ['get_weather({"city": "Lisbon"})'],
        ),
        ("bo-2", "Thanks!", ["chat"], []),
        ("bo-2", "You're welcome, Bo.", ["chat"], []),
    ]
