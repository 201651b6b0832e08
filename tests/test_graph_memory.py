"""The graph's slimmer RAM form loses nothing: snapshots, history, edges and items read the same.

The graph shares equal values among items, keeps each history as JSON bytes, shares its
edge dicts and reads snapshots one node at a time (``benchmarks/memory_per_item.py``
measures what that saves); these tests hold it to the plain form it replaced.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import networkx as nx
import pytest

from memtrellis import MemoryItem, Scope, StoreCorruptError
from memtrellis.store import KeywordIndex, MemoryGraph
from memtrellis.types import EdgeKind, HistoryEvent, SourceKind, SourceRef

T0 = datetime(2025, 9, 14, 8, 30, tzinfo=timezone.utc)


def _message(number: int, tenant: str = "ana", *, speaker: str = "Ana") -> MemoryItem:
    text = f"Message {number}: Mia starts school in Porto, says café owner Zoë."
    return MemoryItem(
        id=f"{tenant}-m{number}",
        text=text,
        tags=["mode:fast", "chat"],
        entities=["Mia", "Porto"] if number % 2 else ["Porto"],
        sources=[
            SourceRef(
                kind=SourceKind.CHAT,
                message_id=f"s1:{number}",
                role="user",
                speaker=speaker,
                content=text,
                timestamp=T0 + timedelta(minutes=number),
            )
        ],
        scope=Scope(entity_id=tenant, session_id="s1"),
        created_at=T0,
        valid_from=T0 + timedelta(minutes=number),
        metadata={"turn": number} if number == 3 else {},
    )


def _event(action: str, minutes: int, **detail: object) -> HistoryEvent:
    return HistoryEvent(at=T0 + timedelta(minutes=minutes), action=action, detail=detail)


def _built() -> tuple[MemoryGraph, dict[str, list[HistoryEvent]]]:
    graph = MemoryGraph()
    events: dict[str, list[HistoryEvent]] = {}
    for tenant in ("ana", "bo"):
        for number in range(6):
            item = _message(number, tenant)
            created = _event("created", number, mode="fast")
            graph.put(item, created)
            events[item.id] = [created]
            if number:
                graph.add_edge(item.id, f"{tenant}-m{number - 1}", EdgeKind.FOLLOWS)
    # a second kind on a linked pair, an update with its event, a superseded memory
    graph.add_edge("ana-m2", "ana-m1", EdgeKind.SUPPORTS)
    updated = _message(4).model_copy(update={"tags": ["mode:fast", "reviewed"]})
    graph.put(updated, _event("updated", 30, fields=["tags"]))
    events["ana-m4"].append(_event("updated", 30, fields=["tags"]))
    old = graph.item("ana-m5")
    assert old is not None
    graph.put(
        old.model_copy(update={"superseded_by": "ana-m3"}), _event("superseded", 31, by="ana-m3")
    )
    events["ana-m5"].append(_event("superseded", 31, by="ana-m3"))
    graph.add_edge("ana-m3", "ana-m5", EdgeKind.SUPERSEDES)
    graph.remove("bo-m5")
    del events["bo-m5"]
    return graph, events


def _plain(graph: MemoryGraph) -> dict[str, object]:
    """Everything the graph holds, as plain values."""
    ids = [i for tenant in graph.entity_ids() for i in graph.memory_ids(tenant)]
    return {
        "items": {i: graph.item(i).model_dump(mode="json") for i in ids},  # type: ignore[union-attr]
        "history": {i: [e.model_dump(mode="json") for e in graph.history(i)] for i in ids},
        "edges": sorted(graph.g.edges(keys=True)),
        "nodes": sorted(graph.g.nodes(data="kind")),
        "entities": {t: graph.subject_names(t) for t in graph.entity_ids()},
    }


def test_history_returns_the_events_put_in_order() -> None:
    graph, events = _built()
    for memory_id, expected in events.items():
        assert graph.history(memory_id) == expected
    assert graph.history("bo-m5") == [] and graph.history("nowhere") == []


def test_snapshot_is_the_node_link_document_and_reads_back_the_same(tmp_path: Path) -> None:
    graph, events = _built()
    path = tmp_path / "graph.json"
    graph.save(path, 7)
    # the streamed file is exactly json.dumps of the node-link data, which networkx reads
    document = graph.to_node_link(7)
    assert path.read_text() == json.dumps(document, separators=(",", ":"))
    nxg = nx.node_link_graph(json.loads(path.read_text()), edges="edges")
    assert nxg.has_edge("ana-m2", "ana-m1", key="supports")
    assert nxg.nodes["ana-m4"]["history"][-1]["detail"] == {"fields": ["tags"]}
    loaded, generation = MemoryGraph.load(path)
    assert generation == 7
    assert _plain(loaded) == _plain(graph)
    assert {i: loaded.history(i) for i in events} == events
    # a loaded graph (entity nodes first) writes what it read, byte for byte
    loaded.save(tmp_path / "again.json", 7)
    again, _ = MemoryGraph.load(tmp_path / "again.json")
    again.save(tmp_path / "third.json", 7)
    assert (tmp_path / "third.json").read_bytes() == (tmp_path / "again.json").read_bytes()


def test_any_json_layout_of_a_snapshot_reads_the_same(tmp_path: Path) -> None:
    graph, _ = _built()
    document = graph.to_node_link(3)
    indented = tmp_path / "indented.json"
    indented.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    reordered = tmp_path / "reordered.json"
    reordered.write_text(
        json.dumps({k: document[k] for k in ("edges", "graph", "nodes", "directed")}, indent=1)
    )
    for path in (indented, reordered):
        loaded, generation = MemoryGraph.load(path)
        assert generation == 3 and _plain(loaded) == _plain(graph)


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # cut off
        lambda text: text + "{}",  # trailing data
        lambda text: text.replace('"action":"updated"', '"action":3'),  # a bad event
        lambda text: text.replace(',"edges":[', ',"links":['),  # no edges
    ],
)
def test_a_damaged_snapshot_is_refused(tmp_path: Path, damage: object) -> None:
    graph, _ = _built()
    path = tmp_path / "graph.json"
    graph.save(path, 2)
    path.write_text(damage(path.read_text()))  # type: ignore[operator]
    with pytest.raises(StoreCorruptError, match=r"graph\.json"):
        MemoryGraph.load(path)


def test_edges_of_two_kinds_on_a_pair_come_and_go_separately() -> None:
    graph, _ = _built()
    assert graph.edges_of("ana-m2", EdgeKind.SUPPORTS) == (["ana-m1"], [])
    assert graph.edges_of("ana-m2", EdgeKind.FOLLOWS) == (["ana-m1"], ["ana-m3"])
    graph.remove("ana-m1")
    assert graph.edges_of("ana-m2", EdgeKind.SUPPORTS) == ([], [])
    assert graph.edges_of("bo-m2", EdgeKind.FOLLOWS) == (["bo-m1"], ["bo-m3"])
    assert graph.edge_counts()["supports"] == 0
    # re-putting an item re-links its mentions without touching its other edges
    graph.put(_message(3).model_copy(update={"entities": ["Lisbon"]}))
    assert [e for _, e in graph.neighbours_by_subject("ana-m3")] == []
    assert graph.mentioning("ana", "Lisbon", 5) == ["ana-m3"]
    assert graph.edges_of("ana-m3", EdgeKind.SUPERSEDES) == (["ana-m5"], [])


def test_shared_edge_dicts_refuse_changes_made_behind_the_graph() -> None:
    graph, _ = _built()
    with pytest.raises(TypeError):
        graph.g.add_edge("ana-m3", "ana-m2", key="follows", weight=2)
    with pytest.raises(TypeError):
        graph.g.edges["ana-m3", "ana-m2", "follows"]["weight"] = 2
    assert graph.g.edges["ana-m3", "ana-m2", "follows"] == {}


def test_stored_items_keep_their_values_and_change_one_at_a_time(tmp_path: Path) -> None:
    built, _ = _built()
    built.save(tmp_path / "graph.json", 1)
    graph, _ = MemoryGraph.load(tmp_path / "graph.json")  # items with every field set
    a, b = graph.item("ana-m1"), graph.item("ana-m3")
    assert a is not None and b is not None
    before = b.model_dump()
    assert a.model_dump(mode="json") == _message(1).model_dump(mode="json")
    assert a.sources[0].content == a.text and a.scope == Scope(entity_id="ana", session_id="s1")
    a.recall_count += 1  # what a recall does to the stored item
    a.tags.append("seen")
    assert b.model_dump() == before
    assert set(a.model_fields_set) == set(MemoryItem.model_fields)
    assert graph.item("ana-m2").recall_count == 0  # type: ignore[union-attr]
    fresh = MemoryItem(text="new", scope=Scope(entity_id="ana"))
    graph.put(fresh)
    assert graph.item(fresh.id) is fresh and fresh.model_fields_set == {"text", "scope"}


def test_keyword_index_is_unchanged_by_reindexing_and_reused_slots() -> None:
    graph, _ = _built()
    index = KeywordIndex()
    for item in graph.items():
        index.add(item.scope.entity_id, item.id, item.search_text())
    first = index.search("ana", "Mia school Porto", 10)
    for item in graph.items("ana"):
        index.add("ana", item.id, item.search_text())  # re-indexed in place
    assert index.search("ana", "Mia school Porto", 10) == first
    index.remove("ana-m0")
    index.add("ana", "ana-m9", "Mia starts school")  # takes the freed slot
    assert index.search("ana", "school", 10)[0][0] == "ana-m9"
    assert index.search("bo", "café Zoë", 3)[0][1] > 0
