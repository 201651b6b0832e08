"""The memory lifecycle on a real store: supersession, dedup, validity, confidence, as_of."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memtrellis import EdgeKind, Memory, MemoryItem, MemoryType, Scope
from memtrellis.lifecycle import LifecycleConfig, RelationKind, relate
from memtrellis.lifecycle.confidence import decay
from memtrellis.lifecycle.entities import resolve_entities
from memtrellis.testing import HashingEmbedder, ScriptedLLM, store_of

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def said(text: str, day: int, msg: str, role: str = "user") -> dict[str, Any]:
    """A message ``day`` days after T0."""
    return {"role": role, "content": text, "id": msg, "timestamp": (T0 + timedelta(days=day))}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", entity_id="ana", embedder=HashingEmbedder()) as m:
        yield m


def fact(memory: Memory, text: str, day: int, msg: str, **kw: Any) -> MemoryItem:
    [item] = memory.add([said(text, day, msg)], memory_type="fact", **kw)
    return item


def test_a_user_moves_city(memory: Memory) -> None:
    lyon = fact(memory, "Ana lives in Lyon", 0, "m1")
    porto = fact(memory, "Ana moved to Porto", 30, "m2")
    old = memory.get(lyon.id)
    assert old.superseded_by == porto.id
    assert old.valid_until == porto.valid_from == T0 + timedelta(days=30)
    graph = store_of(memory).graph_of("ana")
    assert graph.edges_of(porto.id, EdgeKind.SUPERSEDES)[0] == [lyon.id]
    assert graph.edges_of(porto.id, EdgeKind.CONTRADICTS)[0] == [lyon.id]
    # nothing deleted: the old memory stays as history
    assert [v.id for v in memory.versions(porto.id)] == [lyon.id, porto.id]
    assert [e.action for e in memory.history(lyon.id)] == ["created", "superseded"]
    assert memory.history(lyon.id)[1].detail["by"] == porto.id
    assert memory.history(porto.id)[0].detail["supersedes"] == [lyon.id]

    now = memory.recall("Where does Ana live?")
    assert [r.memory.id for r in now.items] == [porto.id]
    assert [(s.id, s.reason, s.superseded_by) for s in now.skipped] == [
        (lyon.id, "superseded", porto.id)
    ]
    assert now.items[0].explanation.replaces == [lyon.id]
    then = memory.recall("Where does Ana live?", as_of=T0 + timedelta(days=10))
    assert [r.memory.id for r in then.items] == [lyon.id]  # time travel
    before = memory.recall("Where does Ana live?", as_of=T0 - timedelta(days=1))
    assert before.items == []
    both = memory.recall("Where does Ana live?", include_superseded=True)
    assert {r.memory.id for r in both.items} == {lyon.id, porto.id}


def test_a_deadline_changes_twice(memory: Memory) -> None:
    first = fact(memory, "The report is due on March 3", 0, "d1", entities=["report"])
    second = fact(memory, "The report deadline moved to March 10", 5, "d2", entities=["report"])
    third = fact(memory, "The report deadline is now March 20", 9, "d3", entities=["report"])
    chain = memory.versions(second.id)
    assert [v.id for v in chain] == [first.id, second.id, third.id]
    assert [v.superseded_by for v in chain] == [second.id, third.id, None]
    valid = [i for i in memory.list() if i.superseded_by is None]
    assert [i.id for i in valid] == [third.id]
    for day, expected in ((1, first.id), (6, second.id), (12, third.id)):
        hits = memory.recall("report deadline", as_of=T0 + timedelta(days=day)).items
        assert [r.memory.id for r in hits] == [expected]


def test_a_preference_is_reversed(memory: Memory) -> None:
    likes = fact(memory, "I love spicy food", 0, "p1")
    dislikes = fact(memory, "I no longer love spicy food", 40, "p2")
    assert memory.get(likes.id).superseded_by == dislikes.id
    assert [r.memory.id for r in memory.recall("spicy food").items] == [dislikes.id]


def test_the_same_fact_in_three_sessions_is_one_memory(memory: Memory) -> None:
    ids = [
        fact(memory, "Ana is vegetarian", day, f"s{day}", session_id=f"session-{day}").id
        for day in (0, 7, 14)
    ]
    assert len(set(ids)) == 1  # the later two were merged into the first
    [item] = memory.list()
    assert [s.message_id for s in item.sources] == ["s0", "s7", "s14"]
    assert item.metadata["lifecycle"]["merged"] == 2
    assert [e.action for e in memory.history(item.id)] == ["created", "merged", "merged"]
    assert memory.health().merged_duplicates == 2
    [hit] = memory.recall("Is Ana vegetarian?").items
    base = memory.lifecycle.source_confidence["user"]
    assert hit.explanation.confidence == pytest.approx(
        (base + 2 * memory.lifecycle.support_bonus) * hit.explanation.decay, abs=1e-5
    )


def test_support_edges_raise_confidence_up_to_the_cap(memory: Memory) -> None:
    claim = fact(memory, "Ana plays the cello", 0, "c1")
    [first] = memory.recall("cello").items
    for n in range(6):
        [other] = memory.add(f"orchestra note {n}", memory_type="episode")
        store_of(memory).add_edge("ana", other.id, claim.id, EdgeKind.SUPPORTS)
    hit = memory.recall("cello").items[0]
    assert hit.memory.id == claim.id
    config = memory.lifecycle
    assert hit.explanation.supports == 6
    assert hit.explanation.confidence == pytest.approx(
        min(1.0, first.explanation.confidence / first.explanation.decay + config.support_cap)
        * hit.explanation.decay,
        abs=1e-5,
    )
    assert hit.explanation.final_score > first.explanation.final_score


def test_episodes_are_never_merged_or_superseded(memory: Memory) -> None:
    a = memory.add([said("Ana lives in Lyon", 0, "e1")])
    b = memory.add([said("Ana moved to Porto", 3, "e2")])
    c = memory.add([said("Ana lives in Lyon", 5, "e3")])
    assert len({a[0].id, b[0].id, c[0].id}) == 3
    assert all(i.superseded_by is None for i in memory.list())
    assert all(i.memory_type is MemoryType.EPISODE for i in memory.list())
    assert set(memory.get(a[0].id).entities) == {"Ana", "Lyon"}  # but entities, yes


def test_validity_by_kind_defaults_overrides_and_expiry(tmp_path: Path) -> None:
    config = LifecycleConfig(validity={MemoryType.PREDICTION: timedelta(days=7)})
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), lifecycle=config) as m:
        now = datetime.now(timezone.utc)
        [state] = m.add("User is waiting at the station", memory_type="state")
        assert state.valid_until == state.created_at + timedelta(hours=2)
        [decision] = m.add("We chose Postgres for billing", memory_type="decision")
        assert decision.valid_until == decision.created_at + timedelta(days=365)
        [guess] = m.add("Rain expected over the weekend", memory_type="prediction")
        assert guess.valid_until == guess.created_at + timedelta(days=7)  # configured
        [plain] = m.add("User speaks Portuguese", memory_type="fact")
        assert plain.valid_until is None
        own = now + timedelta(days=1)
        [mine] = m.add([{"role": "user", "content": "Parking is free today"}], memory_type="state")
        m.update(mine.id, valid_until=own)
        assert m.get(mine.id).valid_until == own  # the item's own end wins
        later = now + timedelta(hours=3)
        assert state.id not in {r.memory.id for r in m.recall("station", as_of=later).items}
        assert state.id in {r.memory.id for r in m.recall("station").items}
        gone = m.recall("station", as_of=later, include_expired=True)
        assert state.id in {r.memory.id for r in gone.items}


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=0, max_value=5000),
    st.floats(min_value=0, max_value=5000),
    st.floats(min_value=1, max_value=3650),
    st.floats(min_value=0, max_value=1),
)
def test_decay_is_monotonic_and_bounded(a: float, b: float, half_life: float, floor: float) -> None:
    config = LifecycleConfig(half_life_days=half_life, decay_floor=floor)
    scope = Scope(entity_id="u")
    now = T0 + timedelta(days=6000)
    young, old = sorted((a, b))
    newer = MemoryItem(text="x", scope=scope, valid_from=now - timedelta(days=young))
    older = MemoryItem(text="x", scope=scope, valid_from=now - timedelta(days=old))
    assert floor <= decay(older, now, config) <= decay(newer, now, config) <= 1.0
    assert decay(newer, now, LifecycleConfig(half_life_days=None)) == 1.0


CITIES = ["Lyon", "Porto", "Berlin", "Quito"]
PEOPLE = ["Ana", "Bruno"]
moves = st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from(CITIES)), max_size=10)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(moves)
def test_supersession_never_deletes_and_leaves_one_current_value(
    tmp_path_factory: pytest.TempPathFactory, sequence: list[tuple[str, str]]
) -> None:
    path = tmp_path_factory.mktemp("prop")
    with Memory(path, entity_id="u", embedder=HashingEmbedder()) as m:
        returned: list[str] = []
        for day, (person, city) in enumerate(sequence):
            text = f"{person} lives in {city}" if day % 2 else f"{person} moved to {city}"
            returned.append(fact(m, text, day, f"m{day}").id)
        stored = {i.id: i for i in m.list(limit=1000)}
        assert set(returned) <= set(stored)  # nothing acknowledged was deleted
        for person in PEOPLE:
            said_of = [(d, c) for d, (p, c) in enumerate(sequence) if p == person]
            current = [
                i for i in stored.values() if person in i.entities and i.superseded_by is None
            ]
            if not said_of:
                assert current == []
                continue
            # never two valid values of one attribute: what is current is the latest city
            assert current and all(i.text.endswith(said_of[-1][1]) for i in current)
        graph = store_of(m).graph_of("u")
        for item in stored.values():
            if item.superseded_by is None:
                targets, _ = graph.edges_of(item.id, EdgeKind.CONTRADICTS)
                assert all(stored[t].superseded_by is not None for t in targets)


def test_entity_resolution_stays_inside_its_scope(memory: Memory) -> None:
    [a] = memory.add("Met Clara Smith at the market", memory_type="fact", entity_id="ana")
    [typo] = memory.add("Lunch with Clara Smth on Friday", memory_type="fact", entity_id="ana")
    [other] = memory.add("Lunch with Clara Smth on Friday", memory_type="fact", entity_id="bo")
    assert "Clara Smith" in a.entities and "Clara Smith" in typo.entities  # fuzzy, same scope
    assert "Clara Smth" in other.entities  # another tenant's names are never consulted
    assert set(store_of(memory).graph_of("bo").subject_names("bo")) == {"clara smth"}
    names = store_of(memory).graph_of("ana").subject_names("ana")
    assert resolve_entities(["CLARA  smith"], names) == ["Clara Smith"]
    assert resolve_entities(["Mark"], {"market street": "Market Street"}) == ["Mark"]
    assert resolve_entities(["Bobby"], {"robert": "Robert"}, aliases={"robert": "bobby"}) == [
        "Robert"
    ]


def test_rules_for_each_relation() -> None:
    s = Scope(entity_id="u")

    def item(text: str, *entities: str, key: str | None = None) -> MemoryItem:
        return MemoryItem(text=text, entities=list(entities), scope=s, key=key)

    dup, sup, con, ext, unr = (
        RelationKind.DUPLICATE,
        RelationKind.SUPPORTS,
        RelationKind.CONTRADICTS,
        RelationKind.EXTENDS,
        RelationKind.UNRELATED,
    )
    ana = ("Ana",)
    lyon = item("Ana lives in Lyon", "Ana", "Lyon")
    cases = [
        (item("I live in Lyon."), item("I live in Lyon"), 0.99, dup),
        (item("Ana likes tea", *ana), item("Ana loves tea", *ana), 0.9, sup),
        (item("Ana has 2 cats", *ana), item("Ana has 3 cats", *ana), 0.9, con),
        (item("Ana eats fish", *ana), item("Ana never eats fish", *ana), 0.8, con),
        (item("Ana works at Acme", *ana, "Acme"), item("Ana works at IBM", *ana, "IBM"), 0.7, con),
        (item("city: Lyon", key="home"), item("city: Porto", key="home"), 0.6, con),
        (lyon, item("Ana has a flat by the river in Lyon", *ana, "Lyon"), 0.6, ext),
        (lyon, item("Bruno lives in Lyon", "Bruno", "Lyon"), 0.8, unr),
        (lyon, item("Ana moved to Lyon", *ana, "Lyon"), 0.7, ext),
        (item("Task 1: buy milk"), item("Task 2: call mom"), 0.3, unr),
        (item("Ana likes tea", *ana), item("Bruno likes chess", "Bruno"), 0.4, unr),
    ]  # fmt: skip
    for old, new, similarity, expected in cases:
        assert relate(new, old, similarity).kind is expected, (old.text, new.text)


def judge_reply(messages: list[dict[str, str]]) -> str:
    assert "EXISTING memories" in messages[-1]["content"]
    return json.dumps({"relations": [{"index": 0, "relation": "contradicts", "reason": "diet"}]})


def test_an_llm_judge_overrules_the_rules(tmp_path: Path) -> None:
    llm = ScriptedLLM(judge_reply)
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), llm=llm) as m:
        [fish] = m.add("Ana eats fish on Fridays", memory_type="fact", mode="fast")
        [vegan] = m.add("Ana follows a plant diet", memory_type="fact", mode="fast")
        assert relate(m.get(vegan.id), m.get(fish.id), 0.3).kind is not RelationKind.CONTRADICTS
        assert m.get(fish.id).superseded_by == vegan.id  # the judge said so
        assert "judge" in m.history(fish.id)[-1].detail["reason"]
        assert len(llm.calls) == 1


def test_a_failing_judge_leaves_the_rules_in_charge(tmp_path: Path) -> None:
    llm = ScriptedLLM([RuntimeError("overloaded"), "not json at all"])
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), llm=llm) as m:
        [lyon] = m.add("Ana lives in Lyon", memory_type="fact", mode="fast")
        [porto] = m.add("Ana moved to Porto", memory_type="fact", mode="fast")
        [berlin] = m.add("Ana moved to Berlin", memory_type="fact", mode="fast")
        assert m.get(lyon.id).superseded_by == porto.id
        assert m.get(porto.id).superseded_by == berlin.id
        assert m.health().relation_judge_failures == 2


def test_export_graph_shows_the_supersession(memory: Memory, tmp_path: Path) -> None:
    import networkx as nx

    lyon = fact(memory, "Ana lives in Lyon", 0, "m1")
    porto = fact(memory, "Ana moved to Porto", 30, "m2")
    memory.add("Bob lives in Quito", entity_id="bob", memory_type="fact")
    graph = nx.read_graphml(memory.export_graph(tmp_path / "ana.graphml", format="graphml"))
    kinds = {(s, t, d["kind"]) for s, t, d in graph.edges(data=True)}
    assert (porto.id, lyon.id, "supersedes") in kinds
    assert (porto.id, lyon.id, "contradicts") in kinds
    assert graph.nodes[lyon.id]["superseded_by"] == porto.id
    assert not any("Quito" in str(d.get("text", "")) for _, d in graph.nodes(data=True))
    page = memory.export_graph(tmp_path / "ana.html").read_text(encoding="utf-8")
    assert lyon.id in page and porto.id in page and "Quito" not in page


NAMES = ["Clara Smith", "clara smith", "Clara Smth", "Bruno", "bruno", "Porto", "@dana_k"]


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(NAMES)), max_size=12))
def test_entity_resolution_never_crosses_scopes(
    tmp_path_factory: pytest.TempPathFactory, adds: list[tuple[str, str]]
) -> None:
    with Memory(tmp_path_factory.mktemp("ents"), embedder=HashingEmbedder()) as m:
        said: dict[str, set[str]] = {"a": set(), "b": set()}
        for tenant, name in adds:
            [item] = m.add(f"Met {name} today", entity_id=tenant, entities=[name])
            said[tenant].add(name.lstrip("@").casefold())  # resolved only to its own names
            assert all(e.casefold() in said[tenant] for e in item.entities)
        for tenant in ("a", "b"):
            graph = store_of(m).graph_of(tenant)
            for item in graph.items(tenant):
                out, _ = graph.edges_of(item.id, EdgeKind.MENTIONS)
                assert all(n.startswith(f"subject:{tenant}:") for n in out)
            assert set(graph.subject_names(tenant)) <= said[tenant]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(CITIES), min_size=1, max_size=6), st.integers(0, 70))
def test_as_of_answers_with_what_was_valid_then(
    tmp_path_factory: pytest.TempPathFactory, cities: list[str], when: int
) -> None:
    with Memory(tmp_path_factory.mktemp("asof"), entity_id="u", embedder=HashingEmbedder()) as m:
        for n, city in enumerate(cities):  # one statement every ten days
            fact(m, f"Ana moved to {city}", 10 * n, f"m{n}")
        hits = m.recall("Ana moved to", as_of=T0 + timedelta(days=when, hours=1)).items
        said = [c for n, c in enumerate(cities) if 10 * n <= when]
        if not said:
            assert hits == []
        else:
            assert {h.memory.text for h in hits} == {f"Ana moved to {said[-1]}"}


def test_one_add_that_repeats_and_contradicts_itself(memory: Memory) -> None:
    items = memory.add(
        [
            said("Ana lives in Lyon", 0, "b1"),
            said("Ana lives in Lyon", 0, "b2"),
            said("Ana moved to Porto", 1, "b3"),
        ],
        memory_type="fact",
    )
    stored = {i.id: i for i in memory.list()}
    assert len(stored) == 2
    lyon = next(i for i in stored.values() if i.text == "Ana lives in Lyon")
    porto = next(i for i in stored.values() if i.text == "Ana moved to Porto")
    assert [s.message_id for s in lyon.sources] == ["b1", "b2"]  # merged within the batch
    assert lyon.superseded_by == porto.id  # and superseded within it
    assert {i.id for i in items} == {lyon.id, porto.id}
