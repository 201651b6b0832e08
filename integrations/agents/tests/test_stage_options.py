"""The block's stage options in the agent-framework adapters (issue 22 item 4): the Agents
SDK's MemoryInstructions and PydanticAI's capability take ``recent_turns``,
``open_items``, ``context_hint`` and ``session_history`` (bad values: InvalidInputError),
and a run that sends only its question gets the session's earlier turns once, in the
instructions' recent stage; the real frameworks with scripted models."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from memtrellis import InvalidInputError, Memory
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from fakes import ScriptedAgentsModel, text_reply
from memtrellis_agents.openai_agents import MemoryInstructions, MemtrellisSession
from memtrellis_agents.pydantic_ai import MemtrellisCapability

RUN = RunConfig(tracing_disabled=True)
FIRST, FIRST_ANSWER = "I am planning a trip with my cousin.", "A trip sounds fun."
QUESTION = "Which museum should I visit?"
BAD = [
    {"recent_turns": -1},
    {"recent_turns": "4"},
    {"open_items": 101},
    {"open_items": True},
    {"context_hint": "no"},
    {"session_history": 1.5},
]
STAGES = {"recent_turns": 2, "open_items": 0, "context_hint": False, "session_history": 6}


@pytest.mark.parametrize("bad", BAD, ids=lambda bad: f"{next(iter(bad))}={bad}")
def test_a_bad_stage_option_is_a_typed_error(memory: Memory, bad: dict[str, Any]) -> None:
    name = next(iter(bad))
    for make in (
        lambda: MemoryInstructions(memory, "Be brief.", **bad),
        lambda: MemtrellisCapability(memory, **bad),
        lambda: memory.register(openai_agents=Agent(name="a"), **bad),
        lambda: memory.register(pydantic_ai=PydanticAgent(), **bad),
    ):
        with pytest.raises(InvalidInputError, match=name):
            make()


def test_the_stage_options_reach_the_binding(memory: Memory) -> None:
    agent = memory.register(openai_agents=Agent(name="a"), **STAGES)
    for binding in (
        MemoryInstructions(memory, **STAGES).binding,
        MemtrellisCapability(memory, **STAGES).binding,
        agent.instructions.binding,
        memory.register(pydantic_ai=PydanticAgent(), **STAGES).binding,
    ):
        assert {name: getattr(binding.options, name) for name in STAGES} == STAGES


def _recent_once(instructions: str | None) -> None:
    """The first exchange is in the instructions once each, the recent stage among them."""
    assert instructions is not None and "Recent conversation:" in instructions
    for text in (FIRST, FIRST_ANSWER):
        assert instructions.count(text) == 1


async def test_agents_sdk_run_with_a_fresh_history_gets_the_session_turns(
    memory: Memory,
) -> None:
    memory.add("Ana's favourite museum is the Serralves museum.", entity_id="ana")
    model = ScriptedAgentsModel(
        [[text_reply(FIRST_ANSWER, "m1")], [text_reply("Serralves.", "m2")]]
    )
    instructions = MemoryInstructions(memory, "Be brief.", entity_id="ana", k=1, session_history=4)
    agent = Agent(name="helper", instructions=instructions, model=model)

    with memory.scope(session_id="s1"):  # a new in-memory history per request: stateless
        for text in (FIRST, QUESTION):
            session = MemtrellisSession("s1", memory, entity_id="ana")
            await Runner.run(agent, text, session=session, run_config=RUN)

    sent_instructions, sent = model.calls[1]
    assert len(sent) == 1  # only the question was sent
    _recent_once(sent_instructions)


async def test_pydantic_ai_run_without_history_gets_the_session_turns(memory: Memory) -> None:
    memory.add("Ana's favourite museum is the Serralves museum.", entity_id="ana")
    seen: list[tuple[str | None, list[ModelMessage]]] = []
    replies = iter([FIRST_ANSWER, "Serralves.", FIRST_ANSWER, "Serralves."])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((info.instructions, list(messages)))
        return ModelResponse(parts=[TextPart(next(replies))])

    agent = PydanticAgent(FunctionModel(model), instructions="Be brief.")
    with_history = MemtrellisCapability(
        memory, entity_id="ana", session_id="s1", k=1, session_history=4
    )
    for text in (FIRST, QUESTION):  # each run without the earlier messages
        await agent.run(text, capabilities=[with_history])
    _recent_once(seen[1][0])

    # the default (session_history=0) places no recent stage
    plain = MemtrellisCapability(memory, entity_id="ana", session_id="s2", k=1)
    for text in (FIRST, QUESTION):
        await agent.run(text, capabilities=[plain])
    assert "Recent conversation:" not in (seen[3][0] or "")
