"""memory.relate(a, b): how two names or memories are related, answered from the graph."""

from __future__ import annotations

import asyncio

import pytest

from memtrellis import EdgeKind, InvalidInputError, Memory
from memtrellis.context import relations_text
from memtrellis.relations import PathStep
from memtrellis.store.graph import HUB_MENTIONS
from memtrellis.testing import store_of


def _chain(steps: list[PathStep]) -> list[tuple[str, str | None]]:
    return [(s.text, s.edge) for s in steps]


def test_a_name_in_one_memory_is_related_to_another_through_it(memory: Memory) -> None:
    [moved] = memory.add(
        [{"role": "user", "content": "My friend Hana moved to Kyoto last year.", "id": "m-7"}]
    )
    found = memory.relate("Hana", "Kyoto")
    assert found.related and (found.a_resolved, found.b_resolved) == ("Hana", "Kyoto")
    [path] = found.paths
    assert _chain(path.steps) == [
        ("Hana", "mentions"),
        (moved.text, "mentions"),
        ("Kyoto", None),
    ]
    assert [s.forward for s in path.steps] == [False, True, None]  # memory -> subject
    [via] = path.memories
    assert via.id == moved.id and [s.message_id for s in via.sources] == ["m-7"]  # the turn
    assert 0 < path.confidence <= 1


def test_two_names_no_memory_shares_are_related_through_a_third(memory: Memory) -> None:
    [works] = memory.add("Hana works with Kenji at the tea house.", entities=["Hana", "Kenji"])
    [lives] = memory.add("Kenji lives in Kyoto.", entities=["Kenji", "Kyoto"])
    memory.add("Mia lives in Porto.", entities=["Mia", "Porto"])
    found = memory.relate("hana", "KYOTO")  # names match whatever their case
    [path] = found.paths
    assert [s.kind for s in path.steps] == ["subject", "memory", "subject", "memory", "subject"]
    assert [m.id for m in path.memories] == [works.id, lives.id]
    assert path.describe() == (
        "Hana -mentions- [Hana works with Kenji at the tea house.] -mentions- Kenji"
        " -mentions- [Kenji lives in Kyoto.] -mentions- Kyoto"
    )
    assert memory.relate("Hana", "Kyoto", max_hops=2).paths == []  # four edges away
    assert memory.relate("Hana", "Porto").paths == []  # nothing connects them


def test_paths_rest_on_confidence_and_walk_the_lifecycle_edges(memory: Memory) -> None:
    [sure] = memory.add("Ana runs the Lisbon office.", entities=["Ana", "Lisbon"])
    memory.update(sure.id, confidence=0.95)
    [doubt] = memory.add("Ana may visit Lisbon in May.", entities=["Ana", "Lisbon"])
    memory.update(doubt.id, confidence=0.3)
    [plan] = memory.add("The offsite plan is fixed.", entities=["offsite"])
    store_of(memory).add_edge("alice", plan.id, sure.id, EdgeKind.SUPPORTS)
    ranked = memory.relate("Ana", "Lisbon").paths
    assert [p.memories[0].id for p in ranked] == [sure.id, doubt.id]
    assert ranked[0].confidence > ranked[1].confidence
    [through] = memory.relate("offsite", "Lisbon").paths
    assert _chain(through.steps) == [
        ("offsite", "mentions"),
        (plan.text, "supports"),
        (sure.text, "mentions"),
        ("Lisbon", None),
    ]
    # a memory id stands for itself
    [direct] = memory.relate(plan.id, sure.id).paths
    assert _chain(direct.steps) == [(plan.text, "supports"), (sure.text, None)]


def test_a_superseded_memory_relates_only_when_asked_for(memory: Memory) -> None:
    [old] = memory.add("Ana lives in Lyon.", entities=["Ana", "Lyon"])
    [new] = memory.add("Ana moved to Porto.", entities=["Ana", "Porto"])
    store_of(memory).supersede("alice", {old.id: new.id})
    assert memory.get(old.id).superseded_by == new.id
    assert memory.relate("Ana", "Lyon").paths == []
    kept = memory.relate("Ana", "Lyon", include_superseded=True).paths
    # directly, and through the memory that replaced it
    assert [[m.id for m in p.memories] for p in kept] == [[old.id], [new.id, old.id]]
    [change] = memory.relate("Lyon", "Porto", include_superseded=True, max_hops=3).paths
    assert _chain(change.steps) == [
        ("Lyon", "mentions"),
        (old.text, "supersedes"),
        (new.text, "mentions"),
        ("Porto", None),
    ]
    assert change.steps[1].forward is False  # the newer memory supersedes the older


def test_other_entities_and_hubs_relate_nothing(memory: Memory) -> None:
    memory.add("Bob met Hana in Kyoto.", entity_id="bob", entities=["Hana", "Kyoto"])
    memory.add("Hana likes tea.", entities=["Hana"])
    memory.add("Kyoto is rainy in June.", entities=["Kyoto"])
    found = memory.relate("Hana", "Kyoto")
    assert found.paths == []  # Bob's memory joins them only in Bob's graph
    assert len(memory.relate("Hana", "Kyoto", entity_id="bob").paths) == 1
    # a subject that too many memories mention relates everything: it is not walked through
    for n in range(HUB_MENTIONS + 1):
        memory.add(f"Note {n}: Alice wrote about Hana and the weather.", entities=["Alice", "Hana"])
    memory.add("Alice booked Kyoto.", entities=["Alice", "Kyoto"])
    assert all(
        "Alice" not in [s.text for s in path.steps[1:-1]]
        for path in memory.relate("Hana", "Kyoto", max_hops=4).paths
    )
    assert memory.relate("Alice", "Kyoto").related  # a hub can still be asked about


def test_chinese_names_and_unknown_names(memory: Memory) -> None:
    [job] = memory.add("小王在深圳一家医院做夜班护士。", entities=["小王", "深圳"])
    [path] = memory.relate("小王", "深圳").paths
    assert [m.id for m in path.memories] == [job.id]
    found = memory.relate("小王", "Atlantis")
    assert (found.a_resolved, found.b_resolved, found.paths) == ("小王", None, [])
    assert not found.related


@pytest.mark.parametrize(
    "kwargs",
    [{"a": "", "b": "x"}, {"a": "x", "b": 3}, {"a": "x", "b": "y", "max_hops": 0},
     {"a": "x", "b": "y", "limit": True}, {"a": "x", "b": "y", "as_of": "yesterday"}],
)  # fmt: skip
def test_bad_arguments_are_typed_errors(memory: Memory, kwargs: dict[str, object]) -> None:
    memory.add("Hana moved to Kyoto.", entities=["Hana", "Kyoto"])
    with pytest.raises(InvalidInputError):
        memory.relate(**kwargs)  # type: ignore[arg-type]
    assert len(memory.list()) == 1


def test_arelate_answers_the_same_on_an_event_loop(memory: Memory) -> None:
    memory.add("Hana moved to Kyoto.", entities=["Hana", "Kyoto"])
    found = asyncio.run(memory.arelate("Hana", "Kyoto"))
    assert found == memory.relate("Hana", "Kyoto")


def test_relate_tools_read_one_rendering_of_the_paths(memory: Memory) -> None:
    """`relations_text` is what every relate tool answers (LangChain's, LlamaIndex's and
    the agent frameworks' tests assert their tools' answers equal it)."""
    [works] = memory.add("Hana works with Kenji <at> the tea house.", entities=["Hana", "Kenji"])
    [lives] = memory.add("Kenji lives in Kyoto.", entities=["Kenji", "Kyoto"])

    found = memory.relate("hana", "Kyoto")

    assert relations_text(found) == (
        "Hana and Kyoto are related through:\n"
        f"1. Hana -mentions- [{works.id}] Hana works with Kenji &lt;at&gt; the tea house."
        f" -mentions- Kenji -mentions- [{lives.id}] Kenji lives in Kyoto. -mentions- Kyoto"
    )
    assert relations_text(memory.relate("Hana", "Atlantis")) == (
        "Nothing in the memories is about Atlantis."
    )
    memory.add("Mia lives in Porto.", entities=["Mia", "Porto"])
    assert relations_text(memory.relate("Hana", "Porto")) == "No memories connect Hana and Porto."
