"""The memory graph: memory and entity nodes with typed edges, in one NetworkX MultiDiGraph.

Entity nodes are per tenant (``entity:<entity_id>:<name>``) so that graph expansion can
never walk from one tenant's memory into another's. The graph is saved as node-link JSON
that a plain ``json.load`` reads and ``networkx.node_link_graph(data, edges="edges")``
turns back into a graph.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import networkx as nx

from memtrellis.store._corrupt import FROM_INDEX, damaged
from memtrellis.store._edges import link, no_attributes, unlink
from memtrellis.store._files import atomic_write_chunks
from memtrellis.store._slim import (
    EMPTY_HISTORY,
    Slimmer,
    add_event,
    dumps,
    history_bytes,
    read_history,
)
from memtrellis.store._stream import members
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem

__all__ = ["ENTITY_NODE_PREFIX", "MemoryGraph", "entity_node_id", "normalize_entity"]

T = TypeVar("T")
_MEMORY = "memory"
#: Entities with more mentions than this are hubs that graph expansion does not walk.
HUB_MENTIONS = 64
_ENTITY = "entity"
#: Entity node ids start with this; no memory id may, or it would take over the node.
ENTITY_NODE_PREFIX = "entity:"


def normalize_entity(name: str) -> str:
    """Case- and whitespace-insensitive form of an entity name.

    Examples:
        >>> normalize_entity("  New   York ")
        'new york'
    """
    return " ".join(name.split()).casefold()


def entity_node_id(tenant: str, name: str) -> str:
    """The node id of entity ``name`` in tenant ``tenant``'s part of the graph.

    ``:`` and ``%`` in the tenant are percent-encoded, so the tenant part ends at the
    first ``:``: otherwise tenant ``a:b`` with entity ``c`` and tenant ``a`` with entity
    ``b:c`` would share one node. Ids of tenants without those characters are unchanged.

    Examples:
        >>> entity_node_id("ana", "Porto")
        'entity:ana:porto'
        >>> entity_node_id("a:b", "C"), entity_node_id("a", "b:C")
        ('entity:a%3Ab:c', 'entity:a:b:c')
    """
    escaped = tenant.replace("%", "%25").replace(":", "%3A")
    return f"{ENTITY_NODE_PREFIX}{escaped}:{normalize_entity(name)}"


class MemoryGraph:
    """Memories, entities and the edges between them, with a per-tenant index.

    Not thread-safe by itself; [`memtrellis.store.Store`][memtrellis.store.Store] serialises access.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> graph = MemoryGraph()
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> graph.put(item)
        >>> graph.tenants(), graph.item(item.id).text
        (['ana'], 'Ana lives in Porto.')
    """

    def __init__(self) -> None:
        self.g: nx.MultiDiGraph = nx.MultiDiGraph()
        # Edges share their dicts (see _edges): link and unlink, never g.add_edge.
        self.g.edge_attr_dict_factory = no_attributes
        # tenant -> memory ids in insertion order, for listing without scanning the graph
        self._by_tenant: dict[str, dict[str, None]] = {}
        # tenant -> normalised entity name -> display name, for resolving new names
        self._entities: dict[str, dict[str, str]] = {}
        # Each memory node holds its item (its parts shared with the other items where
        # equal) and its history as the JSON bytes the snapshot writes.
        self._slim = Slimmer()

    # -- reads ---------------------------------------------------------------------------
    def __contains__(self, memory_id: object) -> bool:
        return (
            isinstance(memory_id, str)
            and memory_id in self.g
            and self.g.nodes[memory_id].get("kind") == _MEMORY
        )

    def __len__(self) -> int:
        return sum(len(ids) for ids in self._by_tenant.values())

    def item(self, memory_id: str) -> MemoryItem | None:
        """The stored item (not a copy), or ``None``."""
        data = self.g.nodes.get(memory_id) if isinstance(memory_id, str) else None
        if data is None or data.get("kind") != _MEMORY:
            return None
        item: MemoryItem = data["item"]
        return item

    def history(self, memory_id: str) -> list[HistoryEvent]:
        """Events recorded for a memory, oldest first."""
        if memory_id not in self:
            return []
        return read_history(self.g.nodes[memory_id]["history"])

    def tenant_ids(self, tenant: str) -> list[str]:
        """Ids of one tenant's memories, oldest insertion first."""
        return list(self._by_tenant.get(tenant, ()))

    def tenants(self) -> list[str]:
        """Every tenant (``entity_id``) with at least one memory."""
        return [tenant for tenant, ids in self._by_tenant.items() if ids]

    def items(self, tenant: str | None = None) -> Iterator[MemoryItem]:
        """Stored items of one tenant, or of all."""
        tenants = [tenant] if tenant is not None else list(self._by_tenant)
        for name in tenants:
            for memory_id in self._by_tenant.get(name, ()):
                yield self.g.nodes[memory_id]["item"]

    def entity_names(self, tenant: str) -> dict[str, str]:
        """One tenant's entities: normalised name -> the name first stored (a copy)."""
        return dict(self._entities.get(tenant, {}))

    def mentioning(self, tenant: str, name: str, limit: int) -> list[str]:
        """Up to ``limit`` memories of ``tenant`` that mention entity ``name``, newest first."""
        node = entity_node_id(tenant, name)
        if node not in self.g:
            return []
        others = list(self.g.pred[node])
        return others[-limit:][::-1]

    def edges_of(self, memory_id: str, kind: EdgeKind) -> tuple[list[str], list[str]]:
        """``(targets, sources)`` of ``kind`` edges out of and into a memory."""
        if memory_id not in self:
            return [], []
        key = kind.value
        out = [t for t, keys in self.g.succ[memory_id].items() if key in keys]
        into = [s for s, keys in self.g.pred[memory_id].items() if key in keys]
        return out, into

    def memo(
        self, memory_id: str, name: str, compute: Callable[[MemoryItem], T]
    ) -> tuple[MemoryItem, T] | None:
        """The stored item and ``compute(item)``, cached on its node until the item changes.

        For figures derived from an item alone that recall needs for hundreds of
        candidates; the cache lives in memory only and follows each ``put``.
        """
        data = self.g._node.get(memory_id)
        if data is None or data.get("kind") != _MEMORY:
            return None
        item: MemoryItem = data["item"]
        key = f"_memo_{name}"
        cached = data.get(key)
        if cached is None or cached[0] is not item:
            cached = data[key] = (item, compute(item))
        return cast("tuple[MemoryItem, T]", cached)

    def count_into(self, memory_id: str, kind: EdgeKind) -> int:
        """How many ``kind`` edges point at a memory."""
        # The adjacency dict itself: the view layers cost more than the count (recall weighs
        # hundreds of candidates).
        preds = self.g._pred.get(memory_id)
        key = kind.value
        return sum(1 for keys in preds.values() if key in keys) if preds else 0

    def entity_count(self) -> int:
        """Number of entity nodes."""
        return sum(1 for _, kind in self.g.nodes(data="kind") if kind == _ENTITY)

    def edge_counts(self) -> dict[str, int]:
        """Number of edges of each kind (every kind listed, zero included)."""
        counts = {kind.value: 0 for kind in EdgeKind}
        for _, _, kind in self.g.edges(keys=True):
            counts[kind] = counts.get(kind, 0) + 1
        return counts

    def adjacent(self, memory_id: str, radius: int) -> Iterator[tuple[str, int]]:
        """Memories up to ``radius`` messages before and after this one in its conversation."""
        if memory_id not in self:
            return
        kind = EdgeKind.FOLLOWS.value
        # The adjacency dicts directly: edge views cost more than the walk itself.
        for links in (self.g.succ, self.g.pred):
            current = memory_id
            for distance in range(1, radius + 1):
                step = next((n for n, keys in links[current].items() if kind in keys), None)
                if step is None:
                    break
                yield step, distance
                current = step

    def neighbours_by_entity(self, memory_id: str) -> Iterator[tuple[str, str]]:
        """``(entity node, other memory id)`` for memories sharing an entity with this one.

        Entities mentioned by more than `HUB_MENTIONS` memories are skipped: like a
        stop word, a hub says little about any one memory, and walking it costs O(mentions).
        """
        if memory_id not in self:
            return
        mentions = EdgeKind.MENTIONS.value
        for entity, keys in self.g.succ[memory_id].items():
            if mentions not in keys:
                continue
            others = self.g.pred[entity]  # only mentions point at entity nodes
            if len(others) > HUB_MENTIONS:
                continue
            for other in others:
                if other != memory_id:
                    yield entity, other

    # -- writes --------------------------------------------------------------------------
    def put(self, item: MemoryItem, event: HistoryEvent | None = None) -> None:
        """Insert or replace a memory node and its ``mentions`` edges."""
        self._slim.item(item)
        self._insert(item, event)

    def _insert(self, item: MemoryItem, event: HistoryEvent | None, history: bytes = b"") -> None:
        # put() of an item already slimmed; a loaded node brings its whole ``history``.
        tenant = item.scope.entity_id
        if item.id in self:
            old: MemoryItem = self.g.nodes[item.id]["item"]
            item.__dict__["id"] = old.id  # the same string, shared with the graph's keys
            if old.scope.entity_id != tenant:
                self._by_tenant.get(old.scope.entity_id, {}).pop(item.id, None)
            self._drop_mentions(item.id)
            self.g.nodes[item.id]["item"] = item
        else:
            self.g.add_node(item.id, kind=_MEMORY, item=item, history=EMPTY_HISTORY)
        self._by_tenant.setdefault(tenant, {})[item.id] = None
        if history:
            self.g.nodes[item.id]["history"] = history
        if event is not None:
            data = self.g.nodes[item.id]
            data["history"] = add_event(data["history"], event)
        for name in item.entities:
            node = sys.intern(entity_node_id(tenant, name))
            if node not in self.g:
                self.g.add_node(node, kind=_ENTITY, name=name, entity_id=tenant)
            known = self._entities.setdefault(tenant, {})
            known.setdefault(normalize_entity(name), self.g.nodes[node].get("name", name))
            link(self.g, item.id, node, EdgeKind.MENTIONS.value)

    def _remove_entity(self, node: str) -> None:
        data = self.g.nodes[node]
        known = self._entities.get(str(data.get("entity_id")), {})
        known.pop(normalize_entity(str(data.get("name", ""))), None)
        self.g.remove_node(node)

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None:
        """Add a typed memory-to-memory edge (idempotent)."""
        if source in self and target in self:
            # The nodes' own id strings, not the caller's equal copies: networkx keeps
            # the key objects it is given in both adjacency dicts.
            nodes = self.g._node
            link(self.g, nodes[source]["item"].id, nodes[target]["item"].id, kind.value)

    def remove(self, memory_id: str) -> MemoryItem | None:
        """Remove a memory, its edges and any entity left without mentions."""
        item = self.item(memory_id)
        if item is None:
            return None
        entities = [t for _, t, k in self.g.out_edges(memory_id, keys=True) if k == "mentions"]
        self.g.remove_node(memory_id)
        self._by_tenant.get(item.scope.entity_id, {}).pop(memory_id, None)
        for entity in entities:
            if entity in self.g and self.g.in_degree(entity) == 0:
                self._remove_entity(entity)
        return item

    def remove_tenant(self, tenant: str) -> list[str]:
        """Remove every memory of one tenant; returns their ids."""
        ids = self.tenant_ids(tenant)
        for memory_id in ids:
            self.remove(memory_id)
        self._by_tenant.pop(tenant, None)
        self._entities.pop(tenant, None)
        self._slim.forget(tenant)
        return ids

    def _drop_mentions(self, memory_id: str) -> None:
        for _, entity, key in list(self.g.out_edges(memory_id, keys=True)):
            if key == EdgeKind.MENTIONS.value:
                unlink(self.g, memory_id, entity, key)
                if self.g.in_degree(entity) == 0:
                    self._remove_entity(entity)

    # -- persistence ---------------------------------------------------------------------
    def _node_records(self) -> Iterator[dict[str, Any]]:
        for node, data in self.g.nodes(data=True):
            if data.get("kind") == _MEMORY:
                yield {
                    "id": node,
                    "kind": _MEMORY,
                    "item": data["item"].model_dump(mode="json"),
                    "history": json.loads(data["history"]),
                }
            else:
                yield {"id": node, **data}

    def _node_json(self) -> Iterator[str]:
        # What dumps() writes for each of _node_records, with the history spliced in as
        # kept rather than decoded and encoded again.
        for node, data in self.g.nodes(data=True):
            if data.get("kind") == _MEMORY:
                item = dumps(data["item"].model_dump(mode="json"))
                history = data["history"].decode("ascii")
                yield f'{{"id":{dumps(node)},"kind":"{_MEMORY}","item":{item},"history":{history}}}'
            else:
                yield dumps({"id": node, **data})

    def _edge_records(self) -> Iterator[dict[str, Any]]:
        for s, t, k in self.g.edges(keys=True):
            yield {"source": s, "target": t, "key": k, "kind": k}

    def _header(self, generation: int) -> dict[str, Any]:
        return {
            "directed": True,
            "multigraph": True,
            "graph": {"generation": generation, "format": "memtrellis-graph"},
        }

    def to_node_link(self, generation: int) -> dict[str, Any]:
        """The graph as node-link data (plain JSON types only)."""
        return {
            **self._header(generation),
            "nodes": list(self._node_records()),
            "edges": list(self._edge_records()),
        }

    def _json_chunks(self, generation: int) -> Iterator[bytes]:
        # The same document as json.dumps(to_node_link(...)), one node or edge at a time:
        # at 100k memories the whole document held at once cost about 300 MB of peak RSS.
        yield dumps(self._header(generation))[:-1].encode()
        edges = (dumps(record) for record in self._edge_records())
        for name, records in (("nodes", self._node_json()), ("edges", edges)):
            parts = [f',"{name}":[']
            for index, record in enumerate(records):
                parts.append(("," if index else "") + record)
                if len(parts) >= 512:
                    yield "".join(parts).encode()
                    parts = []
            parts.append("]")
            yield "".join(parts).encode()
        yield b"}"

    def save(self, path: Path, generation: int) -> None:
        """Write the graph atomically as node-link JSON, streamed node by node."""
        atomic_write_chunks(path, self._json_chunks(generation))

    def to_json(self, generation: int) -> bytes:
        """The document `save` writes, as bytes (for a snapshot kept in a database).

        Examples:
            >>> MemoryGraph.from_json(MemoryGraph().to_json(3))[1]
            3
        """
        return b"".join(self._json_chunks(generation))

    @classmethod
    def load(
        cls, path: Path, *, store: Path | None = None, flags: tuple[str, ...] = (FROM_INDEX,)
    ) -> tuple[MemoryGraph, int]:
        """Read a saved graph; returns it and the generation it was saved at.

        ``store``: the store directory a damaged file's repair command names (by default
        the file's own directory), ``flags`` that command's options.
        """
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls(), 0
        try:
            return cls.from_json(raw)
        except (ValueError, KeyError, TypeError) as exc:
            raise damaged(
                path,
                f"cannot be read ({exc.__class__.__name__}: {str(exc)[:200]})",
                store or path.parent,
                *flags,
            ) from exc

    @classmethod
    def from_json(cls, raw: bytes) -> tuple[MemoryGraph, int]:
        """The graph in a document `save` wrote, and its generation.

        Raises:
            ValueError: Not such a document (``KeyError`` or ``TypeError`` for missing
                or mistyped fields).

        Examples:
            >>> from memtrellis import MemoryItem, Scope
            >>> graph = MemoryGraph()
            >>> graph.put(MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana")))
            >>> copy, generation = MemoryGraph.from_json(graph.to_json(1))
            >>> len(copy), generation
            (1, 1)
        """
        graph = cls()
        text = raw.decode("utf-8")
        del raw
        generation = graph._read(text)
        return graph, generation

    def absorb(self, other: MemoryGraph) -> None:
        """Add every memory, history and edge of ``other`` (another entity's shard).

        Examples:
            >>> from memtrellis import MemoryItem, Scope
            >>> ana, bo = MemoryGraph(), MemoryGraph()
            >>> ana.put(MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana")))
            >>> bo.put(MemoryItem(text="Bo lives in Oslo.", scope=Scope(entity_id="bo")))
            >>> ana.absorb(bo)
            >>> sorted(ana.tenants())
            ['ana', 'bo']
        """
        for item in other.items():
            self._slim.item(item)
            self._insert(item, None, other.g.nodes[item.id]["history"])
        for source, target, key in other.g.edges(keys=True):
            if key != EdgeKind.MENTIONS.value:
                self.add_edge(source, target, EdgeKind(key))

    def _read(self, text: str) -> int:
        # Entity nodes first, then the memories (put re-creates entity nodes saved under an
        # older form of their id), then the edges, whatever order the members come in.
        seen: set[str] = set()
        generation: int | None = None
        memories: list[tuple[MemoryItem, bytes]] = []
        early_edges: list[dict[str, Any]] = []
        for name, value in members(text, seen):
            if name == "graph":
                generation = int(value["generation"])
            elif name == "nodes":
                if value.get("kind") == _MEMORY:
                    item = MemoryItem.model_validate(value["item"])
                    # Shared at once, so that what it frees is reused by the next node
                    # (slimmed later, the items would leave 30 MB of holes at 20k).
                    self._slim.item(item)
                    # Checked, then kept as written (the form history_bytes writes).
                    for event in value["history"]:
                        HistoryEvent.model_validate(event)
                    memories.append((item, history_bytes(value["history"])))
                else:
                    self._read_entity(value)
            elif name == "edges":
                if "nodes" not in seen:
                    early_edges.append(value)
                    continue
                self._put_loaded(memories)
                self._read_edge(value)
        if generation is None or not {"nodes", "edges"} <= seen:
            raise KeyError(next(k for k in ("graph", "nodes", "edges") if k not in seen))
        self._put_loaded(memories)
        for edge in early_edges:
            self._read_edge(edge)
        return generation

    def _read_entity(self, node: dict[str, Any]) -> None:
        attrs = {k: v for k, v in node.items() if k != "id"}
        owner, name = attrs.get("entity_id"), attrs.get("name")
        if attrs.get("kind") == _ENTITY and (
            not isinstance(owner, str)
            or not isinstance(name, str)
            or entity_node_id(owner, name) != node["id"]
        ):
            # Saved under an older, ambiguous form of the id (see entity_node_id): put
            # re-creates it under the current one.
            return
        node_id = node["id"]
        self.g.add_node(sys.intern(node_id) if type(node_id) is str else node_id, **attrs)

    def _put_loaded(self, memories: list[tuple[MemoryItem, bytes]]) -> None:
        for item, history in memories:
            self._insert(item, None, history)
        memories.clear()

    def _read_edge(self, edge: dict[str, Any]) -> None:
        if edge["key"] != EdgeKind.MENTIONS.value:
            self.add_edge(edge["source"], edge["target"], EdgeKind(edge["key"]))

    def load_items(self, items: Iterable[MemoryItem]) -> None:
        """Insert many items (used when rebuilding)."""
        for item in items:
            self.put(item)
