"""Fixtures: a real store (Chroma PersistentClient) with the hashing embedder; no network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder, own_tempdir

# The Agents SDK exports traces to OpenAI unless told not to; nothing here reaches a network.
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as mem:
        yield mem


# Every test run writes its temporary files into one directory of its own, removed at the
# end: doctests that call tempfile.mkdtemp() leave no store in the machine's temp directory
# (pytest_configure is historic: it runs for the whole session).
_CLEANUP = ExitStack()


def pytest_configure(config: pytest.Config) -> None:
    _CLEANUP.enter_context(own_tempdir())


def pytest_unconfigure(config: pytest.Config) -> None:
    _CLEANUP.close()
