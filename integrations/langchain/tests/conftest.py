"""Fixtures: a real store (Chroma PersistentClient) with the hashing embedder, fake models."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder, own_tempdir


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", entity_id="alice", embedder=HashingEmbedder()) as mem:
        yield mem


# Every test run writes its temporary files into one directory of its own, removed at the
# end: doctests and notebooks that call tempfile.mkdtemp() leave no store in the machine's
# temp directory (pytest_configure is historic: it runs for the whole session).
_CLEANUP = ExitStack()


def pytest_configure(config: pytest.Config) -> None:
    _CLEANUP.enter_context(own_tempdir())


def pytest_unconfigure(config: pytest.Config) -> None:
    _CLEANUP.close()
