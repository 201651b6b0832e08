"""The agent frameworks' ``relate_memories`` tools (issue 22 item 3): a real Agents SDK
agent and a real PydanticAI agent call the tool with scripted models; each reads one
user's graph and answers exactly as the LangChain and LlamaIndex tools do (the core's
`relations_text`); the calls are not stored as memories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents import Agent, RunConfig, Runner
from memtrellis import Memory
from memtrellis.context import relations_text
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from fakes import ScriptedAgentsModel, text_reply, tool_call
from memtrellis_agents.openai_agents import MemtrellisSession
from memtrellis_agents.openai_agents import relate_tool as agents_relate_tool
from memtrellis_agents.pydantic_ai import MemtrellisCapability
from memtrellis_agents.pydantic_ai import relate_tool as pydantic_relate_tool

RUN = RunConfig(tracing_disabled=True)


@dataclass
class User:
    user_id: str


def _graph(memory: Memory) -> str:
    """Two users' graphs joining Hana to Kyoto through different friends; ana's answer."""
    for user, friend in (("ana", "Kenji"), ("ben", "Yuki")):
        memory.add(f"Hana works with {friend}.", entity_id=user, entities=["Hana", friend])
        memory.add(f"{friend} lives in Kyoto.", entity_id=user, entities=[friend, "Kyoto"])
    expected = relations_text(memory.relate("hana", "Kyoto", entity_id="ana"))
    assert "Kenji" in expected and "Yuki" not in expected
    return expected


async def test_the_agents_sdk_tool_answers_with_the_one_rendering(memory: Memory) -> None:
    expected = _graph(memory)
    model = ScriptedAgentsModel(
        [
            [tool_call("relate_memories", '{"a": "hana", "b": "Kyoto"}', "c1")],
            [text_reply("Through Kenji.", "m1")],
        ]
    )
    tool = agents_relate_tool(memory, entity_id=lambda ctx: ctx.context.user_id)
    agent = Agent(name="helper", model=model, tools=[tool])
    session = MemtrellisSession("s", memory, entity_id="ana")

    result = await Runner.run(
        agent, "How is Hana tied to Kyoto?", context=User("ana"), session=session, run_config=RUN
    )

    assert result.final_output == "Through Kenji."
    [output] = [i for i in model.calls[1][1] if i.get("type") == "function_call_output"]  # type: ignore[union-attr]
    assert output["output"] == expected  # type: ignore[index]
    assert memory.flush(timeout=60)
    said = [m for m in memory.list(entity_id="ana") if m.sources and m.sources[0].role]
    answer = next(m for m in said if m.text == "Through Kenji.")
    assert [s.kind.value for s in answer.sources] == ["chat"]  # the memory tool is left out


async def test_the_pydantic_ai_tool_answers_with_the_one_rendering(memory: Memory) -> None:
    expected = _graph(memory)
    returned: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        results = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if isinstance(last, ModelRequest) and results:
            returned.extend(p.content for p in results)
            return ModelResponse(parts=[TextPart("Through Kenji.")])
        return ModelResponse(parts=[ToolCallPart("relate_memories", {"a": "hana", "b": "Kyoto"})])

    agent = PydanticAgent(
        FunctionModel(model),
        deps_type=User,
        tools=[pydantic_relate_tool(memory, entity_id=lambda ctx: ctx.deps.user_id)],
    )
    capability = MemtrellisCapability(memory, entity_id="ana", session_id="s")
    result = await agent.run(
        "How is Hana tied to Kyoto?", deps=User("ana"), capabilities=[capability]
    )

    assert result.output == "Through Kenji."
    assert returned == [expected]
    assert memory.flush(timeout=60)
    answer = next(m for m in memory.list(entity_id="ana") if m.text == "Through Kenji.")
    assert [s.kind.value for s in answer.sources] == ["chat"]  # the memory tool is left out
