"""The package's layout, public API and offline guarantee."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import llama_index.memory.memtrellis as package

ROOT = Path(__file__).resolve().parents[1]


def test_public_api_is_pinned() -> None:
    assert sorted(package.__all__) == [
        "LlamaIndexExtractionLLM",
        "MemoryRetriever",
        "MemtrellisEventHandler",
        "MemtrellisLLM",
        "MemtrellisMemory",
        "MemtrellisMemoryBlock",
        "MemtrellisToolSpec",
    ]
    for name in package.__all__:
        assert getattr(package, name).__doc__, name


def test_namespace_layout_follows_llamaindex_conventions() -> None:
    assert not (ROOT / "llama_index" / "__init__.py").exists()
    assert not (ROOT / "llama_index" / "memory" / "__init__.py").exists()
    assert sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("py.typed")) == [
        "llama_index/memory/memtrellis/py.typed"
    ]
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "llama-index-memory-memtrellis"
    assert meta["tool"]["llamahub"]["import_path"] == "llama_index.memory.memtrellis"
    assert set(meta["tool"]["llamahub"]["class_authors"]) == set(package.__all__) - {
        "LlamaIndexExtractionLLM"
    }
    entry = meta["project"]["entry-points"]["memtrellis.integrations"]["llama_index"]
    assert entry == "llama_index.memory.memtrellis.adapters:register"


_OFFLINE = """
import sys

def _no_network(event, args):
    if event.startswith("socket.") and event not in ("socket.__new__", "socket.bind"):
        sys.stderr.write("NETWORK ATTEMPT " + event + "\\n")
        raise RuntimeError("network attempt: " + event)

sys.addaudithook(_no_network)

import tempfile
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.query_engine import RetrieverQueryEngine
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder
from llama_index.memory.memtrellis import (
    MemoryRetriever, MemtrellisEventHandler, MemtrellisMemoryBlock,
)

with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
    memory.add("Alice is allergic to peanuts")
    memory.recall("peanuts", token_budget=50)  # memtrellis sets TIKTOKEN_CACHE_DIR here
    chat_memory = ChatMemory.from_defaults(
        token_limit=200, memory_blocks=[MemtrellisMemoryBlock(memory=memory)]
    )
    handler = MemtrellisEventHandler(memory=memory, mode="fast").attach()
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=chat_memory)
    reply = str(engine.chat("Which snack for Alice?"))
    assert "allergic to peanuts" in reply, reply
    assert memory.flush(timeout=60)
    answer = RetrieverQueryEngine.from_args(MemoryRetriever(memory), llm=MockLLM()).query(
        "Which snack for Alice?"
    )
    assert "allergic" in str(answer)
print("OFFLINE OK")
"""


def test_a_full_cycle_makes_no_network_attempt(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TIKTOKEN_CACHE_DIR", "NLTK_DATA", "MEMTRELLIS_CACHE_DIR")
    }
    env["MEMTRELLIS_CACHE_DIR"] = str(tmp_path / "cache")  # an empty memtrellis cache
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_OFFLINE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert "NETWORK ATTEMPT" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "OFFLINE OK" in result.stdout


def test_an_unusable_tiktoken_cache_is_logged_not_raised(tmp_path: Path) -> None:
    code = """
import logging, os
logging.basicConfig(level=logging.WARNING)
os.environ["TIKTOKEN_CACHE_DIR"] = ""  # tiktoken's cache off: memtrellis refuses to fill it
import llama_index.memory.memtrellis
from llama_index.memory.memtrellis._tokenizer import ensure_offline_tokenizer
print("imported", ensure_offline_tokenizer())
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "imported False"
    assert "may download cl100k_base" in result.stderr
