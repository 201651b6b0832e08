"""Graph-aware recall: the subjects a question names start hops; the path is explained."""

from __future__ import annotations

from memtrellis import EdgeKind, Memory, MemoryItem, Scope
from memtrellis.recall.subjects import named_subjects
from memtrellis.store import MemoryGraph
from memtrellis.store.keyword import KeywordIndex
from memtrellis.testing import store_of


def _graph(*memories: tuple[str, list[str]], entity_id: str = "me") -> MemoryGraph:
    graph = MemoryGraph()
    for text, names in memories:
        graph.put(MemoryItem(text=text, scope=Scope(entity_id=entity_id), entities=names))
    return graph


def _names(query: str, graph: MemoryGraph, entity_id: str = "me") -> list[tuple[str, str]]:
    return [(s.name, s.how) for s in named_subjects(query, graph, entity_id)]


def test_english_names_are_found_exactly_longest_first_and_possessive() -> None:
    graph = _graph(
        ("I flew to New York with Clara Smith.", ["New York", "Clara Smith"]),
        ("We stayed near York Minster.", ["York"]),
    )
    assert _names("Did I meet clara smith's brother in New York?", graph) == [
        ("Clara Smith", "exact"),
        ("New York", "exact"),
    ]


def test_a_misspelt_name_is_found_fuzzily_and_a_part_of_a_long_name() -> None:
    graph = _graph(("I had lunch with Melanie and Clara Smith.", ["Melanie", "Clara Smith"]))
    assert _names("what did melanei say?", graph) == [("Melanie", "fuzzy")]
    assert _names("What did I give Clara?", graph) == [("Clara Smith", "part")]


def test_chinese_names_exactly_and_long_ones_with_one_character_off() -> None:
    graph = _graph(
        ("张小明华在上海工作。", ["张小明华", "上海"]),
        ("王小红住在北京。", ["王小红", "北京"]),
    )
    assert sorted(_names("张小明华在上海做什么？", graph)) == [
        ("上海", "exact"),
        ("张小明华", "exact"),
    ]
    assert _names("张晓明华在哪里工作？", graph) == [("张小明华", "fuzzy")]
    # a three-character name with one character off is another name, not a typo
    assert _names("王小明住在哪里？", graph) == []


def test_common_words_that_became_subjects_at_a_sentence_start_do_not_match() -> None:
    # Fast mode's heuristics keep a capitalised first word followed by a verb as a name.
    graph = _graph(
        ("Family moments like these mean a lot.", ["Family"]),
        ("Painting helps me relax after work.", ["Painting"]),
        ("I love my family and my dog.", []),
        ("We went to Lisbon with Ana.", ["Lisbon", "Ana"]),
    )
    keywords = KeywordIndex()
    for item in graph.items("me"):
        keywords.add("me", item.id, item.text)

    def df(term: str) -> int:
        return keywords.document_frequency("me", term)

    for query in ("What does she do with her family?", "Family trips?", "is painting fun"):
        assert named_subjects(query, graph, "me", df) == [], query
    # a real name, even lower case; one the question writes as a name, always
    assert [s.name for s in named_subjects("when did we go to lisbon?", graph, "me", df)] == [
        "Lisbon"
    ]
    assert [s.name for s in named_subjects("Is the Painting sold?", graph, "me", df)] == [
        "Painting"
    ]
    # stop words and one-letter names never
    stops = _graph(("Is it on? The A team won.", ["Is", "A"]))
    assert named_subjects("is it the a team?", stops, "me") == []


def test_names_are_those_of_the_entity_asked_about() -> None:
    graph = _graph(("Kenji lives in Kyoto.", ["Kenji", "Kyoto"]), entity_id="bo")
    graph.put(MemoryItem(text="I like tea.", scope=Scope(entity_id="me")))
    assert _names("Where does Kenji live?", graph, "me") == []
    assert _names("Where does Kenji live?", graph, "bo") == [("Kenji", "exact")]


def test_the_name_table_follows_added_and_removed_subjects() -> None:
    graph = _graph(("I met Kenji today.", ["Kenji"]))
    assert _names("Where is Kenjii now?", graph) == [("Kenji", "fuzzy")]
    [item] = list(graph.items("me"))
    graph.remove(item.id)
    graph.put(
        MemoryItem(text="I met Ayumi today.", scope=Scope(entity_id="me"), entities=["Ayumi"])
    )
    assert _names("Where is Kenjii now?", graph) == []
    assert _names("Where is Ayumii now?", graph) == [("Ayumi", "fuzzy")]


def _filler(memory: Memory) -> None:
    for n in range(12):
        memory.add(f"Weekly note {n}: groceries, laundry and emails.", entities=[])


def test_recall_hops_from_a_named_subject_and_explains_the_path(memory: Memory) -> None:
    _filler(memory)
    [met] = memory.add("At the conference I met Kenji from Osaka.", entities=["Kenji"])
    result = memory.recall("What do I know about Kenjii?", k=5)
    found = {r.memory.id: r for r in result.items}
    assert met.id in found
    path = found[met.id].explanation.path
    assert path is not None
    assert path.describe() == "Kenji -mentions- [At the conference I met Kenji from Osaka.]"
    assert [s.kind for s in path.steps] == ["subject", "memory"]
    assert path.steps[-1].id == met.id and path.steps[-1].memory is None
    assert 0 < path.confidence <= 1


def test_recall_follows_extends_and_supports_edges_from_a_seed(memory: Memory) -> None:
    _filler(memory)
    [plan] = memory.add("The migration plan moves the billing service first.", entities=[])
    [detail] = memory.add("Cutover happens on a Sunday night, with a rollback window.", entities=[])
    [proof] = memory.add("Staging ran for two weeks without errors.", entities=[])
    store = store_of(memory)
    store.add_edge("alice", detail.id, plan.id, EdgeKind.EXTENDS)
    store.add_edge("alice", proof.id, plan.id, EdgeKind.SUPPORTS)
    result = memory.recall("What is the migration plan?", k=4)
    by_id = {r.memory.id: r for r in result.items}
    assert result.items[0].memory.id == plan.id
    assert {detail.id, proof.id} <= set(by_id)
    extends = by_id[detail.id].explanation
    assert extends.graph_path == [plan.id, "extends", detail.id]
    assert extends.path is not None and extends.path.describe() == (
        f"[{plan.text}] -extends- [{detail.text}]"
    )
    assert extends.path.steps[0].forward is False  # the edge points from detail to plan
    assert by_id[proof.id].explanation.path is not None
    assert by_id[proof.id].explanation.path.steps[0].edge == "supports"


def test_a_hop_never_brings_back_a_superseded_memory(memory: Memory) -> None:
    _filler(memory)
    [old] = memory.add("Kenji lives in Osaka.", entities=["Kenji"])
    [new] = memory.add("Kenji moved to Kyoto.", entities=["Kenji"])
    assert memory.get(old.id).superseded_by == new.id  # the relation rules saw the move
    result = memory.recall("Tell me about Kenjii", k=5)
    ids = [r.memory.id for r in result.items]
    assert new.id in ids and old.id not in ids
    asked = memory.recall("Tell me about Kenjii", k=5, include_superseded=True)
    assert old.id in [r.memory.id for r in asked.items]


def test_no_named_subject_leaves_recall_as_it_was(memory: Memory) -> None:
    memory.add("Family dinners are on Sundays.", entities=["Family"])
    memory.add("I visit my family in spring.", entities=[])
    result = memory.recall("when do I see my family?", k=2)
    assert all(r.explanation.path is None for r in result.items)
