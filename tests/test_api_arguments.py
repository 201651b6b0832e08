"""Wrong-typed arguments to every public method of ``Memory`` (issue 19, item 8).

Each call returns normally or raises a ``MemtrellisError`` (bad input:
``InvalidInputError``, whose message says what is allowed), never a ``TypeError``,
``KeyError`` or ``AttributeError`` from inside; a file the OS cannot open is its
documented ``OSError``. Nothing stored before changes. Real Chroma ``PersistentClient``
under tmp_path; only the embedder is fake.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtrellis import InvalidInputError, Memory, MemtrellisError
from memtrellis.testing import HashingEmbedder

KEEPER = "keeper-5d1a"
WRONG: list[Any] = [
    None,
    0,
    -1,
    1.5,
    math.nan,
    math.inf,
    True,
    "",
    "x" * 100_000,
    {1: True},
    {1: True, "bogus": True},
    {"memory_type": 5},
    {"tags": "drinks"},
    {"tags": [1]},
    {"memory_type": ["gossip"]},
    {"memory_type": [None]},
    {"key": 5},
    {"include_superseded": "no"},
    {"session_id": "\x00"},
    [1],
    [None],
    b"x",
    object(),
    {"a"},
    (1,),
    "\ud800",
    "a\x00b",
    datetime(2020, 1, 1),
    -(10**30),
    10**30,
    10**5000,  # more digits than repr() prints
]
Call = Callable[[Memory, Any, Path, str], Any]

CALLS: dict[str, Call] = {
    "list(filters=)": lambda m, v, d, i: m.list(filters=v),
    "list(limit=)": lambda m, v, d, i: m.list(limit=v),
    "list(offset=)": lambda m, v, d, i: m.list(offset=v),
    "list(entity_id=)": lambda m, v, d, i: m.list(entity_id=v),
    "list(process_id=)": lambda m, v, d, i: m.list(process_id=v),
    "list(session_id=)": lambda m, v, d, i: m.list(session_id=v),
    "alist(filters=)": lambda m, v, d, i: asyncio.run(m.alist(filters=v)),
    "recall(query)": lambda m, v, d, i: m.recall(v),
    "recall(k=)": lambda m, v, d, i: m.recall("tea", k=v),
    "recall(token_budget=)": lambda m, v, d, i: m.recall("tea", token_budget=v),
    "recall(as_of=)": lambda m, v, d, i: m.recall("tea", as_of=v),
    "recall(memory_types=)": lambda m, v, d, i: m.recall("tea", memory_types=v),
    "recall(tags=)": lambda m, v, d, i: m.recall("tea", tags=v),
    "recall(include_superseded=)": lambda m, v, d, i: m.recall("tea", include_superseded=v),
    "recall(include_expired=)": lambda m, v, d, i: m.recall("tea", include_expired=v),
    "recall(graph_context=)": lambda m, v, d, i: m.recall("tea", graph_context=v),
    "recall(entity_id=)": lambda m, v, d, i: m.recall("tea", entity_id=v),
    "recall(session_id=)": lambda m, v, d, i: m.recall("tea", session_id=v),
    "arecall(k=)": lambda m, v, d, i: asyncio.run(m.arecall("tea", k=v)),
    "get": lambda m, v, d, i: m.get(v),
    "get(entity_id=)": lambda m, v, d, i: m.get(i, entity_id=v),
    "history": lambda m, v, d, i: m.history(v),
    "versions": lambda m, v, d, i: m.versions(v),
    "forget": lambda m, v, d, i: m.forget(v),
    "forget(entity_id=)": lambda m, v, d, i: m.forget(entity_id=v),
    "update(memory_id)": lambda m, v, d, i: m.update(v, text="changed"),
    "update(entity_id=)": lambda m, v, d, i: m.update(i, entity_id=v, key="k"),
    "update(text=)": lambda m, v, d, i: m.update(i, text=v),
    "update(key=)": lambda m, v, d, i: m.update(i, key=v),
    "update(memory_type=)": lambda m, v, d, i: m.update(i, memory_type=v),
    "update(tags=)": lambda m, v, d, i: m.update(i, tags=v),
    "update(entities=)": lambda m, v, d, i: m.update(i, entities=v),
    "update(confidence=)": lambda m, v, d, i: m.update(i, confidence=v),
    "update(valid_from=)": lambda m, v, d, i: m.update(i, valid_from=v),
    "update(valid_until=)": lambda m, v, d, i: m.update(i, valid_until=v),
    "update(metadata=)": lambda m, v, d, i: m.update(i, metadata=v),
    "add(data)": lambda m, v, d, i: m.add(v),
    "add(memory_type=)": lambda m, v, d, i: m.add("tea is nice", memory_type=v),
    "add(mode=)": lambda m, v, d, i: m.add("tea is nice", mode=v),
    "add(tags=)": lambda m, v, d, i: m.add("tea is nice", tags=v),
    "add(entities=)": lambda m, v, d, i: m.add("tea is nice", entities=v),
    "add(metadata=)": lambda m, v, d, i: m.add("tea is nice", metadata=v),
    "add(progress=)": lambda m, v, d, i: m.add("tea is nice", progress=v),
    "add(session_id=)": lambda m, v, d, i: m.add("tea is nice", session_id=v),
    "capture(data)": lambda m, v, d, i: m.capture(v),
    "capture(mode=)": lambda m, v, d, i: m.capture("I drink tea", mode=v),
    "capture(tags=)": lambda m, v, d, i: m.capture("I drink tea", tags=v),
    "capture(metadata=)": lambda m, v, d, i: m.capture("I drink tea", metadata=v),
    "flush(timeout)": lambda m, v, d, i: (m.capture("I drink coffee"), m.flush(v)),
    "refine(entity_id=)": lambda m, v, d, i: m.refine(entity_id=v),
    "refine(limit=)": lambda m, v, d, i: m.refine(limit=v),
    "store(item)": lambda m, v, d, i: m.store(v),
    "export(path)": lambda m, v, d, i: m.export(v),
    "export(entity_id=)": lambda m, v, d, i: m.export(io.StringIO(), entity_id=v),
    "import_(path)": lambda m, v, d, i: m.import_(v),
    "import_(batch_size=)": lambda m, v, d, i: m.import_(io.StringIO(""), batch_size=v),
    "import_(entity_id=)": lambda m, v, d, i: m.import_(io.StringIO(""), entity_id=v),
    "export_graph(path)": lambda m, v, d, i: m.export_graph(v, format="json"),
    "export_graph(format=)": lambda m, v, d, i: m.export_graph(d / "graph.out", format=v),
    "export_graph(max_memories=)": lambda m, v, d, i: m.export_graph(
        d / "graph.json", format="json", max_memories=v
    ),
    "export_graph(entity_id=)": lambda m, v, d, i: m.export_graph(
        d / "graph.json", format="json", entity_id=v
    ),
    "scope(entity_id=)": lambda m, v, d, i: m.scope(entity_id=v).__enter__(),
    "scope(session_id=)": lambda m, v, d, i: m.scope(session_id=v).__enter__(),
    "current_scope(entity_id=)": lambda m, v, d, i: m.current_scope(entity_id=v),
    "current_scope(defaults=)": lambda m, v, d, i: m.current_scope(defaults=v),
    "register(k=)": lambda m, v, d, i: m.register(v),
    "unregister": lambda m, v, d, i: m.unregister(v),
    "on_close": lambda m, v, d, i: m.on_close(v),
    "count_adapter": lambda m, v, d, i: m.count_adapter(v, source=v),
    # the async twins check the same way
    "aget": lambda m, v, d, i: asyncio.run(m.aget(v)),
    "aforget(entity_id=)": lambda m, v, d, i: asyncio.run(m.aforget(entity_id=v)),
    "aupdate(tags=)": lambda m, v, d, i: asyncio.run(m.aupdate(i, tags=v)),
    "aadd(metadata=)": lambda m, v, d, i: asyncio.run(m.aadd("tea is nice", metadata=v)),
    "acapture(data)": lambda m, v, d, i: asyncio.run(m.acapture(v)),
    "aflush(timeout)": lambda m, v, d, i: asyncio.run(m.aflush(v)),
    "aexport(path)": lambda m, v, d, i: asyncio.run(m.aexport(v)),
}
#: Calls that name a file: the OS's own OSError (a name too long) is their documented error.
FILE_CALLS = {"export(path)", "aexport(path)", "import_(path)", "export_graph(path)"}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", embedder=HashingEmbedder(), drain_timeout=60) as m:
        yield m


def _state(memory: Memory) -> dict[str, dict[str, Any]]:
    items = memory.list(entity_id=KEEPER, limit=1000)
    return {i.id: i.model_dump(exclude={"recall_count", "last_recalled_at"}) for i in items}


def _named(value: Any) -> str:
    try:
        return repr(value)[:40]
    except ValueError:  # 10**5000
        return "a huge int"


def _try(memory: Memory, name: str, value: Any, folder: Path, item_id: str) -> str | None:
    """What went wrong (None: a result or a typed error)."""
    try:
        CALLS[name](memory, value, folder, item_id)
    except MemtrellisError:
        return None
    except OSError:
        return None if name in FILE_CALLS else f"{name}({_named(value)}): OSError"
    except Exception as exc:  # reported: every untyped error is a failure
        return f"{name}({_named(value)}): {type(exc).__name__}: {exc!s:.80}"
    return None


def test_wrong_arguments_to_every_method_are_typed_errors_and_lose_nothing(
    memory: Memory, tmp_path: Path
) -> None:
    memory.add("Alice is allergic to peanuts", entity_id=KEEPER)
    memory.add("Alice's locker code is 4411", entity_id=KEEPER, tags=["locker"])
    [probe] = memory.add("Probe drinks green tea")
    before = _state(memory)
    folder = tmp_path / "out"
    folder.mkdir()
    untyped = [
        problem
        for name in CALLS
        for value in WRONG
        if (problem := _try(memory, name, value, folder, probe.id)) is not None
    ]
    assert untyped == []
    assert memory.flush(timeout=60)
    assert _state(memory) == before  # nothing stored before was lost or changed
    assert memory.health().capture_failures == 0


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ({1: True, "bogus": True}, "unknown filters 1, 'bogus'; known: "),
        ({"colour": "red"}, "known: include_expired, include_superseded, key, memory_type"),
        ("memory_type=fact", "filters must be a dict"),
        ({"memory_type": "gossip"}, "known: fact, preference, event"),
        ({"memory_type": [3]}, "memory type names"),
        ({"tags": "drinks"}, "tags must be a list of tag strings"),
        ({"tags": [None]}, "tag strings"),
        ({"include_expired": "no"}, "must be True or False"),
        ({"key": 7}, "filter 'key' must be a string"),
        ({"session_id": ""}, "invalid scope"),
    ],
)
def test_list_filters_say_what_is_allowed(memory: Memory, filters: Any, says: str) -> None:
    memory.add("Ana likes tea")
    with pytest.raises(InvalidInputError) as raised:
        memory.list(filters=filters)
    assert says in str(raised.value)


def test_list_filters_still_filter(memory: Memory) -> None:
    memory.add("Ana decided to move", memory_type="decision", tags=["move"])
    memory.add("Ana likes tea", memory_type="preference", tags=["drinks"])
    by_type = memory.list(filters={"memory_type": "decision"})
    assert [i.text for i in by_type] == ["Ana decided to move"]
    by_types = memory.list(filters={"memory_type": ("decision", "preference")})
    assert len(by_types) == 2
    assert [i.text for i in memory.list(filters={"tags": ["drinks"]})] == ["Ana likes tea"]
    assert len(memory.list(filters={"include_superseded": None, "tags": None})) == 2


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"memory_types": "fact"}, "memory_types must be a list of memory types (fact, "),
        ({"memory_types": [None]}, "memory type names"),
        ({"memory_types": ["gossip"]}, "known: fact, preference"),
        ({"tags": {"a": 1}}, "tags must be a list of tag strings"),
        ({"include_expired": "no"}, "include_expired must be True or False"),
        ({"graph_context": 1}, "graph_context must be True or False"),
    ],
)
def test_recall_filters_say_what_is_allowed(
    memory: Memory, kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        memory.recall("tea", **kwargs)
    assert says in str(raised.value)


filter_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=8), st.integers(), st.none()), max_size=3),
    st.sampled_from(["fact", "decision", ["fact"], ["drinks"], {"x": 1}, object()]),
)
filter_dicts = st.dictionaries(
    st.one_of(
        st.sampled_from(
            ["memory_type", "tags", "key", "include_superseded", "include_expired", "session_id"]
        ),
        st.text(max_size=5),
        st.integers(),
        st.none(),
    ),
    filter_values,
    max_size=4,
)


def test_any_filters_are_a_page_or_a_typed_error(memory: Memory) -> None:
    memory.add("Ana likes tea", memory_type="preference", tags=["drinks"])
    count = len(memory.list())

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(filters=st.one_of(filter_dicts, filter_values))
    def run(filters: Any) -> None:
        try:
            page = memory.list(filters=filters)
        except InvalidInputError as exc:
            assert str(exc)
        else:
            assert len(page) <= count
        with contextlib.suppress(InvalidInputError):
            memory.recall("tea", memory_types=filters, tags=filters)

    run()
    assert len(memory.list()) == count
