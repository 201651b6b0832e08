"""A relation judge's ``duplicate`` merges a new memory into a stored one only when the
rules see the same claim: a merge keeps the stored text alone, so a wrong ``duplicate``
(which small models say of moves and new dates) would erase the new memory's fact."""

from __future__ import annotations

import json
from pathlib import Path

from memtrellis import Memory, MemoryItem, Scope
from memtrellis.testing import HashingEmbedder, ScriptedLLM

SCOPE = Scope(entity_id="mira")


def always_duplicate(messages: list[dict[str, str]]) -> str:
    return json.dumps({"relations": [{"index": 0, "relation": "duplicate", "reason": "same"}]})


def test_a_duplicate_the_rules_do_not_see_keeps_both_memories(tmp_path: Path) -> None:
    llm = ScriptedLLM(always_duplicate)
    with Memory(tmp_path / "s", embedder=HashingEmbedder(), llm=llm) as memory:
        old = memory.store(MemoryItem(text="Mira lives in Lisbon.", scope=SCOPE))
        new = memory.store(MemoryItem(text="Mira moved to Porto in March.", scope=SCOPE))
        texts = [m.text for m in memory.list(entity_id="mira")]
        health = memory.health()
    assert new.id != old.id and new.text == "Mira moved to Porto in March."
    assert sorted(texts) == ["Mira lives in Lisbon.", "Mira moved to Porto in March."]
    assert health.merged_duplicates == 0
    assert health.edges_by_kind.get("supports", 0) >= 1, health.edges_by_kind


def test_a_duplicate_the_rules_agree_with_is_still_merged(tmp_path: Path) -> None:
    llm = ScriptedLLM(always_duplicate)
    with Memory(tmp_path / "s", embedder=HashingEmbedder(), llm=llm) as memory:
        old = memory.store(MemoryItem(text="Mira lives in Lisbon.", scope=SCOPE))
        again = memory.store(MemoryItem(text="Mira lives in Lisbon", scope=SCOPE))
        health = memory.health()
    assert again.id == old.id
    assert health.merged_duplicates == 1
