"""Every adapter's fail-open failures reach ``Memory.health()`` (``Memory.report_failure``)."""

from __future__ import annotations

import pytest
from fakes import scripted_llm
from llama_index.core.llms import ChatMessage
from memtrellis import Memory

from llama_index.memory.memtrellis import (
    MemoryRetriever,
    MemtrellisEventHandler,
    MemtrellisLLM,
    MemtrellisMemoryBlock,
)

ASKED = [ChatMessage(role="user", content="Which snack should I bring for Alice?")]


def _broken(*args: object, **kwargs: object) -> None:
    raise RuntimeError("memory is down")


async def _abroken(*args: object, **kwargs: object) -> None:
    raise RuntimeError("memory is down")


def test_the_llm_wrappers_failed_recall_and_capture_show_in_health(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "recall", _broken)
    monkeypatch.setattr(memory, "capture", _broken)
    inner, _ = scripted_llm("Still answering.")
    llm = MemtrellisLLM(llm=inner, memory=memory)

    assert llm.chat(ASKED).message.content == "Still answering."

    health = memory.health()
    assert health.adapter_recall_failures == 1 and health.adapter_capture_failures == 1
    assert health.adapter_failures == {"llama_index.capture": 1, "llama_index.recall": 1}
    assert llm.failures == 2  # the adapter's own counter is kept too


def test_strict_failures_are_counted_before_they_are_raised(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "recall", _broken)
    inner, _ = scripted_llm("unused")
    llm = MemtrellisLLM(llm=inner, memory=memory, strict=True)

    with pytest.raises(RuntimeError, match="memory is down"):
        llm.chat(ASKED)
    assert memory.health().adapter_recall_failures == 1


async def test_the_blocks_failed_recall_capture_and_truncate_show_in_health(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add("Alice is allergic to peanuts")
    block = MemtrellisMemoryBlock(memory=memory, priority=1)
    rendered = await block.aget(ASKED)
    assert rendered
    monkeypatch.setattr("memtrellis.binding.build_context", _broken)  # the one renderer
    assert await block.atruncate(rendered, 5) is None
    monkeypatch.setattr(memory, "arecall", _abroken)
    monkeypatch.setattr(memory, "acapture", _abroken)

    assert await block.aget(ASKED) == ""
    await block.aput([ChatMessage(role="user", content="I live in Porto")])

    health = memory.health()
    assert (
        health.adapter_recall_failures,
        health.adapter_capture_failures,
        health.adapter_context_failures,
    ) == (1, 1, 1)
    assert block.failures == 3


async def test_the_retrievers_failed_recalls_show_in_health(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "recall", _broken)
    monkeypatch.setattr(memory, "arecall", _abroken)
    retriever = MemoryRetriever(memory)

    assert retriever.retrieve("anything") == []
    assert await retriever.aretrieve("anything") == []
    assert memory.health().adapter_failures == {"llama_index.recall": 2}


def test_the_event_handlers_failed_capture_shows_in_health(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "capture", _broken)
    handler = MemtrellisEventHandler(memory=memory).attach()
    llm, _ = scripted_llm("Fine.")

    assert llm.chat([ChatMessage(role="user", content="hello")]).message.content == "Fine."

    assert memory.health().adapter_failures == {"llama_index.capture": 1}
    assert handler.failures == 1
