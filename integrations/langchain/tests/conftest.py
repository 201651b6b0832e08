"""Fixtures: a real store (Chroma PersistentClient) with the hashing embedder, fake models."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", entity_id="alice", embedder=HashingEmbedder()) as mem:
        yield mem
