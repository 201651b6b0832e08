"""The block's stage options given to an SDK client at register time (issue 22 item 4):
``recent_turns``, ``open_items`` and ``context_hint`` change what the model is sent, bad
values are typed errors, and a request's own turns are never placed again; on the real
OpenAI and Anthropic SDKs over their mock transports, with real Chroma."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memtrellis import InvalidInputError, Memory
from memtrellis.testing import HashingEmbedder
from sdk_fakes import CLAUDE_MODEL, ScriptedModel, anthropic_client, openai_client

TICKETS = "Buy the tickets for the Lisbon trip before Friday"
DENTIST = "The dentist visit is booked for Friday"
RESTAURANT = "The restaurant table is booked for Friday"
QUESTION = "What is booked for Friday?"
EARLIER = [
    ("user", "I am planning the week with my family."),
    ("assistant", "Happy to help plan the week."),
]


def _openai(model: ScriptedModel) -> tuple[Any, Callable[[Any, list[tuple[str, str]]], str]]:
    def send(client: Any, chat: list[tuple[str, str]]) -> str:
        messages = [{"role": role, "content": text} for role, text in chat]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        first = model.last["messages"][0]
        return str(first["content"]) if first["role"] == "system" else ""

    return openai_client(model), send


def _anthropic(model: ScriptedModel) -> tuple[Any, Callable[[Any, list[tuple[str, str]]], str]]:
    def send(client: Any, chat: list[tuple[str, str]]) -> str:
        messages = [{"role": role, "content": text} for role, text in chat]
        client.messages.create(model=CLAUDE_MODEL, max_tokens=64, messages=messages)
        system = model.last.get("system", "")
        return system if isinstance(system, str) else "\n".join(b["text"] for b in system)

    return anthropic_client(model), send


MAKERS = {"openai": _openai, "anthropic": _anthropic}


@pytest.fixture
def memory(store_path: Path) -> Iterator[Memory]:
    with Memory(store_path, embedder=HashingEmbedder()) as mem:
        mem.add(DENTIST, entity_id="ana")
        mem.add(RESTAURANT, entity_id="ana")
        mem.add(TICKETS, memory_type="action_item", entity_id="ana")
        yield mem


@pytest.fixture(params=sorted(MAKERS))
def make(request: pytest.FixtureRequest) -> Callable[..., Any]:
    return MAKERS[request.param]


def _sent(memory: Memory, make: Callable[..., Any], session: str, **options: Any) -> str:
    """What a stateless caller's second request carries as memory context: the first
    exchange was said in ``session``, the second request holds only the question."""
    model = ScriptedModel(EARLIER[1][1], "The dentist.")
    client, send = make(model)
    memory.register(client, entity_id="ana", session_id=session, k=1, **options)
    send(client, [EARLIER[0]])
    return str(send(client, [("user", QUESTION)]))


def test_recent_turns_and_open_items_at_register_time_change_what_is_sent(
    memory: Memory, make: Callable[..., Any]
) -> None:
    assert TICKETS not in [
        h.memory.text for h in memory.recall(QUESTION, entity_id="ana", k=1).items
    ]
    full = _sent(memory, make, "s1", session_history=4)
    assert "Recent conversation:" in full and EARLIER[0][1] in full
    assert f"Action item: {TICKETS}" in full

    no_recent = _sent(memory, make, "s2", session_history=4, recent_turns=0)
    assert "Recent conversation:" not in no_recent and f"Action item: {TICKETS}" in no_recent

    no_open = _sent(memory, make, "s3", session_history=4, open_items=0)
    assert "Recent conversation:" in no_open and TICKETS not in no_open


def test_context_hint_at_register_time_turns_the_hint_off(
    memory: Memory, make: Callable[..., Any]
) -> None:
    def first_fact(topic: str, **options: Any) -> str:
        model = ScriptedModel("OK")
        client, send = make(model)
        memory.register(client, entity_id="ana", k=20, open_items=0, **options)
        chat = [
            ("user", f"Let us talk about {topic}."),
            ("assistant", "Sure."),
            ("user", QUESTION),
        ]
        block = send(client, chat)
        assert DENTIST in block and RESTAURANT in block
        return min((DENTIST, RESTAURANT), key=block.index)

    # The request's earlier turns steer which Friday booking comes first...
    assert first_fact("my dentist and my teeth") == DENTIST
    assert first_fact("the restaurant and our table") == RESTAURANT
    # ...and with context_hint=False only the question counts: the same fact either way.
    off = {first_fact(t, context_hint=False) for t in ("my dentist", "the restaurant table")}
    assert len(off) == 1


def test_a_request_carrying_its_history_gets_none_of_it_again(
    memory: Memory, make: Callable[..., Any]
) -> None:
    model = ScriptedModel(EARLIER[1][1], "The dentist.")
    client, send = make(model)
    memory.register(client, entity_id="ana", session_id="s1", session_history=4, k=4)
    send(client, [EARLIER[0]])
    memory.flush(30)
    block = send(client, [*EARLIER, ("user", QUESTION)])
    assert "Recent conversation:" not in block
    for _, text in EARLIER:  # captured and recallable, but the request carries them
        assert text not in block


@pytest.mark.parametrize(
    "bad",
    [
        {"recent_turns": -1},
        {"recent_turns": "4"},
        {"open_items": 101},
        {"open_items": False},
        {"context_hint": "no"},
        {"context_hint": None, "k": 0},
        {"session_history": 3.0},
    ],
)
def test_a_bad_stage_option_is_a_typed_error(memory: Memory, bad: dict[str, Any]) -> None:
    client = openai_client(ScriptedModel("OK"))
    name = next(n for n, v in bad.items() if v is not None)
    with pytest.raises(InvalidInputError, match=name):
        memory.register(client, **bad)
