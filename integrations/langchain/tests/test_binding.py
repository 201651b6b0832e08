"""The LangChain adapters run the core's adapter binding: its defaults, its budget and its
counters, with LangChain messages read as the core's message dicts."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, SystemMessage
from memtrellis import InvalidInputError, Memory
from memtrellis.binding import AdapterOptions
from memtrellis.context import OPEN_TAG
from memtrellis.tokens import count_tokens

from fakes import FakeChat, texts
from langchain_memtrellis import ChatMemoryWrapper, MemoryContextRunnable, MemoryMiddleware


def test_the_adapters_share_the_cores_defaults(memory: Memory) -> None:
    defaults = AdapterOptions()
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["ok"])), memory=memory)
    bridges = [
        chat._bridge,
        MemoryMiddleware(memory).bridge,
        MemoryContextRunnable(memory).bridge,
    ]
    assert (chat.k, chat.token_budget, chat.position) == (8, 600, "append")
    for bridge in bridges:
        assert bridge.options == defaults


def test_the_wrapper_places_one_budgeted_block_and_counts_its_capture(memory: Memory) -> None:
    for n in range(40):
        memory.add(f"Alice likes snack number {n} with peanuts", entity_id="alice")
    model = FakeChat(messages=iter([AIMessage(content="Bring the rice crackers.")]))
    chat = ChatMemoryWrapper(model, memory=memory, entity_id="alice", k=40, token_budget=120)

    answer = chat.invoke([SystemMessage("Be brief."), ("user", "Which snack for Alice?")])

    assert answer.content == "Bring the rice crackers."
    system = model.sent()[0].content
    assert isinstance(system, str) and system.startswith("Be brief.")
    assert count_tokens(system[system.index(OPEN_TAG) :]) <= 120
    assert memory.health().adapter_counts == {"langchain.capture": 1}
    stored = texts(memory, "alice")
    assert stored.count("Which snack for Alice?") == 1
    assert stored.count("Bring the rice crackers.") == 1


BAD_STAGES = [
    {"recent_turns": -1},
    {"recent_turns": 101},
    {"recent_turns": True},
    {"open_items": "3"},
    {"open_items": -2},
    {"context_hint": "yes"},
    {"context_hint": 1},
    {"session_history": 101},
    {"session_history": 2.5},
]


@pytest.mark.parametrize("bad", BAD_STAGES, ids=lambda bad: f"{next(iter(bad))}={bad}")
def test_every_adapter_refuses_a_bad_stage_option_with_a_typed_error(
    memory: Memory, bad: dict[str, object]
) -> None:
    name = next(iter(bad))
    makers = [
        lambda: ChatMemoryWrapper(FakeChat(messages=iter(["ok"])), memory=memory, **bad),
        lambda: MemoryMiddleware(memory, **bad),
        lambda: MemoryContextRunnable(memory, **bad),
        lambda: memory.register(langchain=FakeChat(messages=iter(["ok"])), **bad),
    ]
    for make in makers:
        with pytest.raises(InvalidInputError, match=name):
            make()


def test_the_stage_options_reach_the_binding(memory: Memory) -> None:
    stages = {"recent_turns": 2, "open_items": 0, "context_hint": False, "session_history": 6}
    chat = ChatMemoryWrapper(FakeChat(messages=iter(["ok"])), memory=memory, **stages)
    registered = memory.register(langchain=FakeChat(messages=iter(["ok"])), **stages)
    for bridge in (
        chat._bridge,
        registered._bridge,
        MemoryMiddleware(memory, **stages).bridge,
        MemoryContextRunnable(memory, **stages).bridge,
    ):
        assert bridge.options == AdapterOptions(**stages)  # type: ignore[arg-type]
