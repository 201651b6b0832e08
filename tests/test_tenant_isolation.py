"""Tenant isolation: no output ever holds another entity's memory.

A Hypothesis state machine drives one real ``Memory`` (Chroma ``PersistentClient`` on a
temporary directory) through random operations in random scopes: an ``entity_id`` given
as an argument, set by ``Memory.scope()`` (also overridden by an argument inside the
block) or left to the default scope, with random processes and sessions. Every text
carries its entity's marker token, and every query carries words every entity uses, so
a leak shows up in each output: recall, list, get/history/versions, the JSON-lines
export, the graph exports (JSON, GraphML, HTML) and the rendered memory context. A model
of which ids each entity owns is checked against every id an output shows.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from typer.testing import CliRunner

from memtrellis import Memory, MemoryNotFoundError
from memtrellis.cli import app
from memtrellis.cli._state import EVERYTHING, PAGE_SIZE
from memtrellis.context import build_context
from memtrellis.errors import InvalidInputError
from memtrellis.testing import HashingEmbedder, store_of
from memtrellis.types import MemoryItem, MemoryType, Scope

#: "default" is the entity of the default scope (Memory(...) without entity_id).
#: "ent" and "ent:a" with the names "a:Paris" and "Paris" would share entity nodes if the
#: node ids were ambiguous.
MARKERS = {
    "default": "qqdefaultmark",
    "ent": "qqcharliemark",
    "ent:a": "qqalphamark",
    "ent-b": "qqbravomark",
}
ENTITIES = sorted(MARKERS)
PROCESSES = [None, "p1", "p2"]
SESSIONS = [None, "s1", "s2"]
# Shared by every entity, so that an unpartitioned index would match across entities.
WORDS = ["tea", "paris", "locker", "violin", "deadline", "garden", "python", "dentist"]
NAMES = ["Paris", "a:Paris", "Gym", "Alex", "Acme"]  # entity names every tenant mentions


def foreign_markers(entity: str) -> list[str]:
    return [mark for who, mark in MARKERS.items() if who != entity]


def assert_no_leak(entity: str, rendered: str, where: str) -> None:
    """``rendered`` (any output turned into text) holds no other entity's marker."""
    lowered = rendered.lower()
    for mark in foreign_markers(entity):
        assert mark not in lowered, f"{where} for {entity!r} shows {mark!r}"


texts = st.builds(
    lambda words, number: " ".join(words) + f" {number}",
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(0, 5),
)
# Ids are random, so a rule picks one by position: the drawn data stays the same.
picks = st.integers(0, 1 << 16)
scope_ways = st.sampled_from(["arg", "scope", "scope_then_arg", "default"])


class TenantMachine(RuleBasedStateMachine):
    """One store, four entities, random operations; the model: ids owned per entity."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="mt-tenants-"))
        self.memory = Memory(self.directory / "store", embedder=HashingEmbedder())
        self.owned: dict[str, set[str]] = {e: set() for e in ENTITIES}

    # -- scope -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def scoped(self, entity: str, way: str, **extra: str | None) -> Iterator[dict[str, Any]]:
        """Enter ``entity``'s scope ``way``; yields the keyword arguments a call takes."""
        given = {k: v for k, v in extra.items() if v is not None}
        if way == "default" and entity != "default":
            way = "arg"
        if way == "arg":
            yield {"entity_id": entity, **given}
        elif way == "default":
            yield given
        elif way == "scope":
            with self.memory.scope(entity_id=entity, **given):
                yield {}
        else:  # an argument inside another entity's scope block wins
            other = next(e for e in ENTITIES if e != entity)
            with self.memory.scope(entity_id=other):
                yield {"entity_id": entity, **given}

    def text_for(self, entity: str, text: str) -> str:
        return f"{MARKERS[entity]} {text}"

    def pairs(self) -> list[tuple[str, str]]:
        """``(memory id, entity)`` of every memory the model knows (ids are per entity)."""
        return sorted((i, e) for e, ids in self.owned.items() for i in ids)

    def foreign(self, memory_id: str, entity: str) -> bool:
        """Whether the id is only another entity's."""
        return memory_id not in self.owned[entity] and any(
            memory_id in ids for e, ids in self.owned.items() if e != entity
        )

    def check_items(self, entity: str, items: list[MemoryItem], where: str) -> None:
        for item in items:
            assert item.scope.entity_id == entity, f"{where}: {item.scope} for {entity!r}"
            assert not self.foreign(item.id, entity), f"{where}: another entity's id"
            assert MARKERS[entity] in item.text.lower(), f"{where}: {item.text!r}"
            assert_no_leak(entity, item.model_dump_json(), where)
            self.owned[entity].add(item.id)  # captured memories get known here

    # -- writes ----------------------------------------------------------------------------
    @initialize()
    def start(self) -> None:
        # Every entity has a memory mentioning the shared names, so that graph context
        # (memories sharing an entity) has something to walk to, in every tenant.
        for entity in ENTITIES:
            [item] = self.memory.add(
                self.text_for(entity, "met Alex at the Gym in Paris"),
                entity_id=entity,
                entities=NAMES,
                mode="fast",
            )
            self.owned[entity].add(item.id)

    @rule(
        entity=st.sampled_from(ENTITIES),
        way=scope_ways,
        process=st.sampled_from(PROCESSES),
        session=st.sampled_from(SESSIONS),
        text=texts,
        names=st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
        kind=st.sampled_from([None, "fact", "preference", "decision"]),
    )
    def add(
        self,
        entity: str,
        way: str,
        process: str | None,
        session: str | None,
        text: str,
        names: list[str],
        kind: str | None,
    ) -> None:
        with self.scoped(entity, way, process_id=process, session_id=session) as kwargs:
            items = self.memory.add(
                self.text_for(entity, text), entities=names, memory_type=kind, **kwargs
            )
        self.check_items(entity, items, "add")

    @rule(
        entity=st.sampled_from(ENTITIES),
        process=st.sampled_from(PROCESSES),
        text=texts,
        lifecycle=st.booleans(),
    )
    def store(self, entity: str, process: str | None, text: str, lifecycle: bool) -> None:
        item = MemoryItem(
            text=self.text_for(entity, text),
            memory_type=MemoryType.FACT,
            entities=["Acme"],
            scope=Scope(entity_id=entity, process_id=process),
        )
        stored = self.memory.store(item, lifecycle=lifecycle)
        self.check_items(entity, [stored], "store")

    @precondition(lambda self: any(self.owned.values()))
    @rule(pick=picks, entity=st.sampled_from(ENTITIES), text=texts)
    def store_with_another_entitys_id(self, pick: int, entity: str, text: str) -> None:
        theirs = [(i, e) for i, e in self.pairs() if e != entity and i not in self.owned[entity]]
        if not theirs:
            return
        taken, owner = theirs[pick % len(theirs)]
        # Turns captured earlier may still be merged into the other entity's memory by the
        # worker: only once they are stored is its state one to compare with.
        assert self.memory.flush(30)
        before = self.memory.get(taken, entity_id=owner)
        item = MemoryItem(id=taken, text=self.text_for(entity, text), scope=Scope(entity_id=entity))
        # Ids are per entity: the same id names a memory of this entity of its own, and the
        # other entity's memory is untouched.
        stored = self.memory.store(item)
        self.owned[entity].add(stored.id)
        self.check_items(entity, [stored], "store with another entity's id")
        assert self.memory.get(taken, entity_id=owner) == before

    @rule(
        entity=st.sampled_from(ENTITIES),
        way=scope_ways,
        session=st.sampled_from(SESSIONS),
        text=texts,
        as_messages=st.booleans(),
    )
    def capture(
        self, entity: str, way: str, session: str | None, text: str, as_messages: bool
    ) -> None:
        content = self.text_for(entity, text)
        data: Any = (
            [
                {"role": "user", "content": content},
                {"role": "assistant", "content": f"{MARKERS[entity]} noted"},
            ]
            if as_messages
            else content
        )
        with self.scoped(entity, way, session_id=session) as kwargs:
            self.memory.capture(data, mode="fast", **kwargs)

    @rule()
    def flush(self) -> None:
        assert self.memory.flush(30)

    # -- reads -----------------------------------------------------------------------------
    @rule(
        entity=st.sampled_from(ENTITIES),
        way=scope_ways,
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        bait=st.sampled_from([None, *MARKERS.values()]),
        process=st.sampled_from(PROCESSES),
        session=st.sampled_from(SESSIONS),
        graph_context=st.booleans(),
        everything=st.booleans(),
        budget=st.sampled_from([None, 60, 400]),
    )
    def recall_and_context(
        self,
        entity: str,
        way: str,
        words: list[str],
        bait: str | None,
        process: str | None,
        session: str | None,
        graph_context: bool,
        everything: bool,
        budget: int | None,
    ) -> None:
        # The bait is another entity's marker in the query: the closest texts are theirs.
        query = " ".join(words + ([bait] if bait else []))
        with self.scoped(entity, way, process_id=process, session_id=session) as kwargs:
            result = self.memory.recall(
                query,
                k=20,
                token_budget=budget,
                graph_context=graph_context,
                include_superseded=everything,
                include_expired=everything,
                **kwargs,
            )
            open_items = self.memory.list(filters={"memory_type": "decision"}, **kwargs)
        assert result.scope.entity_id == entity
        self.check_items(entity, [r.memory for r in result.items], "recall")
        # Ids a recall names besides its items: none may be another entity's.
        named = [s.id for s in result.skipped] + [s.superseded_by for s in result.skipped]
        named += [i for r in result.items for i in r.explanation.replaces]
        assert not any(self.foreign(i, entity) for i in named if i), "recall names an id"
        # the query echoes the bait; everything else is checked
        assert_no_leak(entity, result.model_dump_json(exclude={"query"}), "recall result")
        context = build_context(result, token_budget=budget or 800, open_items=open_items)
        assert_no_leak(entity, context.text, "memory context")

    @rule(
        entity=st.sampled_from(ENTITIES),
        way=scope_ways,
        process=st.sampled_from(PROCESSES),
        session=st.sampled_from(SESSIONS),
        filters=st.sampled_from(
            [None, EVERYTHING, {"memory_type": ["fact", "decision"]}, {"tags": ["mode:fast"]}]
        ),
        limit=st.sampled_from([1, 5, 100]),
        offset=st.sampled_from([0, 2]),
    )
    def list_memories(
        self,
        entity: str,
        way: str,
        process: str | None,
        session: str | None,
        filters: dict[str, Any] | None,
        limit: int,
        offset: int,
    ) -> None:
        with self.scoped(entity, way, process_id=process, session_id=session) as kwargs:
            items = self.memory.list(limit=limit, offset=offset, filters=filters, **kwargs)
        self.check_items(entity, items, "list")

    @precondition(lambda self: any(self.owned.values()))
    @rule(pick=picks, entity=st.sampled_from(ENTITIES), way=scope_ways)
    def get_history_versions(self, pick: int, entity: str, way: str) -> None:
        pairs = self.pairs()
        memory_id, _ = pairs[pick % len(pairs)]
        with self.scoped(entity, way) as kwargs:
            if entity == "default" and way == "default" and memory_id not in self.owned[entity]:
                # A Memory on the default entity, no scope or argument naming one, finds an
                # id of any entity by id ("By id" in docs/concepts.md): its owner's memory,
                # the first entity holding the id in the order entities were first written.
                owners = [e for e in self.memory.entities() if memory_id in self.owned.get(e, ())]
                try:
                    item = self.memory.get(memory_id)
                except MemoryNotFoundError:
                    return  # merged away or forgotten
                assert owners and item.scope.entity_id == owners[0], (item.scope, owners)
                self.check_items(owners[0], self.memory.versions(memory_id), "versions")
                return
            if memory_id not in self.owned[entity]:
                for call in (
                    self.memory.get,
                    self.memory.history,
                    self.memory.versions,
                    self.memory.forget,
                ):
                    with pytest.raises(MemoryNotFoundError):
                        call(memory_id, **kwargs)
                with pytest.raises(MemoryNotFoundError):
                    self.memory.update(memory_id, text=f"{MARKERS[entity]} hijack", **kwargs)
                return
            try:
                item = self.memory.get(memory_id, **kwargs)
            except MemoryNotFoundError:
                return  # merged away or forgotten: not another entity's, that is all
            self.check_items(entity, [item], "get")
            self.check_items(entity, self.memory.versions(memory_id, **kwargs), "versions")
            history = self.memory.history(memory_id, **kwargs)
            assert_no_leak(entity, json.dumps([e.model_dump(mode="json") for e in history]), "h")

    @rule(entity=st.sampled_from(ENTITIES), way=scope_ways)
    def export_jsonl(self, entity: str, way: str) -> None:
        """What ``memtrellis export`` writes: every memory, page by page, one JSON line each."""
        lines: list[str] = []
        with self.scoped(entity, way) as kwargs:
            while True:
                page = self.memory.list(
                    limit=PAGE_SIZE, offset=len(lines), filters=EVERYTHING, **kwargs
                )
                lines.extend(item.model_dump_json() for item in page)
                if len(page) < PAGE_SIZE:
                    break
        items = [MemoryItem.model_validate_json(line) for line in lines]
        self.check_items(entity, items, "export")
        assert_no_leak(entity, "\n".join(lines), "export")

    @rule(
        entity=st.sampled_from(ENTITIES),
        way=scope_ways,
        format=st.sampled_from(["json", "graphml", "html"]),
    )
    def export_graph(self, entity: str, way: str, format: str) -> None:
        target = self.directory / f"graph.{format}"
        with self.scoped(entity, way) as kwargs:
            self.memory.export_graph(target, format=format, **kwargs)  # type: ignore[arg-type]
        written = target.read_text(encoding="utf-8")
        assert_no_leak(entity, written, f"export_graph({format})")
        if format == "json":
            for node in json.loads(written)["nodes"]:
                if node.get("kind") == "memory":
                    assert not self.foreign(node["id"], entity)
                    assert MARKERS[entity] in node["text"].lower()
                else:
                    assert node.get("entity_id", entity) == entity

    # -- forgetting ------------------------------------------------------------------------
    @rule(entity=st.sampled_from(ENTITIES), way=scope_ways)
    def forget_entity(self, entity: str, way: str) -> None:
        with self.scoped(entity, way):  # forget(entity_id=) always names the entity
            self.memory.forget(entity_id=entity)
        self.owned[entity].clear()
        # Captured turns still spooled were purged with it: nothing comes back.
        assert self.memory.flush(30)
        assert self.memory.list(entity_id=entity, filters=EVERYTHING) == []
        assert self.memory.recall("tea paris locker", entity_id=entity).items == []
        graph = store_of(self.memory).graph_of(entity)  # no entity node of it is left either
        assert all(d.get("entity_id") != entity for _, d in graph.g.nodes(data=True))

    @precondition(lambda self: any(self.owned.values()))
    @rule(pick=picks)
    def forget_one(self, pick: int) -> None:
        pairs = self.pairs()
        memory_id, entity = pairs[pick % len(pairs)]
        with contextlib.suppress(MemoryNotFoundError):  # merged away already
            self.memory.forget(memory_id, entity_id=entity)
        self.owned[entity].discard(memory_id)
        with pytest.raises(MemoryNotFoundError):
            self.memory.get(memory_id, entity_id=entity)

    @invariant()
    def the_default_scope_is_the_default_entity(self) -> None:
        for item in self.memory.list(limit=3):
            assert item.scope.entity_id == "default"

    def teardown(self) -> None:
        try:
            self.memory.flush(30)
            for entity in ENTITIES:
                self.check_items(
                    entity, self.memory.list(entity_id=entity, filters=EVERYTHING), "final"
                )
        finally:
            self.memory.close()
            shutil.rmtree(self.directory, ignore_errors=True)


TenantMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_tenant_isolation = TenantMachine.TestCase


def test_cli_export_holds_only_the_entitys_memories(tmp_path: Path) -> None:
    """The ``export`` command, JSON lines, through the real command line."""
    store = tmp_path / "store"
    with Memory(store, embedder=HashingEmbedder()) as memory:
        for entity in ENTITIES:
            for word in WORDS[:3]:
                memory.add(MARKERS[entity] + f" likes {word}", entity_id=entity, mode="fast")
            memory.capture(MARKERS[entity] + " captured tea", entity_id=entity, mode="fast")
        assert memory.flush(30)
    runner = CliRunner()
    for entity in ENTITIES:
        out = tmp_path / f"{entity}.jsonl"
        result = runner.invoke(
            app,
            ["--path", str(store), "--embedder", "hashing", "--entity", entity, "export", str(out)],
        )
        assert result.exit_code == 0, result.output
        lines = out.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 4
        assert_no_leak(entity, "\n".join(lines), "cli export")
        assert all(json.loads(line)["memory"]["scope"]["entity_id"] == entity for line in lines)


def test_a_memory_id_cannot_take_over_another_entitys_entity_node(tmp_path: Path) -> None:
    """Subject nodes are ``subject:<entity_id>:<name>`` (``entity:`` before the rename); a
    memory stored under such an id (by store() or an import) became that node, so
    forgetting one entity broke another's."""
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        [bobs] = memory.add("qqbravomark lives in Paris", entity_id="ent-b", entities=["Paris"])
        for reserved in ("subject:ent-b:paris", "entity:ent-b:paris"):
            hijack = MemoryItem(
                id=reserved, text="qqalphamark text", scope=Scope(entity_id="ent-a")
            )
            for lifecycle in (True, False):
                with pytest.raises(InvalidInputError, match="reserved"):
                    memory.store(hijack, lifecycle=lifecycle)
        assert memory.list(entity_id="ent-a") == []
        memory.forget(entity_id="ent-a")
        assert [i.id for i in memory.list(entity_id="ent-b")] == [bobs.id]
        assert "subject:ent-b:paris" in store_of(memory).graph_of("ent-b").g


def test_entity_nodes_of_tenants_with_colons_stay_apart(tmp_path: Path) -> None:
    """Tenant ``bob`` mentioning ``x:code`` and tenant ``bob:x`` mentioning ``code`` shared
    the node ``entity:bob:x:code``: bob's entity name showed in bob:x's entity names, and
    forgetting bob left that node (bob's entity, named by bob) in the graph."""
    store = tmp_path / "store"
    with Memory(store, embedder=HashingEmbedder()) as memory:
        memory.add("qqbravomark knows the code", entity_id="bob", entities=["X:Code"])
        memory.add("qqalphamark has a code", entity_id="bob:x", entities=["code"])
        assert store_of(memory).graph_of("bob:x").subject_names("bob:x") == {"code": "code"}
        assert store_of(memory).graph_of("bob").subject_names("bob") == {"x:code": "X:Code"}
        memory.forget(entity_id="bob")
        graph = store_of(memory).combined_graph()
        owners = [d.get("entity_id") for _, d in graph.g.nodes(data=True)]
        assert "bob" not in owners
        assert "X:Code" not in json.dumps(graph.to_node_link(0))
    with Memory(store, embedder=HashingEmbedder()) as reopened:
        graph = store_of(reopened).graph_of("bob:x")
        assert graph.subject_names("bob:x") == {"code": "code"}
        assert [i.text for i in reopened.list(entity_id="bob:x")] == ["qqalphamark has a code"]
        for snapshot in (store / "shards").rglob("graph.json"):
            assert "X:Code" not in snapshot.read_text()


def test_entity_nodes_saved_under_the_old_ids_are_renamed_on_open(tmp_path: Path) -> None:
    """A snapshot from before subject nodes were named so: ``entity:`` ids of kind
    ``entity``, and the ambiguous id of an entity id holding ``:``. Both are read and
    re-created under the current ids from the memories that mention them."""
    store = tmp_path / "store"
    with Memory(store, embedder=HashingEmbedder()) as memory:
        memory.add("qqalphamark drinks tea", entity_id="t:1", entities=["Tea"])
        memory.add("qqbravomark drinks tea", entity_id="t", entities=["Tea"])
    for snapshot in (store / "shards").rglob("graph.json"):
        text = snapshot.read_text()
        assert '"subject:' in text and '"entity:' not in text
        text = text.replace('"subject:t%3A1:tea"', '"entity:t:1:tea"')  # as before
        text = re.sub(
            r'"kind": ?"subject"', '"kind":"entity"', text.replace('"subject:', '"entity:')
        )
        snapshot.write_text(text)
    with Memory(store, embedder=HashingEmbedder()) as reopened:
        graph = store_of(reopened).combined_graph()
        assert not [n for n in graph.g.nodes if str(n).startswith("entity:")]
        subjects = sorted(n for n in graph.g.nodes if str(n).startswith("subject:"))
        assert subjects == ["subject:t%3A1:tea", "subject:t:tea"]
        assert {graph.g.nodes[n]["kind"] for n in subjects} == {"subject"}
        assert graph.subject_names("t:1") == {"tea": "Tea"}
        [mine] = reopened.list(entity_id="t:1")
        assert [n for _, n in graph.g.out_edges(mine.id)] == ["subject:t%3A1:tea"]
