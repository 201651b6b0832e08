"""Session history for SDK clients (opt-in): a caller that sends only the latest message
gets the session's earlier turns under "Recent conversation", per entity and per session,
never the turns its request already holds, within the block's token budget; on the real
OpenAI, Anthropic, Google Gen AI and boto3 Bedrock SDKs over their mock transports, with
real Chroma."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memtrellis import Memory
from memtrellis.clients import session_history
from memtrellis.context import CLOSE_TAG
from memtrellis.errors import InvalidInputError
from memtrellis.testing import HashingEmbedder, ScriptedLLM
from memtrellis.tokens import count_tokens
from provider_fakes import BedrockWire, GoogleWire, bedrock_client, google_client
from sdk_fakes import CLAUDE_MODEL, ScriptedModel, anthropic_client, openai_client

RECENT = "Recent conversation:"
# (entity, session, what the user says, what the model answers), in call order
SCRIPT = [
    ("alice", "s1", "I am planning a trip to Lisbon in May.", "Which part of May?"),
    ("bob", "s1", "I need a birthday gift for my sister.", "What does she like?"),
    ("alice", "s2", "My tomato plants have yellow leaves.", "Water them less often."),
    ("bob", "s2", "Is the jazz club open on Sunday?", "Yes, from eight."),
    ("alice", "s1", "The second week, please.", "Lisbon, second week of May."),
    ("bob", "s1", "She likes vinyl records.", "A record voucher then."),
]


@dataclass
class Provider:
    """One SDK: how to make its client over a wire scripted with replies, send a
    conversation (role, text pairs), and read the memory-context text of the last request."""

    name: str
    make: Callable[[list[str]], tuple[Any, Any]]
    send: Callable[[Any, list[tuple[str, str]]], None]
    system: Callable[[Any], str]


def _openai() -> Provider:
    def make(replies: list[str]) -> tuple[Any, Any]:
        model = ScriptedModel(*replies)
        return openai_client(model), model

    def send(client: Any, chat: list[tuple[str, str]]) -> None:
        messages = [{"role": role, "content": text} for role, text in chat]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)

    def system(model: Any) -> str:
        first = model.last["messages"][0]
        return str(first["content"]) if first["role"] == "system" else ""

    return Provider("openai", make, send, system)


def _anthropic() -> Provider:
    def make(replies: list[str]) -> tuple[Any, Any]:
        model = ScriptedModel(*replies)
        return anthropic_client(model), model

    def send(client: Any, chat: list[tuple[str, str]]) -> None:
        messages = [{"role": role, "content": text} for role, text in chat]
        client.messages.create(model=CLAUDE_MODEL, max_tokens=64, messages=messages)

    def system(model: Any) -> str:
        found = model.last.get("system") or ""
        return found if isinstance(found, str) else "\n".join(b["text"] for b in found)

    return Provider("anthropic", make, send, system)


def _google() -> Provider:
    pytest.importorskip("google.genai")

    def make(replies: list[str]) -> tuple[Any, Any]:
        wire = GoogleWire(*replies)
        return google_client(wire), wire

    def send(client: Any, chat: list[tuple[str, str]]) -> None:
        contents = [
            {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
            for role, text in chat
        ]
        client.models.generate_content(model="gemini-2.5-flash", contents=contents)

    def system(wire: Any) -> str:
        found = wire.last.get("systemInstruction") or {"parts": []}
        return "\n".join(p["text"] for p in found["parts"])

    return Provider("google", make, send, system)


def _bedrock() -> Provider:
    pytest.importorskip("boto3")

    def make(replies: list[str]) -> tuple[Any, Any]:
        wire = BedrockWire(*replies)
        return bedrock_client(wire), wire

    def send(client: Any, chat: list[tuple[str, str]]) -> None:
        messages = [{"role": role, "content": [{"text": text}]} for role, text in chat]
        client.converse(modelId="anthropic.claude-sonnet-5-5-v1:0", messages=messages)

    def system(wire: Any) -> str:
        return "\n".join(b["text"] for b in wire.last.get("system", []))

    return Provider("bedrock", make, send, system)


PROVIDERS = {"openai": _openai, "anthropic": _anthropic, "google": _google, "bedrock": _bedrock}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Provider:
    return PROVIDERS[request.param]()


@pytest.fixture
def memory(store_path: Path) -> Iterator[Memory]:
    with Memory(store_path, embedder=HashingEmbedder()) as mem:
        yield mem


def recent_lines(block: str) -> list[str]:
    """The lines of the block's recent-conversation section (none when it has none)."""
    if RECENT not in block:
        return []
    section = block.split(RECENT + "\n", 1)[1].split(CLOSE_TAG, 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def said(entity: str, session: str, before: int) -> list[str]:
    """The recent-conversation lines of what was said in a session before call ``before``."""
    lines = []
    for who, where, question, answer in SCRIPT[:before]:
        if (who, where) == (entity, session):
            lines += [f"- user: {question}", f"- assistant: {answer}"]
    return lines


# -- end to end, per provider: two users, two sessions each ------------------------------
def test_a_stateless_caller_gets_its_own_session_s_turns(
    memory: Memory, provider: Provider
) -> None:
    client, wire = provider.make([answer for *_, answer in SCRIPT])
    # k=1: recall alone could show at most one earlier message, so the rest of the
    # session is what session history places
    memory.register(client, session_history=6, k=1)
    blocks = []
    for entity, session, question, _ in SCRIPT:
        with memory.scope(entity_id=entity, session_id=session):
            provider.send(client, [("user", question)])  # only the latest message
        blocks.append(provider.system(wire))

    for call, (entity, session, _, _) in enumerate(SCRIPT):
        block, lines = blocks[call], recent_lines(blocks[call])
        own = said(entity, session, call)
        # the recent section holds only this entity's turns of this session, in order...
        assert lines == [line for line in own if line in lines], (provider.name, call)
        # ...and with recall (which shows one of them at most), every one reaches the model
        assert all(line.split(": ", 1)[1] in block for line in own), (provider.name, call)
        other = "bob" if entity == "alice" else "alice"
        for _, _, question, answer in [s for s in SCRIPT[:call] if s[0] == other]:
            assert question not in block and answer not in block, (provider.name, call)
    assert recent_lines(blocks[4]) and recent_lines(blocks[5])  # history was placed
    assert recent_lines(blocks[0]) == recent_lines(blocks[1]) == []  # nothing said before


def test_turns_the_request_holds_are_never_placed_again(memory: Memory, provider: Provider) -> None:
    client, wire = provider.make(["Which part of May?", "Second week it is."])
    memory.register(client, session_history=6, entity_id="alice", session_id="s1")
    provider.send(client, [("user", SCRIPT[0][2])])
    memory.flush(30)

    provider.send(  # this caller keeps its own history and sends it all
        client, [("user", SCRIPT[0][2]), ("assistant", "Which part of May?"), ("user", "May 10")]
    )

    assert recent_lines(provider.system(wire)) == []


# -- the options ---------------------------------------------------------------------------
def _stateless(memory: Memory, **options: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel("Which part of May?", "Noted.")
    client = memory.register(
        openai_client(model), entity_id="alice", session_id="s1", k=1, **options
    )
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": SCRIPT[0][2]}]
    )
    return client, model


def _ask(client: Any, model: ScriptedModel, text: str = "The second week.") -> list[str]:
    client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
    )
    first = model.last["messages"][0]
    return recent_lines(first["content"]) if first["role"] == "system" else []


def test_it_is_off_unless_asked_for(memory: Memory) -> None:
    client, model = _stateless(memory)
    assert _ask(client, model) == []
    with session_history(4):  # per call
        assert _ask(client, model, "Still May?")
    assert _ask(client, model, "And June?") == []


def test_a_call_can_turn_off_what_its_registration_turned_on(memory: Memory) -> None:
    client, model = _stateless(memory, session_history=4)
    assert _ask(client, model)
    with session_history(0):
        assert _ask(client, model, "Anything else?") == []


def test_a_call_without_a_session_gets_none(memory: Memory) -> None:
    model = ScriptedModel("OK")
    client = memory.register(openai_client(model), entity_id="alice", session_history=4)
    for text in ("I like figs.", "And plums?"):
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
        )
    first = model.last["messages"][0]
    assert RECENT not in (first["content"] if first["role"] == "system" else "")


def test_the_block_keeps_the_newest_turns_within_its_budget(memory: Memory) -> None:
    model = ScriptedModel(*(f"Noted, day {day}." for day in range(1, 9)))
    client = memory.register(
        openai_client(model), entity_id="alice", session_id="s1", token_budget=200, k=1
    )
    with session_history(20):
        for day in range(1, 9):
            text = f"On day {day} of the trip we visit museum number {day} in the old town."
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
            )
        block = model.last["messages"][0]["content"]
    lines = recent_lines(block)
    assert count_tokens(block) <= 200
    assert lines and lines[-1] == "- assistant: Noted, day 7."
    assert "day 7 of the trip" in "\n".join(lines)  # the newest turns stay...
    assert "day 1 of the trip" not in "\n".join(lines)  # ...and the oldest leave first


def test_a_bad_session_history_is_a_typed_error(memory: Memory) -> None:
    client = openai_client(ScriptedModel("OK"))
    for bad in (-1, 101, 2.5, True, "6"):
        with pytest.raises(InvalidInputError, match="session_history"):
            memory.register(client, session_history=bad)
        with pytest.raises(InvalidInputError, match="session_history"), session_history(bad):
            pass


async def test_an_async_client_reads_the_history_off_the_loop(memory: Memory) -> None:
    model = ScriptedModel("Which part of May?", "Second week.")
    client = memory.register(
        openai_client(model, asynchronous=True),
        entity_id="alice",
        session_id="s1",
        session_history=4,
        k=1,
    )
    for text in (SCRIPT[0][2], "The second week."):
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": text}]
        )
    lines = recent_lines(model.last["messages"][0]["content"])
    assert set(lines) <= {f"- user: {SCRIPT[0][2]}", "- assistant: Which part of May?"}
    assert lines


# -- fine capture: facts recalled, the session's verbatim turns from their sources ---------
def test_fine_capture_places_the_verbatim_turns_beside_the_facts(store_path: Path) -> None:
    facts = itertools.cycle(
        ["Alice plans a holiday abroad", "Alice prefers coastal places", "Alice fixed a week"]
    )

    def extract(messages: list[dict[str, Any]]) -> str:
        # a fact per turn, citing no message: it rests on the whole turn
        return json.dumps({"memories": [{"value": next(facts)}]})

    llm = ScriptedLLM(extract)
    with Memory(store_path, embedder=HashingEmbedder(), llm=llm) as memory:
        model = ScriptedModel("Which part of May?", "Noted.", "Lisbon, second week.")
        client = memory.register(
            anthropic_client(model), entity_id="alice", session_id="s1", session_history=6
        )
        for text in (SCRIPT[0][2], "Somewhere near the sea.", "The second week, please."):
            client.messages.create(
                model=CLAUDE_MODEL, max_tokens=64, messages=[{"role": "user", "content": text}]
            )
            memory.flush(30)
        system = model.last["system"]
        block = system if isinstance(system, str) else "\n".join(b["text"] for b in system)

    assert "Alice plans a holiday abroad" in block  # recall shows the facts
    assert recent_lines(block) == [  # and the session's turns, as they were said
        f"- user: {SCRIPT[0][2]}",
        "- assistant: Which part of May?",
        "- user: Somewhere near the sea.",
        "- assistant: Noted.",
    ]


def test_a_failing_history_read_never_fails_the_call(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, model = _stateless(memory, session_history=4)

    def broken(**_: Any) -> list[Any]:
        raise TimeoutError("store offline")

    monkeypatch.setattr(memory, "session_turns", broken)
    assert _ask(client, model) == []  # the request went out, without history
    assert model.last["messages"][-1]["content"] == "The second week."
    assert memory.health().adapter_failures.get("client.recall", 0) == 1
