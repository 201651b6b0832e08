"""The public doors of ``Memory`` that clients and adapters use instead of its private
attributes: ``current_scope``, ``call_scope``, ``count_adapter``, ``on_close``."""

from __future__ import annotations

import gc
import logging
import weakref
from pathlib import Path

import pytest

from memtrellis import Memory
from memtrellis.clients import registration_of
from memtrellis.testing import HashingEmbedder
from sdk_fakes import ScriptedModel, openai_client


def test_current_scope_takes_the_call_then_the_block_then_the_defaults(tmp_path: Path) -> None:
    with Memory(tmp_path, entity_id="own", process_id="app", embedder=HashingEmbedder()) as m:
        assert m.current_scope() == m.default_scope
        assert m.current_scope(defaults={"entity_id": "reg"}).entity_id == "reg"
        with m.scope(entity_id="block", session_id="s1"):
            scope = m.current_scope(defaults={"entity_id": "reg", "session_id": "s0"})
            assert (scope.entity_id, scope.process_id, scope.session_id) == ("block", "app", "s1")
            assert m.current_scope(entity_id="call").entity_id == "call"
        assert m.current_scope().entity_id == "own"


def test_count_adapter_counts_in_one_family_and_never_raises(tmp_path: Path) -> None:
    with Memory(tmp_path, embedder=HashingEmbedder()) as memory:
        memory.count_adapter("call", source="client")
        memory.count_adapter("capture", source="my_sdk")
        memory.count_adapter("bogus", source=None)  # type: ignore[arg-type]
        memory.report_failure("capture", source="client")
        health = memory.health()
        assert (health.client_calls, health.client_capture_failures) == (1, 1)
        assert health.adapter_counts == {
            "client.call": 1,
            "my_sdk.capture": 1,
            "unknown.other": 1,
        }


def test_close_hooks_run_once_last_first_and_a_failing_one_does_not_stop_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []
    memory = Memory(tmp_path, embedder=HashingEmbedder())
    memory.on_close(lambda: ran.append("first"))
    cancel = memory.on_close(lambda: ran.append("cancelled"))
    memory.on_close(lambda: 1 / 0)
    memory.on_close(lambda: ran.append("last"))
    cancel()
    with caplog.at_level(logging.WARNING, logger="memtrellis"):
        memory.close()
        memory.close()  # twice: the hooks ran once
    assert ran == ["last", "first"]
    assert "on_close hook failed" in caplog.text


def test_a_registered_client_is_restored_on_close_and_keeps_no_memory_alive(
    tmp_path: Path,
) -> None:
    memory = Memory(tmp_path, embedder=HashingEmbedder())
    client = openai_client(ScriptedModel("Noted."))
    memory.register(client, entity_id="alice")
    copy = client.with_options(timeout=5)  # registered with the same settings
    assert registration_of(client) is not None and registration_of(copy) is not None
    memory.close()
    assert registration_of(client) is None and registration_of(copy) is None
    gone = weakref.ref(memory)
    del memory
    gc.collect()
    assert gone() is None  # neither the engine nor the close hooks hold the memory


def test_a_client_registered_with_another_memory_is_left_alone_on_close(tmp_path: Path) -> None:
    client = openai_client(ScriptedModel("Noted."))
    first = Memory(tmp_path / "a", embedder=HashingEmbedder())
    second = Memory(tmp_path / "b", embedder=HashingEmbedder())
    first.register(client)
    second.register(client)  # the registration moves to the second memory
    first.close()
    assert registration_of(client) is not None
    second.close()
    assert registration_of(client) is None
