"""The LangChain adapters run the core's adapter binding: its defaults, its budget and its
counters, with LangChain messages read as the core's message dicts."""

from __future__ import annotations

from langchain_core.messages import AIMessage, SystemMessage
from memtrellis import Memory
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
