"""Secrets through LlamaIndex: an LLM's API key never reaches the store or the logs.

LlamaIndex provider LLMs keep ``api_key`` as a plain string field, so it is in the
model's ``to_dict()`` for anything that records the model. The wrapped LLM, the LLM an
event handler watches and the extraction LLM all carry one here; calls run with DEBUG
logging; then every file of the store (while open and after close) and every log record
are searched for the keys, raw and base64- or URL-encoded.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
from fakes import Script
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder, find_secrets, read_tree

from llama_index.memory.memtrellis import (
    MemtrellisEventHandler,
    MemtrellisLLM,
    MemtrellisMemoryBlock,
)


class KeyedLLM(MockFunctionCallingLLM):
    """A scripted model configured like a provider's: ``api_key`` as a plain field."""

    api_key: str = ""
    api_base: str = "https://api.example.invalid/v1"


def keyed(key: str, *replies: str) -> KeyedLLM:
    return KeyedLLM(response_generator=Script(replies), is_chat_model=True, api_key=key)


async def test_no_llm_key_reaches_the_store_or_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    keys = {name: f"sk-{name}-{uuid.uuid4().hex}" for name in ("wrapped", "watched", "extract")}
    monkeypatch.setenv("OPENAI_API_KEY", keys["wrapped"])
    caplog.set_level(logging.DEBUG)
    extractor = keyed(keys["extract"], '{"memories": [{"value": "Alice drinks green tea"}]}')
    assert extractor.to_dict()["api_key"] == keys["extract"]  # not hidden, as in LlamaIndex
    store = tmp_path / "store"
    memory = Memory(store, entity_id="alice", embedder=HashingEmbedder(), llm=extractor)
    memory.add("Alice likes green tea", mode="fast")
    question = [ChatMessage(role="user", content="What do I drink?")]

    wrapped = MemtrellisLLM(llm=keyed(keys["wrapped"], "Green tea."), memory=memory, mode="fast")
    wrapped.chat(question)
    await wrapped.achat(question)
    handler = MemtrellisEventHandler(memory=memory, mode="fine").attach()
    keyed(keys["watched"], "Green tea, always.").chat(question)
    handler.detach()
    block = MemtrellisMemoryBlock(memory=memory, mode="fine")
    assert "green tea" in (await block.aget(question)).lower()
    await block.aput([*question, ChatMessage(role="assistant", content="Green tea.")])
    assert memory.flush(30)
    while_open = read_tree(store)
    assert any(name.startswith("spool/") for name in while_open)
    memory.close()
    after = read_tree(store)

    stored = b"".join(after.values()).lower()
    assert b"green tea." in stored and b"alice drinks green tea" in stored  # both modes ran
    blobs = {**{f"{k} (open)": v for k, v in while_open.items()}, **after}
    blobs["caplog"] = caplog.text.encode()
    assert find_secrets(keys.values(), blobs) == []
