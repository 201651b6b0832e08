"""Secrets through LangChain: a chat model's API key never reaches the store or the logs.

The wrapped model, the extraction model and the model a callback handler watches all
carry an ``api_key`` ``SecretStr`` (also set in the environment); calls run with DEBUG
logging; then every file of the store (while open and after close) and every log record
are searched for the key, raw and base64- or URL-encoded.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder, find_secrets, read_tree
from pydantic import SecretStr

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper, MemoryCallbackHandler


class KeyedChat(FakeChat):
    """A fake provider model configured like a real one: with an API key."""

    api_key: SecretStr
    base_url: str = "https://api.example.invalid/v1"


def test_no_model_key_reaches_the_store_or_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    keys = {name: f"sk-{name}-{uuid.uuid4().hex}" for name in ("chat", "extract", "env")}
    monkeypatch.setenv("OPENAI_API_KEY", keys["env"])
    caplog.set_level(logging.DEBUG)
    extractor = KeyedChat(
        api_key=SecretStr(keys["extract"]),
        messages=iter(['{"memories": [{"value": "Alice drinks green tea"}]}'] * 4),
    )
    inner = KeyedChat(api_key=SecretStr(keys["chat"]), messages=iter(["Green tea."] * 6))
    store = tmp_path / "store"
    memory = Memory(store, entity_id="alice", embedder=HashingEmbedder(), llm=extractor)
    memory.add("Alice likes green tea")
    fast = ChatMemoryWrapper(inner, memory=memory, capture_mode="fast")
    fine = ChatMemoryWrapper(inner, memory=memory, capture_mode="fine")
    question = [HumanMessage("What do I drink?")]
    fast.invoke(question)
    list(fast.stream(question))
    fine.invoke(question, config={"metadata": {"memtrellis_session_id": "s1"}})
    handler = MemoryCallbackHandler(memory=memory)
    inner.invoke(question, config={"callbacks": [handler]})
    assert memory.flush(30)
    while_open = read_tree(store)
    assert any(name.startswith("spool/") for name in while_open)
    memory.close()
    after = read_tree(store)

    stored = b"".join(after.values()).lower()
    assert b"green tea" in stored and b"alice drinks green tea" in stored  # both modes ran
    blobs = {**{f"{k} (open)": v for k, v in while_open.items()}, **after}
    blobs["caplog"] = caplog.text.encode()
    assert find_secrets(keys.values(), blobs) == []
