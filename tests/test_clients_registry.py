"""Registering SDK clients: the registry, idempotence, reversal, threads, scope, failures."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import openai
import pytest

from memtrellis import InvalidInputError, Memory, UnsupportedClientError
from memtrellis.clients import match_client, registration_of
from memtrellis.registry import integration_names
from memtrellis.testing import HashingEmbedder
from sdk_fakes import (
    ScriptedModel,
    anthropic_client,
    captured,
    openai_client,
)

USER = [{"role": "user", "content": "What do I like to drink?"}]


def ask(client: Any, content: str = "What do I like to drink?") -> str:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": content}]
    )
    return str(reply.choices[0].message.content)


# -- the registry ---------------------------------------------------------------------------
def test_clients_are_matched_by_module_and_type() -> None:
    model = ScriptedModel()
    sync_openai = match_client(openai_client(model))
    async_anthropic = match_client(anthropic_client(model, asynchronous=True))
    azure = match_client(
        openai.AzureOpenAI(
            api_key="k", api_version="2024-10-21", azure_endpoint="https://example.invalid"
        )
    )

    assert sync_openai is not None and (sync_openai.matcher.name, sync_openai.is_async) == (
        "openai",
        False,
    )
    assert async_anthropic is not None and async_anthropic.matcher.name == "anthropic"
    assert async_anthropic.is_async
    assert azure is not None and azure.matcher.name == "openai"  # a subclass of OpenAI
    assert match_client(object()) is None


def test_unknown_objects_are_refused_with_what_is_supported(memory: Memory) -> None:
    with pytest.raises(UnsupportedClientError) as caught:
        memory.register({"not": "a client"})

    message = str(caught.value)
    assert "builtins.dict" in message
    for name in ("openai.OpenAI", "openai.AsyncOpenAI", "anthropic.Anthropic"):
        assert name in message
    assert "register(openai=...)" in message and "register(anthropic=...)" in message
    assert isinstance(caught.value, InvalidInputError)
    with pytest.raises(UnsupportedClientError):  # the named form checks the object too
        memory.register(openai=anthropic_client(ScriptedModel()))
    with pytest.raises(InvalidInputError):
        memory.register(openai_client(ScriptedModel()), openai=openai_client(ScriptedModel()))


def test_named_registration_goes_through_the_entry_points(memory: Memory) -> None:
    assert {"openai", "anthropic"} <= set(integration_names())
    model = ScriptedModel("Green tea.")
    client = openai_client(model)

    assert memory.register(openai=client) is client
    ask(client)

    assert [i.text for i in captured(memory)] == ["What do I like to drink?", "Green tea."]


def test_registration_options_are_checked(memory: Memory) -> None:
    client = openai_client(ScriptedModel())
    for bad in ({"k": 0}, {"token_budget": -1}, {"capture_mode": "slow"}, {"entity_id": ""}):
        with pytest.raises(InvalidInputError):
            memory.register(client, **bad)
    assert registration_of(client) is None


# -- idempotent and reversible --------------------------------------------------------------
def test_registering_twice_wraps_once(memory: Memory) -> None:
    model = ScriptedModel("Green tea.")
    client = openai_client(model)
    memory.register(client)
    patched = client.chat.completions.create

    memory.register(client)
    memory.register(openai=client)

    assert client.chat.completions.create is patched
    assert patched.__wrapped__.__func__ is openai.resources.chat.Completions.create
    ask(client)
    assert len(model.bodies) == 1
    assert len(captured(memory)) == 2  # one turn: the question and the reply, once
    assert memory.health().client_calls == 1


def test_registering_again_changes_the_settings(memory: Memory) -> None:
    client = openai_client(ScriptedModel("Noted."))
    memory.register(client, entity_id="bob")
    memory.register(client, entity_id="carol")

    ask(client, "I like mint tea")

    assert captured(memory, entity_id="bob") == []
    assert [i.text for i in captured(memory, entity_id="carol")] == ["I like mint tea", "Noted."]


def test_unregister_restores_the_original_methods(memory: Memory) -> None:
    memory.add("Alice likes green tea")
    model = ScriptedModel("Tea.")
    client = openai_client(model)
    other = openai_client(model)
    memory.register(client)
    assert "create" not in vars(other.chat.completions)  # other clients are untouched

    assert memory.unregister(client) is True
    for resource in (client.chat.completions, client.responses):
        assert not {"create", "parse"} & set(vars(resource))
    assert client.chat.completions.create.__func__ is openai.resources.chat.Completions.create
    ask(client)

    assert model.last["messages"] == USER  # no memory context any more
    assert captured(memory) == []
    assert memory.unregister(client) is False
    assert Memory.unregister(memory, object()) is False


def test_unregister_only_from_the_memory_it_was_registered_with(
    memory: Memory, tmp_path: Path
) -> None:
    client = memory.register(openai_client(ScriptedModel()))
    with Memory(tmp_path / "other", embedder=HashingEmbedder()) as other:
        assert other.unregister(client) is False
    assert registration_of(client) is not None


def test_close_unregisters_clients(tmp_path: Path) -> None:
    model = ScriptedModel("Tea.")
    client = openai_client(model)
    memory = Memory(tmp_path / "store", embedder=HashingEmbedder())
    memory.register(client)

    memory.close()

    assert registration_of(client) is None
    ask(client)  # the closed store is no longer in the call path
    assert model.last["messages"] == USER


# -- threads and scope ----------------------------------------------------------------------
def test_twenty_threads_each_with_its_own_scope(memory: Memory) -> None:
    for n in range(20):
        memory.add(f"The locker code of user{n} is {1000 + n}", entity_id=f"user{n}")
    model = ScriptedModel("Noted.")
    client = memory.register(openai_client(model))
    start = threading.Barrier(20)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            start.wait(10)
            with memory.scope(entity_id=f"user{n}"):
                ask(client, f"user{n}: what is my locker code?")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert errors == []
    assert len(model.bodies) == 20
    for body in model.bodies:
        asker = body["messages"][-1]["content"].split(":")[0]
        n = int(asker.removeprefix("user"))
        context = body["messages"][0]["content"]
        assert f"is {1000 + n}" in context  # each call got its own user's memory only
        assert not any(f"is {1000 + m}" in context for m in range(20) if m != n)
    for n in range(20):
        texts = [i.text for i in captured(memory, entity_id=f"user{n}")]
        assert texts == [f"user{n}: what is my locker code?", "Noted."]
    health = memory.health()
    assert (health.client_calls, health.client_captures, health.client_capture_failures) == (
        20,
        20,
        0,
    )


def test_per_call_scope_overrides_the_registration(memory: Memory) -> None:
    memory.add("Bob drinks black coffee", entity_id="bob")
    memory.add("Carol drinks oolong", entity_id="carol")
    model = ScriptedModel("Coffee.", "Oolong.")
    client = memory.register(openai_client(model), entity_id="carol")

    with memory.scope(entity_id="bob", session_id="s9"):
        ask(client, "What do I drink?")
    ask(client, "What do I drink?")

    first, second = (b["messages"][0]["content"] for b in model.bodies)
    assert "black coffee" in first and "oolong" not in first
    assert "oolong" in second and "coffee" not in second
    bob = captured(memory, entity_id="bob")
    assert [(i.text, i.scope.session_id) for i in bob] == [
        ("What do I drink?", "s9"),
        ("Coffee.", "s9"),
    ]
    assert [i.text for i in captured(memory, entity_id="carol")] == ["What do I drink?", "Oolong."]


async def test_scope_holds_per_asyncio_task(memory: Memory) -> None:
    import asyncio

    model = ScriptedModel("Noted.")
    client = memory.register(openai_client(model, asynchronous=True))

    async def one(name: str) -> None:
        with memory.scope(entity_id=name):
            await asyncio.sleep(0)  # let the other task run inside its own scope
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": f"I am {name}"}]
            )

    await asyncio.gather(one("dan"), one("eve"))

    assert [i.text for i in captured(memory, entity_id="dan")] == ["I am dan", "Noted."]
    assert [i.text for i in captured(memory, entity_id="eve")] == ["I am eve", "Noted."]


def test_memory_scope_is_the_default_of_every_method(memory: Memory) -> None:
    with memory.scope(entity_id="bob") as outer:
        assert outer.entity_id == "bob" and outer.process_id is None
        with memory.scope(process_id="app", session_id="s1") as inner:
            assert (inner.entity_id, inner.process_id, inner.session_id) == ("bob", "app", "s1")
            [item] = memory.add("Bob likes jazz")
            explicit = memory.add("Zed likes rock", entity_id="zed")[0]
        assert memory.recall("jazz").items[0].memory.id == item.id
        memory.capture("Bob is on holiday")
        assert memory.flush(30)

    assert (item.scope.entity_id, item.scope.process_id, item.scope.session_id) == (
        "bob",
        "app",
        "s1",
    )
    assert explicit.scope.entity_id == "zed"  # a call's own argument wins
    assert memory.list() == []  # outside the block: alice again
    assert {i.text for i in memory.list(entity_id="bob")} == {"Bob likes jazz", "Bob is on holiday"}
    with pytest.raises(InvalidInputError), memory.scope(entity_id=""):
        pass


def test_a_scope_in_one_thread_is_not_seen_by_another(memory: Memory) -> None:
    seen: list[str] = []
    inside = threading.Event()
    done = threading.Event()

    def other() -> None:
        inside.wait(10)
        seen.append(memory.current_scope().entity_id)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with memory.scope(entity_id="bob"):
        inside.set()
        done.wait(10)
    thread.join(10)

    assert seen == ["alice"]


# -- failures -------------------------------------------------------------------------------
def test_a_failing_capture_never_breaks_the_call(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    client = memory.register(openai_client(ScriptedModel("Still answered.")))

    def broken(*args: Any, **kwargs: Any) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(memory, "capture", broken)
    with caplog.at_level(logging.WARNING, logger="memtrellis"):
        assert ask(client) == "Still answered."

    health = memory.health()
    assert (health.client_capture_failures, health.client_captures) == (1, 0)
    assert "capture for openai.chat.completions failed" in caplog.text
    assert "disk full" in caplog.text


def test_a_failing_recall_sends_the_call_without_memory(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel("Answered.")
    client = memory.register(anthropic_client(model))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("index unavailable")

    monkeypatch.setattr(memory, "recall", broken)
    message = client.messages.create(model="claude-sonnet-5-5", max_tokens=16, messages=USER)

    assert message.content[0].text == "Answered."
    assert "system" not in model.last
    assert memory.health().client_recall_failures == 1
    assert [i.text for i in captured(memory)] == [USER[0]["content"], "Answered."]


def test_strict_mode_raises_memory_failures(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = memory.register(openai_client(ScriptedModel("Answered.")), strict=True)

    def broken(*args: Any, **kwargs: Any) -> str:
        raise OSError("disk full")

    monkeypatch.setattr(memory, "capture", broken)
    with pytest.raises(OSError, match="disk full"):
        ask(client)
    assert memory.health().client_capture_failures == 1


def test_copies_made_with_with_options_are_registered_too(memory: Memory) -> None:
    memory.add("Alice likes green tea")
    model = ScriptedModel("Tea.")
    client = memory.register(openai_client(model), entity_id="alice")

    quick = client.with_options(timeout=5)
    assert quick is not client
    ask(quick)

    assert "green tea" in model.last["messages"][0]["content"]
    assert [i.text for i in captured(memory)] == [USER[0]["content"], "Tea."]
    memory.unregister(client)
    assert registration_of(quick) is not None  # a client of its own, unregistered by close()
    memory.close()
    assert registration_of(quick) is None
