"""MemtrellisStore against LangGraph's BaseStore contract.

langgraph 1.2 and langgraph-checkpoint 4.3 ship no store conformance suite, so this file
is the contract: every BaseStore method, sync and async, checked against what the
docstrings of ``langgraph.store.base`` promise and, for the operations without a query,
against LangGraph's own ``InMemoryStore`` running the same script.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore
from memtrellis import InvalidInputError, Memory
from memtrellis.testing import HashingEmbedder

from langchain_memtrellis import MemtrellisStore
from langchain_memtrellis.store import STORE_TAG

VALUE: dict[str, Any] = {
    "content": "Alice's cat is called Miso",
    "n": 3,
    "ratio": 0.25,
    "big": 2**53 + 1,
    "flag": True,
    "none": None,
    "list": [1, "two", {"three": [3.0]}],
    "nested": {"a": {"b": "deep"}, "é": "ünïcode ✓"},
}


@pytest.fixture
def store(memory: Memory) -> MemtrellisStore:
    return MemtrellisStore(memory)


def _entities(memory: Memory) -> dict[str, list[str]]:
    return {e: sorted(i.text for i in memory.list(entity_id=e)) for e in memory.entities()}


# -- put / get / delete -------------------------------------------------------------------
def test_get_returns_exactly_what_was_put(store: MemtrellisStore) -> None:
    store.put(("memories", "alice"), "pet", VALUE)

    item = store.get(("memories", "alice"), "pet")

    assert item is not None
    assert item.value == VALUE
    assert json.dumps(item.value) == json.dumps(VALUE)  # same order, same types
    assert (item.namespace, item.key) == (("memories", "alice"), "pet")
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None


def test_values_are_copies_both_ways(store: MemtrellisStore) -> None:
    value = {"content": "tea", "tags": ["a"]}
    store.put(("memories", "alice"), "k", value)
    value["tags"].append("changed after the put")
    got = store.get(("memories", "alice"), "k")
    assert got is not None
    got.value["tags"].append("changed after the get")

    again = store.get(("memories", "alice"), "k")
    assert again is not None and again.value == {"content": "tea", "tags": ["a"]}


def test_get_of_a_missing_key_or_namespace_is_none(store: MemtrellisStore) -> None:
    store.put(("memories", "alice"), "pet", {"content": "cat"})

    assert store.get(("memories", "alice"), "other") is None
    assert store.get(("memories", "bob"), "pet") is None
    assert store.get(("notes", "alice"), "pet") is None
    assert store.get(("memories", "alice", "deeper"), "pet") is None


def test_put_again_replaces_and_keeps_created_at(memory: Memory, store: MemtrellisStore) -> None:
    store.put(("memories", "alice"), "city", {"content": "Alice lives in Lyon"})
    first = store.get(("memories", "alice"), "city")
    store.put(("memories", "alice"), "city", {"content": "Alice lives in Porto"})
    second = store.get(("memories", "alice"), "city")

    assert first is not None and second is not None
    assert second.value == {"content": "Alice lives in Porto"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert _entities(memory) == {"alice": ["Alice lives in Porto"]}


def test_delete(memory: Memory, store: MemtrellisStore) -> None:
    store.put(("memories", "alice"), "a", {"content": "one"})
    store.put(("memories", "alice"), "b", {"content": "two"})

    store.delete(("memories", "alice"), "a")
    store.delete(("memories", "alice"), "a")  # again: nothing to do, no error
    store.delete(("memories", "nobody"), "x")

    assert store.get(("memories", "alice"), "a") is None
    assert [i.key for i in store.search(("memories", "alice"))] == ["b"]
    assert _entities(memory) == {"alice": ["two"]}


def test_equal_values_under_two_keys_stay_two_items(memory: Memory, store: MemtrellisStore) -> None:
    """The store writes without the lifecycle: a duplicate is not merged away."""
    store.put(("memories", "alice"), "a", {"content": "Alice likes green tea"})
    store.put(("memories", "alice"), "b", {"content": "Alice likes green tea"})

    assert [i.key for i in store.search(("memories", "alice"))] == ["a", "b"]
    assert len(memory.list(entity_id="alice")) == 2


# -- namespaces and entities ---------------------------------------------------------------
def test_namespaces_map_to_entities(memory: Memory, store: MemtrellisStore) -> None:
    store.put(("memories", "alice"), "k1", {"content": "Alice likes tea"})
    store.put(("memories", "bob"), "k1", {"content": "Bob likes jazz"})
    store.put(("memories", "bob", "work"), "k2", {"content": "Bob works at Acme"})
    store.put(("users",), "carol", {"name": "Carol", "plan": "pro"})  # too short: default

    assert memory.default_scope.entity_id == "alice"  # the fixture's
    assert _entities(memory) == {
        "alice": ["Alice likes tea", "name: Carol\nplan: pro"],
        "bob": ["Bob likes jazz", "Bob works at Acme"],
    }
    stored = memory.list(entity_id="bob")
    assert {i.scope.process_id for i in stored} == {None}
    assert all(STORE_TAG in i.tags for i in stored)
    assert stored[0].metadata["langgraph_store"] == {
        "namespace": ["memories", "bob"],
        "key": "k1",
        "value": {"content": "Bob likes jazz"},
        "indexed": True,
    }


def test_entity_index_and_process(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", embedder=HashingEmbedder(), process_id="app") as memory:
        store = MemtrellisStore(memory, entity_index=0, process_id="langgraph")
        store.put(("alice", "memories"), "k", {"content": "Alice likes tea"})

        [item] = memory.list(entity_id="alice", process_id="langgraph")
        assert item.text == "Alice likes tea"
        assert memory.list(entity_id="alice") == []  # the memory's own process is "app"
        assert store.get(("alice", "memories"), "k") is not None
        # another process's store has its own items under the same namespace and key
        other = MemtrellisStore(memory, entity_index=0)
        assert other.get(("alice", "memories"), "k") is None
        other.put(("alice", "memories"), "k", {"content": "Alice likes coffee"})
        assert store.get(("alice", "memories"), "k").value == {"content": "Alice likes tea"}  # type: ignore[union-attr]


def test_other_memories_of_the_entity_are_not_items(memory: Memory, store: MemtrellisStore) -> None:
    memory.add("Alice's cat is called Miso", entity_id="alice")  # the wrapper's kind
    store.put(("memories", "alice"), "pet", {"content": "Alice has a cat"})

    assert [i.key for i in store.search(("memories", "alice"))] == ["pet"]
    assert [i.key for i in store.search(("memories", "alice"), query="cat Miso")] == ["pet"]
    assert store.list_namespaces() == [("memories", "alice")]


def test_invalid_namespaces_and_values(store: MemtrellisStore) -> None:
    for namespace in [(), ("langgraph", "x"), ("a.b", "c"), ("a", ""), ("a", 3)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", {"v": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a", "b.c"), "k", {"v": 1})])  # batch checks labels too
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("langgraph", "x"), "k", {"v": 1})])
    with pytest.raises(InvalidInputError):
        store.put(("memories", "alice"), "k", {"v": 1}, index=[3])  # type: ignore[list-item]
    with pytest.raises(InvalidNamespaceError):
        store.put(("memories", "x" * 1000), "k", {"v": 1})  # too long for an entity id
    with pytest.raises(InvalidInputError):
        store.put(("memories", "alice"), "k", {"when": object()})
    with pytest.raises(InvalidInputError):
        store.put(("memories", "alice"), "k", {"nan": float("nan")})
    with pytest.raises(NotImplementedError):
        store.put(("memories", "alice"), "k", {"v": 1}, ttl=5)
    with pytest.raises(InvalidInputError):
        MemtrellisStore(store.memory, entity_index=-1)
    assert store.search(("memories", "alice")) == []


# -- search --------------------------------------------------------------------------------
def _pets(store: MemtrellisStore) -> None:
    rows = [
        ("cat", {"content": "Alice's cat Miso sleeps all day", "kind": "pet", "age": 4}),
        ("dog", {"content": "Alice walks her dog Rex at dawn", "kind": "pet", "age": 2}),
        ("tea", {"content": "Alice drinks green tea", "kind": "drink", "age": 0}),
        ("fish", {"content": "Alice feeds a goldfish", "kind": "pet", "age": 1, "x": {"y": 1}}),
    ]
    for key, value in rows:
        store.put(("memories", "alice"), key, value)
    store.put(("memories", "bob"), "cat", {"content": "Bob's cat is Tom", "kind": "pet", "age": 9})


def test_search_without_query_lists_in_put_order_with_paging(store: MemtrellisStore) -> None:
    _pets(store)
    alice = ("memories", "alice")

    assert [i.key for i in store.search(alice)] == ["cat", "dog", "tea", "fish"]
    assert [i.key for i in store.search(alice, limit=2, offset=1)] == ["dog", "tea"]
    assert [i.key for i in store.search(alice, offset=10)] == []
    assert all(i.score is None for i in store.search(alice))
    every = [(i.namespace[1], i.key) for i in store.search(())]
    assert sorted(every) == sorted(
        [("alice", k) for k in ("cat", "dog", "tea", "fish")] + [("bob", "cat")]
    )
    assert [i.namespace for i in store.search(("memories", "bob"))] == [("memories", "bob")]
    assert store.search(("memories", "carol")) == []


def test_search_filters(store: MemtrellisStore) -> None:
    _pets(store)
    alice = ("memories", "alice")

    def keys(**filter: Any) -> list[str]:
        return [i.key for i in store.search(alice, filter=filter)]

    assert keys(kind="pet") == ["cat", "dog", "fish"]
    assert keys(kind="pet", age={"$gte": 2}) == ["cat", "dog"]
    assert keys(age={"$gt": 0, "$lt": 4}) == ["dog", "fish"]
    assert keys(age={"$lte": 0}) == ["tea"]
    assert keys(kind={"$ne": "pet"}) == ["tea"]
    assert keys(kind={"$eq": "drink"}) == ["tea"]
    assert keys(x={"y": 1}) == ["fish"]
    assert keys(missing="nothing") == []
    assert [i.key for i in store.search((), filter={"age": 9})] == ["cat"]
    with pytest.raises(InvalidInputError):
        keys(age={"$regex": "x"})


def test_search_with_query_is_recall(store: MemtrellisStore) -> None:
    _pets(store)
    alice = ("memories", "alice")

    hits = store.search(alice, query="cat Miso sleeps")

    assert hits[0].key == "cat"
    assert hits[0].score is not None and hits[0].score > 0
    assert {i.key for i in hits} == {"cat", "dog", "tea", "fish"}  # a full page
    assert all(i.namespace == alice for i in hits)
    assert hits[0].value == {"content": "Alice's cat Miso sleeps all day", "kind": "pet", "age": 4}
    filtered = store.search(alice, query="cat Miso", filter={"kind": "drink"})
    assert [i.key for i in filtered] == ["tea"]
    assert [i.key for i in store.search(alice, query="walks dog Rex dawn", limit=1)] == ["dog"]
    first_two = [i.key for i in store.search(alice, query="cat Miso sleeps", limit=2)]
    second = store.search(alice, query="cat Miso sleeps", limit=2, offset=1)
    assert second[0].key == first_two[1]
    across = store.search(("memories",), query="cat")
    assert {(i.namespace[1], i.key) for i in across[:2]} == {("alice", "cat"), ("bob", "cat")}


def test_index_false_and_index_fields(memory: Memory) -> None:
    store = MemtrellisStore(memory, fields=["text"])
    ns = ("docs", "alice")
    store.put(ns, "a", {"text": "quarterly revenue report", "title": "zebra"})
    store.put(ns, "b", {"text": "holiday photos", "title": "revenue"}, index=["title"])
    store.put(ns, "c", {"text": "revenue revenue secrets"}, index=False)

    texts = {i.metadata["langgraph_store"]["key"]: i.text for i in memory.list(entity_id="alice")}
    assert texts == {
        "a": "quarterly revenue report",
        "b": "revenue",
        "c": "revenue revenue secrets",
    }
    hits = store.search(ns, query="revenue")
    assert {i.key for i in hits if i.score is not None} == {"a", "b"}
    assert [(i.key, i.score) for i in hits][-1] == ("c", None)  # listed, never ranked


# -- list_namespaces -----------------------------------------------------------------------
def test_list_namespaces(store: MemtrellisStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("x", "y"),
    ]:
        store.put(ns, "k", {"v": 1})

    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    store.delete(("x", "y"), "k")
    assert ("x", "y") not in store.list_namespaces()


# -- batch, async, persistence -------------------------------------------------------------
def test_batch_runs_in_order(store: MemtrellisStore) -> None:
    ns = ("memories", "alice")
    results = store.batch(
        [
            PutOp(ns, "a", {"content": "one"}),
            GetOp(ns, "a"),
            SearchOp(ns),
            PutOp(ns, "a", None),
            GetOp(ns, "a"),
            ListNamespacesOp(),
        ]
    )

    assert results[0] is None and results[3] is None and results[4] is None
    assert results[1].value == {"content": "one"}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["a"]  # type: ignore[union-attr]
    assert results[5] == []


async def test_async_methods(store: MemtrellisStore) -> None:
    ns = ("memories", "alice")
    await store.aput(ns, "a", {"content": "Alice likes tea"})
    await asyncio.gather(*(store.aput(ns, f"k{i}", {"content": f"note {i}"}) for i in range(5)))

    item = await store.aget(ns, "a")
    assert item is not None and item.value == {"content": "Alice likes tea"}
    assert len(await store.asearch(ns)) == 6
    assert (await store.asearch(ns, query="tea", limit=1))[0].key == "a"
    assert await store.alist_namespaces() == [ns]
    await store.adelete(ns, "a")
    assert await store.aget(ns, "a") is None
    [result] = await store.abatch([GetOp(ns, "k1")])
    assert result.value == {"content": "note 1"}  # type: ignore[union-attr]


def test_items_survive_a_reopen(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", embedder=HashingEmbedder()) as memory:
        MemtrellisStore(memory).put(("memories", "alice"), "pet", VALUE)
    with Memory(tmp_path / "s", embedder=HashingEmbedder()) as memory:
        store = MemtrellisStore(memory)
        item = store.get(("memories", "alice"), "pet")
        assert item is not None and item.value == VALUE
        assert store.search(("memories", "alice"), query="cat Miso")[0].key == "pet"


# -- against LangGraph's InMemoryStore -----------------------------------------------------
_labels = st.sampled_from(["memories", "alice", "bob", "docs", "x"])
_namespaces = st.lists(_labels, min_size=1, max_size=3).map(tuple)
_values = st.fixed_dictionaries(
    {"content": st.sampled_from(["tea", "jazz", "cats", "Lyon"]), "n": st.integers(0, 3)}
)
_ops = st.one_of(
    st.builds(PutOp, _namespaces, st.sampled_from("abc"), st.one_of(st.none(), _values)),
    st.builds(GetOp, _namespaces, st.sampled_from("abc")),
    st.builds(
        SearchOp,
        st.lists(_labels, max_size=2).map(tuple),
        st.one_of(st.none(), st.fixed_dictionaries({"n": st.integers(0, 3)})),
        st.integers(0, 5),
        st.integers(0, 2),
    ),
    st.builds(ListNamespacesOp, st.none(), st.one_of(st.none(), st.integers(1, 3))),
)


def _plain(result: Any) -> Any:
    if isinstance(result, list):
        return [_plain(r) for r in result]
    if hasattr(result, "value"):
        return (result.namespace, result.key, result.value)
    return result


def _expected_namespaces(reference: InMemoryStore, op: ListNamespacesOp) -> list[Any]:
    """The reference's answer over the namespaces that hold items (InMemoryStore also
    lists a namespace that a get or a delete only looked at)."""
    held = {item.namespace for item in reference.search((), limit=10_000)}
    if op.max_depth is not None:
        held = {ns[: op.max_depth] for ns in held}
    return sorted(held)[op.offset : op.offset + op.limit]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=st.lists(_ops, max_size=12))
def test_same_results_as_langgraphs_in_memory_store(
    tmp_path_factory: Any, script: list[Any]
) -> None:
    """Without a query, every operation answers as LangGraph's reference store does
    (one operation per batch: InMemoryStore applies a batch's puts after its reads)."""
    reference = InMemoryStore()
    with Memory(tmp_path_factory.mktemp("s"), embedder=HashingEmbedder()) as memory:
        store = MemtrellisStore(memory)
        for op in script:
            [expected] = reference.batch([op])
            [got] = store.batch([op])
            if isinstance(op, ListNamespacesOp):
                expected = _expected_namespaces(reference, op)
            if isinstance(op, SearchOp):
                # the same page size, and the same members over the whole prefix; the
                # order across namespaces differs (we walk entities, it walks namespaces)
                assert len(got) == len(expected), op
                whole = op._replace(limit=10_000, offset=0)
                expected = sorted(_plain(reference.batch([whole])[0]))
                got = sorted(_plain(store.batch([whole])[0]))
            assert _plain(got) == _plain(expected), op
