"""A LangChain chat model as the extraction LLM, LangChain Embeddings, named registration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import GenericFakeChatModel
from memtrellis import InvalidInputError, Memory, UnknownIntegrationError
from memtrellis.registry import integration_names
from memtrellis.testing import HashingEmbedder

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper, LangChainLLM, as_llm
from langchain_memtrellis.adapters import llm_adapter

EXTRACTED = json.dumps(
    {
        "memories": [
            {
                "value": "Alice is learning Portuguese",
                "memory_type": "fact",
                "confidence": 0.9,
                "source_ids": ["m1"],
            }
        ]
    }
)


def test_memory_accepts_a_chat_model_as_llm_through_the_entry_point(tmp_path: Path) -> None:
    model = FakeChat(messages=iter([EXTRACTED]))

    with Memory(tmp_path / "s", embedder=HashingEmbedder(), llm=model) as memory:
        assert isinstance(memory.extractor.llm, LangChainLLM)
        items = memory.add(
            [{"role": "user", "content": "I started Portuguese lessons", "id": "m1"}]
        )

    assert [i.text for i in items] == ["Alice is learning Portuguese"]
    assert items[0].sources[0].message_id == "m1"
    [sent] = model.calls
    assert sent[0][0].type == "system" and sent[0][-1].type == "human"


async def test_async_extraction_uses_ainvoke(tmp_path: Path) -> None:
    model = FakeChat(messages=iter([EXTRACTED]))
    async with Memory(tmp_path / "s", embedder=HashingEmbedder(), llm=as_llm(model)) as memory:
        items = await memory.aadd([{"role": "user", "content": "Portuguese lessons", "id": "m1"}])

    assert [i.text for i in items] == ["Alice is learning Portuguese"]


def test_a_wrapped_model_is_unwrapped_for_extraction(memory: Memory) -> None:
    inner = GenericFakeChatModel(messages=iter(["{}"]))
    adapted = as_llm(ChatMemoryWrapper(inner, memory=memory))

    assert adapted.model is inner
    assert llm_adapter(object()) is None
    with pytest.raises(InvalidInputError):
        LangChainLLM(object())  # type: ignore[arg-type]


def test_a_langchain_embeddings_replaces_the_default_embedder(tmp_path: Path) -> None:
    embeddings = DeterministicFakeEmbedding(size=32)

    with Memory(tmp_path / "s", embedder=embeddings) as memory:
        memory.add("The deploy freeze starts on Friday")
        hits = memory.recall("The deploy freeze starts on Friday").items
        assert memory.embedder.dimension == 32
        assert memory.health().embedder_model_id == "DeterministicFakeEmbedding"

    assert hits[0].memory.text == "The deploy freeze starts on Friday"


def test_register_by_name(memory: Memory) -> None:
    llm = FakeChat(messages=iter(["ok"]))

    chat = memory.register(langchain=llm)

    assert "langchain" in integration_names()
    assert isinstance(chat, ChatMemoryWrapper)
    assert chat.llm is llm and chat.memory is memory
    assert chat.invoke("hello").content == "ok"
    with pytest.raises(InvalidInputError):
        memory.register(langchain=object())
    with pytest.raises(UnknownIntegrationError, match="langchain"):
        memory.register(no_such_framework=llm)
