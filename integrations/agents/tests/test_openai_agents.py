"""The OpenAI Agents SDK with memtrellis, app level: the real Agent, Runner and session
protocol with a scripted model; what the model was sent and what was stored, per user."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.memory import Session
from memtrellis import InvalidInputError, Memory
from memtrellis.context import tool_trail
from memtrellis.registry import integration_names

from fakes import ScriptedAgentsModel, text_reply, tool_call
from memtrellis_agents.openai_agents import MemoryInstructions, MemtrellisSession, item_message

RUN = RunConfig(tracing_disabled=True)


@dataclass
class User:
    user_id: str


def stored(memory: Memory, entity_id: str) -> list[str]:
    assert memory.flush(timeout=60)
    return sorted(item.text for item in memory.list(entity_id=entity_id))


def test_the_session_is_the_sdks_session_protocol(memory: Memory) -> None:
    session = MemtrellisSession("s1", memory, entity_id="alice")

    assert isinstance(session, Session)
    assert "openai_agents" in integration_names()


async def test_two_users_two_sessions_recall_in_instructions_and_store_each_turn_once(
    memory: Memory,
) -> None:
    model = ScriptedAgentsModel(
        [
            [text_reply("Noted: no peanuts for you.", "msg_a1")],
            [text_reply("A cello, how lovely.", "msg_b1")],
            [text_reply("Bring apple slices.", "msg_a2")],
            [text_reply("You play the cello.", "msg_b2")],
        ]
    )
    agent = Agent[User](
        name="helper",
        instructions="Be brief.",
        model=model,
    )
    # One agent serves every user: whose memory is read from the run's context.
    agent = memory.register(openai_agents=agent, entity_id=lambda ctx: ctx.context.user_id)
    alice, bob = User("alice"), User("bob")

    # First sessions: nothing to recall yet.
    a1 = MemtrellisSession("alice-1", memory, entity_id="alice")
    b1 = MemtrellisSession("bob-1", memory, entity_id="bob")
    first = await Runner.run(
        agent, "I am allergic to peanuts", session=a1, context=alice, run_config=RUN
    )
    await Runner.run(agent, "I play the cello", session=b1, context=bob, run_config=RUN)
    assert first.final_output == "Noted: no peanuts for you."
    assert model.calls[0][0] == "Be brief."  # no memory yet: the instructions as given
    assert stored(memory, "alice") == ["I am allergic to peanuts", "Noted: no peanuts for you."]

    # Second sessions: each user's memory in the instructions, never the other's.
    a2 = MemtrellisSession("alice-2", memory, entity_id="alice")
    b2 = MemtrellisSession("bob-2", memory, entity_id="bob")
    snack, instrument = "Which snack should I bring?", "Which instrument do I play?"
    await Runner.run(agent, snack, session=a2, context=alice, run_config=RUN)
    await Runner.run(agent, instrument, session=b2, context=bob, run_config=RUN)

    alice_instructions, alice_input = model.calls[2]
    bob_instructions, bob_input = model.calls[3]
    assert alice_instructions is not None and bob_instructions is not None
    assert alice_instructions.startswith("Be brief.\n\n<memory_context>")
    assert "allergic to peanuts" in alice_instructions and "cello" not in alice_instructions
    assert "cello" in bob_instructions and "peanuts" not in bob_instructions
    # The new session's history is only its own message; memory is not in the input.
    assert alice_input == [{"role": "user", "content": "Which snack should I bring?"}]
    assert "<memory_context>" not in json.dumps(bob_input)

    # Exactly the users' and the agent's words, once each, under the right user.
    assert stored(memory, "alice") == [
        "Bring apple slices.",
        "I am allergic to peanuts",
        "Noted: no peanuts for you.",
        "Which snack should I bring?",
    ]
    assert stored(memory, "bob") == [
        "A cello, how lovely.",
        "I play the cello",
        "Which instrument do I play?",
        "You play the cello.",
    ]
    by_session = {item.text: item.scope.session_id for item in memory.list(entity_id="bob")}
    assert by_session["I play the cello"] == "bob-1"
    assert by_session["You play the cello."] == "bob-2"
    # The session keeps the SDK's items verbatim.
    assert [item_message(i) for i in await a2.get_items()] == [  # type: ignore[arg-type]
        {"role": "user", "content": "Which snack should I bring?"},
        {"role": "assistant", "content": "Bring apple slices.", "id": "msg_a2"},
    ]
    assert memory.health().adapter_counts["openai_agents.capture"] == 4


async def test_a_second_turn_in_one_session_stores_only_the_new_turn(memory: Memory) -> None:
    model = ScriptedAgentsModel(
        [[text_reply("Porto is lovely.", "msg_1")], [text_reply("In Porto.", "msg_2")]]
    )
    agent = Agent(
        name="helper",
        instructions=MemoryInstructions(memory, "Be brief.", entity_id="ana"),
        model=model,
    )
    session = MemtrellisSession("s", memory, entity_id="ana")

    await Runner.run(agent, "I moved to Porto", session=session, run_config=RUN)
    assert memory.flush(timeout=60)
    await Runner.run(agent, "Where do I live?", session=session, run_config=RUN)

    instructions, sent = model.calls[1]
    # The session's history, then the question: the instructions do not repeat it.
    assert len(sent) == 3
    assert instructions is not None and "I moved to Porto" not in instructions
    assert str(sent).count("I moved to Porto") == 1
    assert stored(memory, "ana") == [
        "I moved to Porto",
        "In Porto.",
        "Porto is lovely.",
        "Where do I live?",
    ]


async def test_tool_calls_stay_in_the_history_and_the_answer_is_captured_once(
    memory: Memory,
) -> None:
    @function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    model = ScriptedAgentsModel(
        [
            [tool_call("weather", '{"city": "Lyon"}', "call_1")],
            [text_reply("It is sunny in Lyon.", "msg_2")],
        ]
    )
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[weather])
    session = MemtrellisSession("s", memory, entity_id="ana")

    result = await Runner.run(agent, "Weather in Lyon?", session=session, run_config=RUN)

    assert result.final_output == "It is sunny in Lyon."
    kinds = [item.get("type", "message") for item in await session.get_items()]  # type: ignore[union-attr]
    assert kinds == ["message", "function_call", "function_call_output", "message"]
    assert stored(memory, "ana") == ["It is sunny in Lyon.", "Weather in Lyon?"]
    # the answer's memory carries the call and the tool's output it came from
    [answer] = [m for m in memory.list(entity_id="ana") if m.text.startswith("It is")]
    assert [s.kind.value for s in answer.sources] == ["chat", "tool_call", "tool_result"]
    assert answer.sources[1].tool is not None and answer.sources[1].tool.call_id == "call_1"
    assert tool_trail(answer.sources) == ['weather({"city": "Lyon"}) → Sunny in Lyon']


async def test_a_scope_block_names_the_user_and_pop_item_drops_an_unanswered_message(
    memory: Memory,
) -> None:
    session = MemtrellisSession("s", memory, history=SQLiteSession("s"))

    with memory.scope(entity_id="carol"):
        await session.add_items([{"role": "user", "content": "Forget this question"}])
        popped = await session.pop_item()
        await session.add_items([{"role": "user", "content": "I live in Oslo"}])
        await session.add_items([text_reply("Oslo it is.", "msg_1").model_dump()])  # type: ignore[list-item]

    assert popped == {"role": "user", "content": "Forget this question"}
    assert stored(memory, "carol") == ["I live in Oslo", "Oslo it is."]
    await session.clear_session()
    assert await session.get_items() == []
    assert stored(memory, "carol") == ["I live in Oslo", "Oslo it is."]  # memories stay


async def test_a_recall_failure_leaves_the_instructions_and_is_counted(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedAgentsModel([[text_reply("Hello.", "msg_1")]])
    agent = Agent(
        name="helper",
        instructions=MemoryInstructions(memory, "Be brief.", entity_id="ana"),
        model=model,
    )

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TimeoutError("store offline")

    monkeypatch.setattr(memory, "recall", broken)
    monkeypatch.setattr(memory, "arecall", broken)
    result = await Runner.run(agent, "Hi there", run_config=RUN)

    assert result.final_output == "Hello."
    assert model.calls[0][0] == "Be brief."
    assert memory.health().adapter_failures == {"openai_agents.recall": 1}


def test_register_and_the_session_refuse_what_they_cannot_wrap(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"agents\.Agent"):
        memory.register(openai_agents=object())
    with pytest.raises(InvalidInputError, match="session_id: an option of MemtrellisSession"):
        memory.register(openai_agents=Agent(name="a"), session_id="s1")
    with pytest.raises(InvalidInputError, match="session_id"):
        MemtrellisSession("", memory)
    with pytest.raises(InvalidInputError, match="Memory"):
        MemtrellisSession("s", object())  # type: ignore[arg-type]


async def test_dynamic_base_instructions_are_kept_and_never_wrapped_twice(memory: Memory) -> None:
    memory.add("Dan is vegan", entity_id="dan")

    async def base(ctx: Any, agent: Any) -> str:
        return f"You help {agent.name}."

    model = ScriptedAgentsModel([[text_reply("Try lentils.", "msg_1")]])
    inner = MemoryInstructions(memory, base, entity_id="dan")
    agent = memory.register(
        openai_agents=Agent(name="chef", instructions=inner, model=model), entity_id="dan"
    )

    await Runner.run(agent, "Dinner idea for a vegan?", run_config=RUN)

    [(instructions, _)] = model.calls
    assert instructions is not None and instructions.startswith("You help chef.")
    assert instructions.count("<memory_context>") == 1 and "Dan is vegan" in instructions


async def test_answers_of_models_without_response_ids_are_each_stored(memory: Memory) -> None:
    # The SDK's Chat Completions and LiteLLM models give every message the id __fake_id__.
    model = ScriptedAgentsModel(
        [[text_reply("Noted, Lyon.", "__fake_id__")], [text_reply("Noted, tea.", "__fake_id__")]]
    )
    agent = Agent(name="helper", instructions="Be brief.", model=model)
    session = MemtrellisSession("s", memory, entity_id="eve")

    await Runner.run(agent, "I live in Lyon", session=session, run_config=RUN)
    assert memory.flush(timeout=60)
    await Runner.run(agent, "I like tea", session=session, run_config=RUN)

    assert stored(memory, "eve") == ["I like tea", "I live in Lyon", "Noted, Lyon.", "Noted, tea."]


async def test_a_streamed_run_recalls_and_captures_like_a_plain_one(memory: Memory) -> None:
    memory.add("Fay takes the night train", entity_id="fay")
    model = ScriptedAgentsModel([[text_reply("Book a sleeper berth.", "msg_1")]])
    agent = memory.register(
        openai_agents=Agent(name="helper", instructions="Be brief.", model=model),
        entity_id="fay",
    )
    session = MemtrellisSession("s", memory, entity_id="fay")

    streamed = Runner.run_streamed(agent, "Any tip for my trip?", session=session, run_config=RUN)
    async for _ in streamed.stream_events():
        pass

    assert streamed.final_output == "Book a sleeper berth."
    [(instructions, _)] = model.calls
    assert instructions is not None and "Fay takes the night train" in instructions
    assert stored(memory, "fay") == [
        "Any tip for my trip?",
        "Book a sleeper berth.",
        "Fay takes the night train",
    ]
