"""By-id operations (get, history, versions, update, forget) follow one rule: a memory bound to
an entity sees only that entity; one on the "default" entity finds any id of its store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memtrellis import Memory, MemoryItem, MemoryNotFoundError, Scope
from memtrellis.testing import HashingEmbedder, store_of

BY_ID: dict[str, Callable[[Memory, str], Any]] = {
    "get": lambda m, i: m.get(i),
    "history": lambda m, i: m.history(i),
    "versions": lambda m, i: m.versions(i),
    "update": lambda m, i: m.update(i, tags=["seen"]),
    "forget": lambda m, i: m.forget(i),
}


def _add_for_u(path: Path) -> str:
    with Memory(path, embedder=HashingEmbedder()) as writer:
        writer.add("Ana likes green tea", entity_id="ana")  # another entity's memory
        [item] = writer.add("U moved to Porto", entity_id="u")
    return item.id


@pytest.mark.parametrize("operation", sorted(BY_ID))
def test_an_unbound_memory_finds_an_id_of_any_entity(tmp_path: Path, operation: str) -> None:
    memory_id = _add_for_u(tmp_path / "store")
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        assert store_of(memory).resident() == []  # found through the catalog, not a cache
        BY_ID[operation](memory, memory_id)
        if operation == "forget":
            assert memory.list(entity_id="u") == []
            assert [i.text for i in memory.list(entity_id="ana")] == ["Ana likes green tea"]
        else:
            item = memory.get(memory_id)
            assert item.scope.entity_id == "u" and item.text == "U moved to Porto"
            assert item.tags == (["seen"] if operation == "update" else item.tags)


def test_the_same_memory_in_one_process_finds_what_it_added_for_another_entity(
    tmp_path: Path,
) -> None:
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        item = memory.add("U moved to Porto", entity_id="u")[0]
        assert memory.get(item.id).text == "U moved to Porto"  # the example
        assert [e.action for e in memory.history(item.id)] == ["created"]


@pytest.mark.parametrize("operation", sorted(BY_ID))
@pytest.mark.parametrize("how", ["bound", "scope", "call"])
def test_a_memory_bound_to_an_entity_sees_only_that_entity(
    tmp_path: Path, operation: str, how: str
) -> None:
    memory_id = _add_for_u(tmp_path / "store")
    bound = "ana" if how == "bound" else "default"
    with Memory(tmp_path / "store", entity_id=bound, embedder=HashingEmbedder()) as memory:
        with pytest.raises(MemoryNotFoundError):
            if how == "scope":
                with memory.scope(entity_id="ana"):
                    BY_ID[operation](memory, memory_id)
            elif how == "call":
                {
                    "get": memory.get,
                    "history": memory.history,
                    "versions": memory.versions,
                    "forget": memory.forget,
                    "update": lambda i, entity_id: memory.update(i, entity_id=entity_id, key="k"),
                }[operation](memory_id, entity_id="ana")
            else:
                BY_ID[operation](memory, memory_id)
        assert memory.get(memory_id, entity_id="u").text == "U moved to Porto"  # untouched


def test_an_unknown_id_is_not_found_by_an_unbound_memory(tmp_path: Path) -> None:
    _add_for_u(tmp_path / "store")
    with (
        Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory,
        pytest.raises(MemoryNotFoundError),
    ):
        memory.get("no-such-id")


def test_an_id_two_entities_hold_is_found_in_the_first_written_entity(tmp_path: Path) -> None:
    """``store()`` takes any id, so two entities may hold one: the order is the catalog's."""
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        memory.store(MemoryItem(id="shared", text="Bob's note", scope=Scope(entity_id="bob")))
        memory.store(MemoryItem(id="shared", text="Ana's note", scope=Scope(entity_id="ana")))
        assert memory.get("shared").text == "Bob's note"  # bob was written first
        memory.store(MemoryItem(id="shared", text="Mine", scope=Scope(entity_id="default")))
        assert memory.get("shared").text == "Mine"  # the default entity comes first
        assert memory.get("shared", entity_id="ana").text == "Ana's note"
