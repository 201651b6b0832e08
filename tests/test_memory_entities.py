"""Memory.entities(): the store's entities from the catalog, for integrations that walk them."""

from __future__ import annotations

from pathlib import Path

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder


async def test_entities_in_first_written_order_until_forgotten(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", embedder=HashingEmbedder()) as memory:
        assert memory.entities() == []
        memory.add("Bob likes jazz", entity_id="bob")
        memory.add("Ana likes tea", entity_id="ana")
        memory.add("Bob plays bass", entity_id="bob")
        assert memory.entities() == ["bob", "ana"]
        memory.forget(entity_id="bob")
        assert await memory.aentities() == ["ana"]
    with Memory(tmp_path / "s", embedder=HashingEmbedder()) as memory:
        assert memory.entities() == ["ana"]
