"""What a graph export shows: one scope's nodes and edges, flattened attributes, colours.

Shared by every export format ([`memtrellis.graph_export`][memtrellis.graph_export]) so that
GraphML, JSON, the HTML page and the PNG show the same nodes with the same attributes and colours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx

from memtrellis.store.graph import SUBJECT_KIND as SUBJECT
from memtrellis.store.graph import MemoryGraph
from memtrellis.types import EdgeKind, MemoryItem, MemoryType

__all__ = [
    "EDGE_COLOURS",
    "MEMORY_COLOURS",
    "SUBJECT_COLOUR",
    "Scalar",
    "Selection",
    "flat_graph",
    "memory_attrs",
    "select",
    "subject_attrs",
]

#: A value every export format can hold as it is (GraphML allows no lists, dicts or None).
Scalar = str | int | float | bool

#: Fill colour of a memory node by its type (colour-blind-safe Okabe-Ito and Tol hues).
MEMORY_COLOURS: dict[str, str] = {
    MemoryType.FACT.value: "#0072B2",
    MemoryType.PREFERENCE.value: "#E69F00",
    MemoryType.EVENT.value: "#009E73",
    MemoryType.DECISION.value: "#D55E00",
    MemoryType.STATE.value: "#56B4E9",
    MemoryType.PREDICTION.value: "#CC79A7",
    MemoryType.SKILL.value: "#F0E442",
    MemoryType.EPISODE.value: "#999999",
    MemoryType.ACTION_ITEM.value: "#882255",
}
#: Subject nodes: one colour, drawn as squares.
SUBJECT_COLOUR = "#44AA99"
#: Stroke colour of an edge by its kind.
EDGE_COLOURS: dict[str, str] = {
    EdgeKind.MENTIONS.value: "#B0B0B0",
    EdgeKind.SUPPORTS.value: "#2CA02C",
    EdgeKind.CONTRADICTS.value: "#D62728",
    EdgeKind.EXTENDS.value: "#1F77B4",
    EdgeKind.SUPERSEDES.value: "#9467BD",
    EdgeKind.FOLLOWS.value: "#8C564B",
}

#: Joins list-valued fields (tags, message ids) into one GraphML-legal string.
JOIN = ", "


@dataclass(frozen=True)
class Selection:
    """The nodes and edges of one export, in a stable order.

    Attributes:
        entity_id: The ``entity_id`` exported, or ``None`` for every entity.
        memories: Memory ids kept, oldest first.
        subjects: Subject node ids mentioned by the kept memories.
        edges: ``(source, target, kind)`` for every edge between kept nodes.
        total: Memories in scope before the cap.
    """

    entity_id: str | None
    memories: list[str]
    subjects: list[str]
    edges: list[tuple[str, str, str]]
    total: int

    @property
    def omitted(self) -> int:
        """Memories in scope that the cap left out."""
        return self.total - len(self.memories)


def select(graph: MemoryGraph, entity_id: str | None, limit: int | None = None) -> Selection:
    """One entity's memories (or every entity's), capped to the newest ``limit``.

    Only subject nodes of the memories' own entity are kept and only edges whose both ends
    are kept, so nothing of another entity can appear even if an edge crossed entities.
    """
    owners = [entity_id] if entity_id is not None else graph.entity_ids()
    ids = [memory_id for name in owners for memory_id in graph.memory_ids(name)]
    total = len(ids)
    if limit is not None and total > limit:
        newest = sorted(ids, key=lambda i: _item(graph, i).created_at, reverse=True)[:limit]
        keep = set(newest)
        ids = [memory_id for memory_id in ids if memory_id in keep]
    kept: dict[str, None] = dict.fromkeys(ids)
    subjects: dict[str, None] = {}
    mentions = EdgeKind.MENTIONS.value
    for memory_id in ids:
        owner = _item(graph, memory_id).scope.entity_id
        for target, keys in graph.g.succ[memory_id].items():
            data = graph.g.nodes[target]
            # A mention of another entity's subject node would be a store bug; never follow it.
            if mentions in keys and data.get("kind") == SUBJECT and data["entity_id"] == owner:
                subjects.setdefault(target, None)
    kept.update(subjects)
    edges = [
        (source, target, str(kind))
        for source in kept
        for target, keys in graph.g.succ[source].items()
        if target in kept
        for kind in keys
    ]
    return Selection(entity_id, ids, list(subjects), edges, total)


def _item(graph: MemoryGraph, memory_id: str) -> MemoryItem:
    item: MemoryItem = graph.g.nodes[memory_id]["item"]
    return item


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def memory_attrs(item: MemoryItem) -> dict[str, Scalar]:
    """A memory's fields as scalars: ISO dates, joined lists, counts; empty ones left out.

    Examples:
        >>> from memtrellis.types import Scope
        >>> item = MemoryItem(text="hi", tags=["a", "b"], scope=Scope(entity_id="u"))
        >>> attrs = memory_attrs(item)
        >>> attrs["kind"], attrs["tags"], attrs["source_count"], "entities" in attrs
        ('memory', 'a, b', 0, False)
    """
    speakers = [name for source in item.sources if (name := source.speaker or source.role)]
    attrs: dict[str, Scalar | None] = {
        "kind": "memory",
        "label": item.text[:60],
        "text": item.text,
        "memory_type": item.memory_type.value,
        "confidence": float(item.confidence),
        "entity_id": item.scope.entity_id,
        "process_id": item.scope.process_id,
        "session_id": item.scope.session_id,
        "created_at": item.created_at.isoformat(),
        "updated_at": _iso(item.updated_at),
        "valid_from": _iso(item.valid_from),
        "valid_until": _iso(item.valid_until),
        "superseded_by": item.superseded_by,
        "superseded": item.superseded_by is not None,
        "key": item.key,
        "tags": JOIN.join(item.tags),
        "entities": JOIN.join(item.entities),
        "source_count": len(item.sources),
        "source_message_ids": JOIN.join(s.message_id for s in item.sources if s.message_id),
        "source_speakers": JOIN.join(dict.fromkeys(speakers)),
        "recall_count": item.recall_count,
    }
    # Empty strings go too: GraphML reads an empty value back as no value at all.
    return {name: value for name, value in attrs.items() if value is not None and value != ""}


def subject_attrs(data: dict[str, Any]) -> dict[str, Scalar]:
    """A subject node's attributes as scalars."""
    name = str(data.get("name", ""))
    return {"kind": SUBJECT, "label": name, "name": name, "entity_id": str(data["entity_id"])}


def flat_graph(graph: MemoryGraph, selection: Selection) -> nx.MultiDiGraph:
    """The selection as a new MultiDiGraph whose attributes are all scalars.

    Edge keys are the edge kinds, as in the store, and each edge also carries ``kind``.
    """
    flat = nx.MultiDiGraph()
    flat.graph.update({"format": "memtrellis-graph-export"})
    if selection.entity_id is not None:
        flat.graph["entity_id"] = selection.entity_id
    for memory_id in selection.memories:
        flat.add_node(memory_id, **memory_attrs(_item(graph, memory_id)))
    for node in selection.subjects:
        flat.add_node(node, **subject_attrs(graph.g.nodes[node]))
    for source, target, kind in selection.edges:
        flat.add_edge(source, target, key=kind, kind=kind)
    return flat
