"""The LlamaIndex adapters run the core's adapter binding: its defaults, its budget and its
counters, with LlamaIndex messages read as the core's message dicts."""

from __future__ import annotations

import pytest
from fakes import scripted_llm
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage
from memtrellis import InvalidInputError, Memory
from memtrellis.binding import AdapterOptions
from memtrellis.tokens import count_tokens

from llama_index.memory.memtrellis import (
    MemoryRetriever,
    MemtrellisLLM,
    MemtrellisMemory,
    MemtrellisMemoryBlock,
)


def test_the_adapters_share_the_cores_defaults(memory: Memory) -> None:
    defaults = AdapterOptions()
    inner, _ = scripted_llm("ok")
    for adapter in (
        MemtrellisLLM(llm=inner, memory=memory),
        MemtrellisMemoryBlock(memory=memory),
        MemtrellisMemory.from_defaults(memory=memory),
    ):
        assert (adapter.k, adapter.token_budget) == (defaults.k, defaults.token_budget)
        assert adapter.strict is defaults.strict
    assert MemoryRetriever(memory).k == defaults.k


def test_the_wrapped_llm_places_one_budgeted_block_and_counts_its_capture(
    memory: Memory,
) -> None:
    for n in range(40):
        memory.add(f"Alice likes snack number {n} with peanuts", entity_id="alice")
    inner, script = scripted_llm("Bring the rice crackers.")
    llm = MemtrellisLLM(llm=inner, memory=memory, entity_id="alice", k=40, token_budget=120)
    engine = SimpleChatEngine.from_defaults(llm=llm, system_prompt="Be brief.")

    assert str(engine.chat("Which snack should I bring for Alice?")) == ("Bring the rice crackers.")

    system = script.system_text()
    block = system[system.index("<memory_context>") :]
    assert system.startswith("Be brief.") and count_tokens(block) <= 120
    assert memory.health().adapter_counts == {"llama_index.capture": 1}
    assert memory.flush(timeout=60)
    said = [
        (m.sources[0].role, m.text)
        for m in memory.list(entity_id="alice", limit=1000)
        if m.sources and m.sources[0].role in ("user", "assistant")
    ]
    assert sorted(said) == [
        ("assistant", "Bring the rice crackers."),
        ("user", "Which snack should I bring for Alice?"),
    ]


def test_a_tool_call_reply_is_captured_at_once_and_the_answer_with_its_exchange(
    memory: Memory,
) -> None:
    from llama_index.core.base.llms.types import ToolCallBlock

    from llama_index.memory.memtrellis._messages import new_turn, tool_calls_of

    asked = [ChatMessage(role="user", content="Weather in Porto?")]
    block = ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Porto"})
    tool_step = ChatMessage(role="assistant", blocks=[block])
    observed = ChatMessage(role="tool", content="sunny", additional_kwargs={"tool_call_id": "c1"})
    assert new_turn(asked, "") == []  # a reply of nothing adds nothing
    call = {"name": "weather", "arguments": '{"city": "Porto"}', "id": "c1"}
    assert new_turn(asked, "", tool_calls_of(tool_step)) == [
        {"role": "user", "content": "Weather in Porto?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    assert new_turn([*asked, tool_step, observed], "It is sunny.") == [
        {"role": "user", "content": "Weather in Porto?", "context": True},
        {"role": "assistant", "content": "", "tool_calls": [call], "context": True},
        {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
        {"role": "assistant", "content": "It is sunny."},
    ]


BAD_STAGES = [
    {"recent_turns": -1},
    {"recent_turns": True},
    {"open_items": "3"},
    {"open_items": 101},
    {"context_hint": "yes"},
    {"context_hint": 0},
    {"session_history": -1},
    {"session_history": 1.5},
]


@pytest.mark.parametrize("bad", BAD_STAGES, ids=lambda bad: f"{next(iter(bad))}={bad}")
def test_every_adapter_refuses_a_bad_stage_option_with_a_typed_error(
    memory: Memory, bad: dict[str, object]
) -> None:
    name = next(iter(bad))
    inner, _ = scripted_llm("ok")
    makers = [
        lambda: MemtrellisLLM(llm=inner, memory=memory, **bad),
        lambda: MemtrellisMemoryBlock(memory=memory, **bad),
        lambda: MemtrellisMemory.from_defaults(memory=memory, **bad),
        lambda: memory.register(llama_index=inner, **bad),
    ]
    for make in makers:
        with pytest.raises(InvalidInputError, match=name):
            make()


def test_the_stage_options_reach_the_binding(memory: Memory) -> None:
    stages = {"recent_turns": 2, "open_items": 0, "context_hint": False, "session_history": 6}
    inner, _ = scripted_llm("ok")
    for adapter in (
        MemtrellisLLM(llm=inner, memory=memory, **stages),
        MemtrellisMemoryBlock(memory=memory, **stages),
        MemtrellisMemory.from_defaults(memory=memory, **stages),
        memory.register(llama_index=inner, **stages),
    ):
        options = adapter._binding.options
        assert {name: getattr(options, name) for name in stages} == stages
