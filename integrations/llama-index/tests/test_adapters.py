"""LlamaIndex LLMs for fine-mode extraction, BaseEmbedding as the embedder, registration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import scripted_llm
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import ChatMessage, MockLLM
from memtrellis import InvalidInputError, Memory, UnknownIntegrationError
from memtrellis.testing import HashingEmbedder

from llama_index.memory.memtrellis import (
    LlamaIndexExtractionLLM,
    MemtrellisEventHandler,
    MemtrellisLLM,
)
from llama_index.memory.memtrellis.adapters import llm_adapter, register

_EXTRACTED = json.dumps(
    {
        "memories": [
            {
                "key": "alice.home",
                "value": "Alice moved to Porto",
                "memory_type": "fact",
                "entities": ["Alice", "Porto"],
                "confidence": 0.9,
                "source_ids": ["m1"],
            }
        ]
    }
)


def _conversation() -> list[dict[str, str]]:
    return [
        {"role": "user", "content": "I moved to Porto last week!", "id": "m1"},
        {"role": "assistant", "content": "Congratulations on the move.", "id": "m2"},
    ]


def test_a_llamaindex_llm_runs_fine_mode_extraction(tmp_path: Path) -> None:
    inner, script = scripted_llm(_EXTRACTED)
    with Memory(
        tmp_path / "s", embedder=HashingEmbedder(), llm=LlamaIndexExtractionLLM(inner)
    ) as memory:
        [item] = memory.add(_conversation())
    assert item.text == "Alice moved to Porto"
    assert [s.message_id for s in item.sources] == ["m1"]
    assert "Porto" in (script.calls[0][-1].content or "")  # the window reached the model


def test_memory_takes_any_llamaindex_llm_directly(tmp_path: Path) -> None:
    # A LlamaIndex LLM has a complete() of its own (it takes a prompt string): the core
    # asks this package's adapter first (entry point memtrellis.llm_adapters:llama_index).
    inner, script = scripted_llm(_EXTRACTED)
    with Memory(tmp_path / "s", embedder=HashingEmbedder(), llm=inner) as memory:
        assert isinstance(memory.extractor.llm, LlamaIndexExtractionLLM)
        [item] = memory.add(_conversation())
    assert item.text == "Alice moved to Porto" and len(script.calls) == 1


async def test_async_extraction_uses_the_native_achat(tmp_path: Path) -> None:
    inner, script = scripted_llm(_EXTRACTED)
    async with Memory(
        tmp_path / "s", embedder=HashingEmbedder(), llm=LlamaIndexExtractionLLM(inner)
    ) as memory:
        [item] = await memory.aadd(_conversation())
    assert item.text == "Alice moved to Porto" and len(script.calls) == 1


def test_extraction_calls_are_not_captured_as_conversation(tmp_path: Path) -> None:
    inner, _ = scripted_llm(_EXTRACTED)
    with Memory(
        tmp_path / "s", embedder=HashingEmbedder(), llm=LlamaIndexExtractionLLM(inner)
    ) as memory:
        handler = MemtrellisEventHandler(memory=memory).attach()
        chat, _ = scripted_llm("Congratulations on the move.")
        chat.chat([ChatMessage(role="user", content="I moved to Porto last week!")])
        assert memory.flush(timeout=60)
        handler.detach()
        assert handler.captured == 1  # the extraction chat call was not captured
        assert [m.text for m in memory.list()] == ["Alice moved to Porto"]


def test_a_llamaindex_base_embedding_replaces_the_default_embedder(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", embedder=MockEmbedding(embed_dim=16)) as memory:
        memory.add("The deploy freeze starts on Friday")
        memory.add("Alice drinks green tea")
        hits = memory.recall("when does the deploy freeze start?").items
        health = memory.health()
    assert hits[0].memory.text == "The deploy freeze starts on Friday"
    assert (health.embedder_model_id, health.embedder_dimension) == ("MockEmbedding:unknown", 16)
    # The manifest pins the embedder: another one cannot open the store.
    with pytest.raises(Exception, match="embed"):
        Memory(tmp_path / "s", embedder=MockEmbedding(embed_dim=8))


def test_llm_adapter_takes_only_llamaindex_llms() -> None:
    adapted = llm_adapter(MockLLM())
    assert isinstance(adapted, LlamaIndexExtractionLLM)
    assert llm_adapter(object()) is None
    with pytest.raises(InvalidInputError):
        LlamaIndexExtractionLLM("gpt")  # type: ignore[arg-type]


def test_register_wraps_an_llm_with_memory(memory: Memory) -> None:
    wrapped = register(memory, MockLLM(), session_id="s1", token_budget=200)
    assert isinstance(wrapped, MemtrellisLLM)
    assert (wrapped.memory, wrapped.session_id, wrapped.token_budget) == (memory, "s1", 200)
    with pytest.raises(InvalidInputError, match="LlamaIndex LLMs"):
        register(memory, object())


def test_memory_register_llama_index(memory: Memory) -> None:
    wrapped = memory.register(llama_index=MockLLM())
    assert isinstance(wrapped, MemtrellisLLM) and wrapped.memory is memory
    with pytest.raises(InvalidInputError, match="LlamaIndex LLMs"):
        memory.register(llama_index="gpt-4o")
    with pytest.raises(UnknownIntegrationError) as caught:
        memory.register(llamaindex=MockLLM())
    assert "llama_index" in caught.value.known


def test_register_takes_the_cores_name_of_the_capture_mode(memory: Memory) -> None:
    wrapped = memory.register(llama_index=MockLLM(), capture_mode="fine")
    assert wrapped.mode == "fine"
    assert MemtrellisLLM(memory=memory, llm=MockLLM(), capture_mode="fast").mode == "fast"
    with pytest.raises(InvalidInputError, match="differ"):
        MemtrellisLLM(memory=memory, llm=MockLLM(), mode="fast", capture_mode="fine")
    with pytest.raises(InvalidInputError):
        memory.register(llama_index=MockLLM(), capture_mode="coarse")
