"""Secrets through LlamaIndex: an LLM's API key never reaches the store or the logs.

LlamaIndex provider LLMs keep ``api_key`` as a plain string field, so it is in the
model's ``to_dict()`` for anything that records the model. The wrapped LLM, the LLM an
event handler watches and the extraction LLM all carry one here; calls run with DEBUG
logging; then every file of the store (while open and after close) and every log record
are searched for the keys, raw and base64- or URL-encoded.
"""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
import uuid
from pathlib import Path

import pytest
from fakes import Script
from llama_index.core.llms import ChatMessage, MockFunctionCallingLLM
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

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


def forms(value: str) -> set[bytes]:
    raw = value.encode()
    found = {raw, urllib.parse.quote(value, safe="").encode(), json.dumps(value).encode()[1:-1]}
    for prefix in (b"", b"x", b"xx"):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            skip = len(prefix) * 4 // 3 + (1 if prefix else 0)
            found.add(encode(prefix + raw)[skip:].rstrip(b"=")[:-2])
    return found


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


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
    while_open = snapshot(store)
    assert any(name.startswith("spool/") for name in while_open)
    memory.close()
    after = snapshot(store)

    stored = b"".join(after.values()).lower()
    assert b"green tea." in stored and b"alice drinks green tea" in stored  # both modes ran
    blobs = {**{f"{k} (open)": v for k, v in while_open.items()}, **after}
    blobs["caplog"] = caplog.text.encode()
    leaked = [
        (name, where)
        for name, key in keys.items()
        for form in forms(key)
        for where, blob in blobs.items()
        if form in blob
    ]
    assert leaked == []
