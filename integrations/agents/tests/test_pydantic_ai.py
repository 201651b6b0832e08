"""PydanticAI with memtrellis, app level: the real Agent and capability hooks with its own
scripted model (FunctionModel); what the model was sent and what was stored, per user."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from memtrellis import InvalidInputError, Memory
from memtrellis.context import tool_trail
from memtrellis.registry import integration_names
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memtrellis_agents.pydantic_ai import MemtrellisCapability, turn_of


@dataclass
class Deps:
    user_id: str


class Scripted:
    """A FunctionModel function that answers from a script and records each request:
    the instructions and the messages the model received."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.instructions: list[str | None] = []
        self.messages: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        self.messages.append(list(messages))
        return ModelResponse(parts=[TextPart(self.replies.pop(0))])


def stored(memory: Memory, entity_id: str) -> list[str]:
    assert memory.flush(timeout=60)
    return sorted(item.text for item in memory.list(entity_id=entity_id))


def parts_text(messages: list[ModelMessage]) -> str:
    return repr([part for message in messages for part in message.parts])


async def test_two_users_two_sessions_recall_in_instructions_and_store_each_turn_once(
    memory: Memory,
) -> None:
    script = Scripted(
        [
            "Noted: no peanuts.",
            "A cello, lovely.",
            "Good to know.",
            "Bring apple slices.",
            "You play the cello.",
        ]
    )
    agent = Agent(
        FunctionModel(script), deps_type=Deps, instructions="Be brief.", system_prompt="You help."
    )
    capability = memory.register(
        pydantic_ai=agent, entity_id=lambda ctx: ctx.deps.user_id, session_id="first"
    )
    alice, bob = Deps("alice"), Deps("bob")

    # First sessions; alice's has two runs that share one message history.
    run = await agent.run("I am allergic to peanuts", deps=alice, capabilities=[capability])
    await agent.run("I play the cello", deps=bob, capabilities=[capability])
    assert memory.flush(timeout=60)  # captured turns are stored in the background
    await agent.run(
        "My sister is Jo",
        deps=alice,
        message_history=run.all_messages(),
        capabilities=[capability],
    )
    assert script.instructions[0] == "Be brief."  # nothing recalled yet
    # The history the run was given carries the first turn: the instructions do not
    # repeat it (the model reads it once, in the messages).
    assert "allergic to peanuts" not in (script.instructions[2] or "")
    assert parts_text(script.messages[2]).count("I am allergic to peanuts") == 1

    # Second sessions: a new history; each user's memory in the instructions only.
    second = MemtrellisCapability(
        memory, entity_id=lambda ctx: ctx.deps.user_id, session_id="second"
    )
    await agent.run("Which snack should I bring?", deps=alice, capabilities=[second])
    await agent.run("Which instrument do I play?", deps=bob, capabilities=[second])

    alice_instructions, bob_instructions = script.instructions[3], script.instructions[4]
    assert alice_instructions is not None and bob_instructions is not None
    assert alice_instructions.startswith("Be brief.")
    assert "<memory_context>" in alice_instructions
    assert "allergic to peanuts" in alice_instructions and "cello" not in alice_instructions
    assert "cello" in bob_instructions and "peanuts" not in bob_instructions
    # What the model received besides the instructions: the system prompt and the question.
    assert "<memory_context>" not in parts_text(script.messages[3])
    assert "Which snack should I bring?" in parts_text(script.messages[3])

    # Exactly the users' and the model's words, once each, under the right user: no
    # system prompt, no instructions, no memory block, no turn stored twice.
    assert stored(memory, "alice") == [
        "Bring apple slices.",
        "Good to know.",
        "I am allergic to peanuts",
        "My sister is Jo",
        "Noted: no peanuts.",
        "Which snack should I bring?",
    ]
    assert stored(memory, "bob") == [
        "A cello, lovely.",
        "I play the cello",
        "Which instrument do I play?",
        "You play the cello.",
    ]
    sessions = {item.text: item.scope.session_id for item in memory.list(entity_id="alice")}
    assert sessions["My sister is Jo"] == "first"
    assert sessions["Bring apple slices."] == "second"
    assert memory.health().adapter_counts["pydantic_ai.capture"] == 5
    assert "pydantic_ai" in integration_names()


async def test_an_agents_own_capability_and_a_tool_run_capture_question_and_answer(
    memory: Memory,
) -> None:
    calls: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(info.instructions)
        if len(calls) == 1:
            return ModelResponse(parts=[ToolCallPart("weather", {"city": "Lyon"})])
        return ModelResponse(parts=[TextPart("It is sunny in Lyon.")])

    memory.add("Ana lives in Lyon", entity_id="ana")
    agent = Agent(
        FunctionModel(model), capabilities=[MemtrellisCapability(memory, entity_id="ana")]
    )

    @agent.tool_plain
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    result = await agent.run("What is the weather where I live?")

    assert result.output == "It is sunny in Lyon."
    # Recalled for both requests of the run (before the tool call and after it).
    assert all("Ana lives in Lyon" in (text or "") for text in calls) and len(calls) == 2
    assert stored(memory, "ana") == [
        "Ana lives in Lyon",
        "It is sunny in Lyon.",
        "What is the weather where I live?",
    ]
    # the answer's memory carries the tool call and its return as sources
    [answer] = [m for m in memory.list(entity_id="ana") if m.text.startswith("It is")]
    assert [s.kind.value for s in answer.sources] == ["chat", "tool_call", "tool_result"]
    assert tool_trail(answer.sources) == ['weather({"city":"Lyon"}) → Sunny in Lyon']


def test_run_sync_and_a_scope_block(memory: Memory) -> None:
    script = Scripted(["Noted."])
    agent = Agent(FunctionModel(script))

    with memory.scope(entity_id="carol"):
        agent.run_sync("I live in Oslo", capabilities=[MemtrellisCapability(memory)])

    assert stored(memory, "carol") == ["I live in Oslo", "Noted."]


async def test_a_recall_failure_leaves_the_instructions_and_is_counted(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = Scripted(["Hello."])
    agent = Agent(FunctionModel(script), instructions="Be brief.")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TimeoutError("store offline")

    monkeypatch.setattr(memory, "arecall", broken)
    result = await agent.run(
        "Hi there", capabilities=[MemtrellisCapability(memory, entity_id="ana")]
    )

    assert result.output == "Hello."
    assert script.instructions == ["Be brief."]
    assert memory.health().adapter_failures == {"pydantic_ai.recall": 1}
    assert stored(memory, "ana") == ["Hello.", "Hi there"]  # capture still ran


async def test_capture_false_only_recalls(memory: Memory) -> None:
    agent = Agent(FunctionModel(Scripted(["Hello."])))

    recall_only = MemtrellisCapability(memory, entity_id="ana", capture=False)
    await agent.run("Hi", capabilities=[recall_only])

    assert stored(memory, "ana") == []


def test_register_refuses_what_is_not_an_agent(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"pydantic_ai\.Agent"):
        memory.register(pydantic_ai=object())
    with pytest.raises(InvalidInputError, match="Memory"):
        MemtrellisCapability(object())  # type: ignore[arg-type]


def test_a_history_yields_the_words_and_tool_calls_never_instructions() -> None:
    history: list[ModelMessage] = [
        ModelRequest(
            parts=[SystemPromptPart("You help.")],
            instructions="Be brief.\n\n<memory_context>\n- x\n</memory_context>",
        ),
        ModelResponse(parts=[ToolCallPart("weather", {"city": "Oslo"}, "call_7")]),
    ]

    call = {"name": "weather", "arguments": '{"city":"Oslo"}', "id": "call_7"}
    assert turn_of(history) == [{"role": "assistant", "content": "", "tool_calls": [call]}]


async def test_concurrent_runs_of_two_users_keep_their_memories_apart(memory: Memory) -> None:
    memory.add("Gil is allergic to shellfish", entity_id="gil")
    memory.add("Hana is allergic to gluten", entity_id="hana")
    seen: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        [question] = [m["content"] for m in turn_of(messages) if m["role"] == "user"]
        seen[question] = info.instructions or ""
        return ModelResponse(parts=[TextPart(f"Answer to {question}")])

    agent = Agent(FunctionModel(model), deps_type=Deps)
    capability = MemtrellisCapability(memory, entity_id=lambda ctx: ctx.deps.user_id)

    await asyncio.gather(
        *(
            agent.run(f"What can {user} eat?", deps=Deps(user), capabilities=[capability])
            for user in ("gil", "hana")
        )
    )

    assert "shellfish" in seen["What can gil eat?"] and "gluten" not in seen["What can gil eat?"]
    assert "gluten" in seen["What can hana eat?"] and "shellfish" not in seen["What can hana eat?"]
    assert stored(memory, "gil") == [
        "Answer to What can gil eat?",
        "Gil is allergic to shellfish",
        "What can gil eat?",
    ]


async def test_a_streamed_run_is_captured_once(memory: Memory) -> None:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for chunk in ("Noted, ", "Lima."):
            yield chunk

    agent = Agent(FunctionModel(stream_function=stream))
    capability = MemtrellisCapability(memory, entity_id="ivy")

    async with agent.run_stream("I live in Lima", capabilities=[capability]) as streamed:
        assert await streamed.get_output() == "Noted, Lima."

    assert stored(memory, "ivy") == ["I live in Lima", "Noted, Lima."]
