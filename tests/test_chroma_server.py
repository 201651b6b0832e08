"""Server mode: the same Memory against a real `chroma run` on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

pytestmark = pytest.mark.server


def test_add_recall_forget_through_a_chroma_server(tmp_path: Path, chroma_server: str) -> None:
    with Memory(
        tmp_path / "s", entity_id="carol", embedder=HashingEmbedder(), chroma_url=chroma_server
    ) as m:
        assert m.health().vector_backend == "http"
        [a, _] = m.add(["Carol plays the cello", "Carol lives in Oslo"])
        m.add("Dave plays the drums", entity_id="dave")
        top = m.recall("carol cello").items[0]
        assert top.memory.id == a.id and top.explanation.dense_score is not None
        assert all(r.memory.scope.entity_id == "carol" for r in m.recall("drums").items)
        assert m.forget(a.id) == 1
        assert a.id not in {r.memory.id for r in m.recall("cello").items}
    with Memory(
        tmp_path / "s", entity_id="carol", embedder=HashingEmbedder(), chroma_url=chroma_server
    ) as m:
        assert [i.text for i in m.list()] == ["Carol lives in Oslo"]
        assert m.forget(entity_id="dave") == 1
