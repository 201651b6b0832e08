"""The memory graph on disk: node-link JSON, written node by node and read back.

The document is what ``networkx.node_link_data(graph, edges="edges")`` would give, with
each memory node's item and history as plain JSON (`MemoryGraph.save`, `.to_json`,
`.from_json` call these). Kept apart from `memtrellis.store.graph` so that the graph's
reads and writes and its file format each stay one module.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, Protocol

import networkx as nx

from memtrellis.store._slim import Slimmer, dumps, history_bytes
from memtrellis.store._stream import members
from memtrellis.store.forgotten import Forgotten
from memtrellis.store.graph_names import MEMORY_KIND as _MEMORY
from memtrellis.store.graph_names import OLD_SUBJECT_KIND as _OLD_SUBJECT
from memtrellis.store.graph_names import SUBJECT_KIND as _SUBJECT
from memtrellis.store.graph_names import subject_node_id
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem

__all__ = ["json_chunks", "node_link", "read_into"]


class MemoryGraph(Protocol):
    """What the file format reads and fills of a `memtrellis.store.graph.MemoryGraph`
    (named here, not imported: the graph imports this module)."""

    g: nx.MultiDiGraph
    forgotten: Forgotten
    _slim: Slimmer

    def _insert(self, item: MemoryItem, event: None, history: bytes = b"") -> None: ...

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None: ...


def _node_records(graph: MemoryGraph) -> Iterator[dict[str, Any]]:
    for node, data in graph.g.nodes(data=True):
        if data.get("kind") == _MEMORY:
            yield {
                "id": node,
                "kind": _MEMORY,
                "item": data["item"].model_dump(mode="json"),
                "history": json.loads(data["history"]),
            }
        else:
            yield {"id": node, **data}


def _node_json(graph: MemoryGraph) -> Iterator[str]:
    # What dumps() writes for each of _node_records, with the history spliced in as
    # kept rather than decoded and encoded again.
    for node, data in graph.g.nodes(data=True):
        if data.get("kind") == _MEMORY:
            item = dumps(data["item"].model_dump(mode="json"))
            history = data["history"].decode("ascii")
            yield f'{{"id":{dumps(node)},"kind":"{_MEMORY}","item":{item},"history":{history}}}'
        else:
            yield dumps({"id": node, **data})


def _edge_records(graph: MemoryGraph) -> Iterator[dict[str, Any]]:
    for s, t, k in graph.g.edges(keys=True):
        yield {"source": s, "target": t, "key": k, "kind": k}


def _header(graph: MemoryGraph, generation: int) -> dict[str, Any]:
    return {
        "directed": True,
        "multigraph": True,
        "graph": {
            "generation": generation,
            "format": "memtrellis-graph",
            **graph.forgotten.header(),
        },
    }


def node_link(graph: MemoryGraph, generation: int) -> dict[str, Any]:
    """``graph`` as node-link data (plain JSON types only)."""
    return {
        **_header(graph, generation),
        "nodes": list(_node_records(graph)),
        "edges": list(_edge_records(graph)),
    }


def json_chunks(graph: MemoryGraph, generation: int) -> Iterator[bytes]:
    """The same document as ``json.dumps(node_link(...))``, one node or edge at a time: at
    100k memories the whole document held at once cost about 300 MB of peak RSS."""
    yield dumps(_header(graph, generation))[:-1].encode()
    edges = (dumps(record) for record in _edge_records(graph))
    for name, records in (("nodes", _node_json(graph)), ("edges", edges)):
        parts = [f',"{name}":[']
        for index, record in enumerate(records):
            parts.append(("," if index else "") + record)
            if len(parts) >= 512:
                yield "".join(parts).encode()
                parts = []
        parts.append("]")
        yield "".join(parts).encode()
    yield b"}"


def read_into(graph: MemoryGraph, text: str) -> int:
    """Fill the empty ``graph`` from a document `json_chunks` wrote; returns its
    generation.

    Raises:
        ValueError, KeyError, TypeError: Not such a document.
    """
    # Subject nodes first, then the memories (put re-creates subject nodes saved under
    # an older form of their id), then the edges, whatever order the members come in.
    seen: set[str] = set()
    generation: int | None = None
    memories: list[tuple[MemoryItem, bytes]] = []
    early_edges: list[dict[str, Any]] = []
    for name, value in members(text, seen):
        if name == "graph":
            generation = int(value["generation"])
            graph.forgotten.read(value)
        elif name == "nodes":
            if value.get("kind") == _MEMORY:
                item = MemoryItem.model_validate(value["item"])
                # Shared at once, so that what it frees is reused by the next node
                # (slimmed later, the items would leave 30 MB of holes at 20k).
                graph._slim.item(item)
                # Checked, then kept as written (the form history_bytes writes).
                for event in value["history"]:
                    HistoryEvent.model_validate(event)
                memories.append((item, history_bytes(value["history"])))
            else:
                _read_subject(graph, value)
        elif name == "edges":
            if "nodes" not in seen:
                early_edges.append(value)
                continue
            _put_loaded(graph, memories)
            _read_edge(graph, value)
    if generation is None or not {"nodes", "edges"} <= seen:
        raise KeyError(next(k for k in ("graph", "nodes", "edges") if k not in seen))
    _put_loaded(graph, memories)
    for edge in early_edges:
        _read_edge(graph, edge)
    return generation


def _read_subject(graph: MemoryGraph, node: dict[str, Any]) -> None:
    attrs = {k: v for k, v in node.items() if k != "id"}
    owner, name = attrs.get("entity_id"), attrs.get("name")
    node_id = node["id"]
    if attrs.get("kind") in (_SUBJECT, _OLD_SUBJECT):
        if not isinstance(owner, str) or not isinstance(name, str):
            return  # put re-creates it from the memories that mention it
        current = subject_node_id(owner, name)
        if attrs["kind"] == _OLD_SUBJECT and node_id == current.replace(_SUBJECT, _OLD_SUBJECT, 1):
            # Saved before subject nodes were named so (``entity:...``, kind
            # ``entity``): kept, name and all, under the current id and kind.
            node_id, attrs["kind"] = current, _SUBJECT
        if node_id != current:
            # Saved under the ambiguous id of before percent-encoding (see
            # subject_node_id): put re-creates it under the current one.
            return
    graph.g.add_node(sys.intern(node_id) if type(node_id) is str else node_id, **attrs)


def _put_loaded(graph: MemoryGraph, memories: list[tuple[MemoryItem, bytes]]) -> None:
    for item, history in memories:
        graph._insert(item, None, history)
    memories.clear()


def _read_edge(graph: MemoryGraph, edge: dict[str, Any]) -> None:
    if edge["key"] != EdgeKind.MENTIONS.value:
        graph.add_edge(edge["source"], edge["target"], EdgeKind(edge["key"]))
