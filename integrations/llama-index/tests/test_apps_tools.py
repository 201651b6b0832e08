"""A ``FunctionAgent`` with a real tool and memtrellis's own tool spec, remembering through
the memory block, for two users over two sessions each (issue 23).

Asserted: what the model was sent in the second session (the first session's answer and
the tool call it came from), and exactly which memories, with which sources, were
stored under which user: the answer carries the call and the tool's result; a
``save_memory`` call is the tool's own business (what it saves is stored once, by it).
"""

from __future__ import annotations

from fakes import Call, scripted_llm
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.tools import FunctionTool
from memtrellis import Memory
from memtrellis.context import tool_trail

from llama_index.memory.memtrellis import MemtrellisMemoryBlock, MemtrellisToolSpec


def lookup_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny, 24 degrees in {city}"


def _agent(memory: Memory, user: str, *replies: object) -> tuple[FunctionAgent, object]:
    llm, script = scripted_llm(*replies)
    tools = [FunctionTool.from_defaults(lookup_weather)]
    tools += MemtrellisToolSpec(memory, entity_id=user).to_tool_list()
    return FunctionAgent(llm=llm, tools=tools, system_prompt="Be brief."), script


def _session(memory: Memory, user: str, session: str) -> ChatMemory:
    block = MemtrellisMemoryBlock(memory=memory, entity_id=user, mode="fast")
    return ChatMemory.from_defaults(session_id=session, memory_blocks=[block])


def _stored(memory: Memory, user: str) -> list[tuple[str, str, list[str], list[str]]]:
    """(session, text, source kinds, tool trail) of each memory of one user, by text."""
    assert memory.flush(timeout=60)
    return sorted(
        (m.scope.session_id or "", m.text, [s.kind.value for s in m.sources], tool_trail(m.sources))
        for m in memory.list(entity_id=user, limit=100)
    )


async def test_an_agent_remembers_answers_with_the_tools_they_came_from(memory: Memory) -> None:
    for user, city in (("alice", "Porto"), ("bob", "Oslo")):
        agent, _ = _agent(
            memory, user, Call("lookup_weather", {"city": city}), f"It is sunny in {city}."
        )
        question = f"What's the weather in {city}?"
        reply = await agent.run(question, memory=_session(memory, user, f"{user}-1"))
        assert str(reply) == f"It is sunny in {city}."

    agent, script = _agent(  # type: ignore[assignment]
        memory,
        "alice",
        Call("save_memory", {"content": "Alice loves sunny weather"}),
        "Noted: you love the sun.",
    )
    reply = await agent.run(
        "Sunny again? I love the sun.", memory=_session(memory, "alice", "alice-2")
    )
    assert str(reply) == "Noted: you love the sun."
    prompt = "\n".join(m.content or "" for m in script.calls[0])  # sent in the new session
    assert "It is sunny in Porto." in prompt and "Oslo" not in prompt
    assert 'lookup_weather({"city": "Porto"}) → sunny, 24 degrees in Porto' in (
        prompt.replace("&quot;", '"')
    )

    porto = ['lookup_weather({"city": "Porto"}) → sunny, 24 degrees in Porto']
    assert _stored(memory, "alice") == [
        ("", "Alice loves sunny weather", ["text"], []),  # saved once, by the tool
        ("alice-1", "It is sunny in Porto.", ["chat", "tool_call", "tool_result"], porto),
        ("alice-1", "What's the weather in Porto?", ["chat"], []),
        ("alice-2", "Noted: you love the sun.", ["chat"], []),  # no save_memory source
        ("alice-2", "Sunny again? I love the sun.", ["chat"], []),
    ]
    oslo = ['lookup_weather({"city": "Oslo"}) → sunny, 24 degrees in Oslo']
    assert _stored(memory, "bob") == [
        ("bob-1", "It is sunny in Oslo.", ["chat", "tool_call", "tool_result"], oslo),
        ("bob-1", "What's the weather in Oslo?", ["chat"], []),
    ]
