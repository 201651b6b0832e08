"""Fixtures: memtrellis on a real Chroma PersistentClient with the hashing embedder, and
scripted LlamaIndex LLMs (the only fakes besides the embedder)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from llama_index_instrumentation import get_dispatcher
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder, own_tempdir

from llama_index.memory.memtrellis import MemtrellisEventHandler


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", entity_id="alice", embedder=HashingEmbedder()) as mem:
        yield mem


@pytest.fixture
def closed_memory(tmp_path: Path) -> Memory:
    """A Memory whose store is closed: every recall and capture fails."""
    mem = Memory(tmp_path / "closed", entity_id="alice", embedder=HashingEmbedder())
    mem.close()
    return mem


@pytest.fixture(autouse=True)
def _no_leftover_handlers() -> Iterator[None]:
    yield
    root = get_dispatcher()
    root.event_handlers = [
        h for h in root.event_handlers if not isinstance(h, MemtrellisEventHandler)
    ]


# Every test run writes its temporary files into one directory of its own, removed at the
# end: doctests and notebooks that call tempfile.mkdtemp() leave no store in the machine's
# temp directory (pytest_configure is historic: it runs for the whole session).
_CLEANUP = ExitStack()


def pytest_configure(config: pytest.Config) -> None:
    _CLEANUP.enter_context(own_tempdir())


def pytest_unconfigure(config: pytest.Config) -> None:
    _CLEANUP.close()
