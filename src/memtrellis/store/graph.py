"""The memory graph: memory and subject nodes with typed edges, in one NetworkX MultiDiGraph.

Two words, two things: an *entity* (``entity_id``) is whose memory it is; a *subject* is
a person, place or thing a memory mentions (``MemoryItem.entities`` holds their names).
Subject nodes are per entity (``subject:<entity_id>:<name>``) so that graph expansion can
never walk from one entity's memory into another's. Graphs saved before the rename hold
``entity:<entity_id>:<name>`` nodes of kind ``entity``; reading renames them to the
current id and kind, their names kept. The graph is saved as node-link JSON that a plain
``json.load`` reads and ``networkx.node_link_graph(data, edges="edges")`` turns back into
a graph.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import networkx as nx

from memtrellis._deprecated import module_aliases, renamed
from memtrellis.store._corrupt import FROM_INDEX, damaged
from memtrellis.store._edges import link, no_attributes, unlink
from memtrellis.store._files import atomic_write_chunks
from memtrellis.store._slim import (
    EMPTY_HISTORY,
    Slimmer,
    add_event,
    read_history,
)
from memtrellis.store.forgotten import Forgotten
from memtrellis.store.graph_names import (
    MEMORY_KIND,
    RESERVED_ID_PREFIXES,
    SUBJECT_KIND,
    SUBJECT_NODE_PREFIX,
    normalize_subject,
    subject_node_id,
)
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem

__all__ = [
    "HUB_MENTIONS",
    "RESERVED_ID_PREFIXES",
    "SUBJECT_KIND",
    "SUBJECT_NODE_PREFIX",
    "MemoryGraph",
    "normalize_subject",
    "subject_node_id",
]

T = TypeVar("T")
__getattr__ = module_aliases(
    __name__,
    {
        "ENTITY_NODE_PREFIX": f"{__name__}:SUBJECT_NODE_PREFIX",
        "entity_node_id": f"{__name__}:subject_node_id",
        "normalize_entity": f"{__name__}:normalize_subject",
    },
)
#: The node attribute each `MemoryGraph.memo` name is kept under.
_MEMO_KEYS: dict[str, str] = {}
#: Subjects with more mentions than this are hubs that graph expansion does not walk.
HUB_MENTIONS = 64
_MEMORY = MEMORY_KIND
_SUBJECT = SUBJECT_KIND


class MemoryGraph:
    """Memories, the subjects they mention and the edges between them, indexed by entity.

    Not thread-safe by itself; [`memtrellis.store.Store`][memtrellis.store.Store] serialises access.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> graph = MemoryGraph()
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> graph.put(item)
        >>> graph.entity_ids(), graph.item(item.id).text
        (['ana'], 'Ana lives in Porto.')
    """

    def __init__(self) -> None:
        self.g: nx.MultiDiGraph = nx.MultiDiGraph()
        # Edges share their dicts (see _edges): link and unlink, never g.add_edge.
        self.g.edge_attr_dict_factory = no_attributes
        # entity_id -> memory ids in insertion order, for listing without scanning the graph
        self._by_entity: dict[str, dict[str, None]] = {}
        # entity_id -> normalised subject name -> display name, for resolving new names
        self._subjects: dict[str, dict[str, str]] = {}
        # entity_id -> how many times its subject names changed (recall's name index)
        self._subject_stamps: dict[str, int] = {}
        # Each memory node holds its item (its parts shared with the other items where
        # equal) and its history as the JSON bytes the snapshot writes.
        self._slim = Slimmer()
        #: What was forgotten, so that it stays so (see `Shard.commit` and `Forgotten`).
        self.forgotten = Forgotten()

    # -- reads ---------------------------------------------------------------------------
    def __contains__(self, memory_id: object) -> bool:
        return (
            isinstance(memory_id, str)
            and memory_id in self.g
            and self.g.nodes[memory_id].get("kind") == _MEMORY
        )

    def __len__(self) -> int:
        return sum(len(ids) for ids in self._by_entity.values())

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

    def memory_ids(self, entity_id: str) -> list[str]:
        """Ids of one entity's memories, oldest insertion first."""
        return list(self._by_entity.get(entity_id, ()))

    def newest_ids(self, entity_id: str) -> Iterator[str]:
        """Ids of one entity's memories, newest insertion first, read as they are asked
        for (no copy of them all: read under the shard's lock)."""
        return reversed(self._by_entity.get(entity_id, {}))

    def entity_ids(self) -> list[str]:
        """Every entity (``entity_id``) with at least one memory."""
        return [entity_id for entity_id, ids in self._by_entity.items() if ids]

    def items(self, entity_id: str | None = None) -> Iterator[MemoryItem]:
        """Stored items of one entity, or of all."""
        owners = [entity_id] if entity_id is not None else list(self._by_entity)
        for name in owners:
            for memory_id in self._by_entity.get(name, ()):
                yield self.g.nodes[memory_id]["item"]

    def subject_names(self, entity_id: str) -> dict[str, str]:
        """One entity's subjects: normalised name -> the name first stored (a copy)."""
        return dict(self._subjects.get(entity_id, {}))

    def subject_view(self, entity_id: str) -> Mapping[str, str]:
        """One entity's subjects (normalised name -> display name), read-only and not a
        copy: for lookups per query at any size (`subject_names` copies)."""
        return MappingProxyType(self._subjects.get(entity_id, {}))

    def subject_stamp(self, entity_id: str) -> int:
        """A number that changes whenever a subject of ``entity_id`` is added or removed."""
        return self._subject_stamps.get(entity_id, 0)

    def mentions_of(self, node: str) -> int:
        """How many memories mention the subject node ``node`` (0 when there is none)."""
        preds = self.g._pred.get(node)
        return len(preds) if preds is not None else 0

    def mentioning(self, entity_id: str, name: str, limit: int) -> list[str]:
        """Up to ``limit`` memories of ``entity_id`` that mention subject ``name``, newest
        first."""
        return self.newest_mentioning(subject_node_id(entity_id, name), limit)

    def newest_mentioning(self, node: str, limit: int) -> list[str]:
        """Up to ``limit`` memories that mention the subject node ``node``, newest first,
        read from the tail (a subject may be mentioned by most of its entity's memories)."""
        return list(islice(reversed(self.g._pred.get(node, {})), limit))

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
        key = _MEMO_KEYS.get(name) or _MEMO_KEYS.setdefault(name, f"_memo_{name}")
        cached: tuple[MemoryItem, T] | None = data.get(key)
        if cached is None or cached[0] is not item:
            cached = data[key] = (item, compute(item))
        return cached

    def count_into(self, memory_id: str, kind: EdgeKind) -> int:
        """How many ``kind`` edges point at a memory."""
        # The adjacency dict itself: the view layers cost more than the count (recall weighs
        # hundreds of candidates).
        preds = self.g._pred.get(memory_id)
        key = kind.value
        return sum(1 for keys in preds.values() if key in keys) if preds else 0

    def subject_count(self) -> int:
        """Number of subject nodes."""
        return sum(1 for _, kind in self.g.nodes(data="kind") if kind == _SUBJECT)

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

    def neighbours_by_subject(self, memory_id: str) -> Iterator[tuple[str, str]]:
        """``(subject node, other memory id)`` for memories sharing a subject with this one.

        Subjects mentioned by more than `HUB_MENTIONS` memories are skipped: like a
        stop word, a hub says little about any one memory, and walking it costs O(mentions).
        """
        if memory_id not in self:
            return
        mentions = EdgeKind.MENTIONS.value
        for subject, keys in self.g.succ[memory_id].items():
            if mentions not in keys:
                continue
            others = self.g.pred[subject]  # only mentions point at subject nodes
            if len(others) > HUB_MENTIONS:
                continue
            for other in others:
                if other != memory_id:
                    yield subject, other

    # -- writes --------------------------------------------------------------------------
    def put(self, item: MemoryItem, event: HistoryEvent | None = None) -> None:
        """Insert or replace a memory node and its ``mentions`` edges."""
        self._slim.item(item)
        self._insert(item, event)

    def _insert(self, item: MemoryItem, event: HistoryEvent | None, history: bytes = b"") -> None:
        # put() of an item already slimmed; a loaded node brings its whole ``history``.
        owner = item.scope.entity_id
        if item.id in self:
            old: MemoryItem = self.g.nodes[item.id]["item"]
            item.__dict__["id"] = old.id  # the same string, shared with the graph's keys
            if old.scope.entity_id != owner:
                self._by_entity.get(old.scope.entity_id, {}).pop(item.id, None)
            self._drop_mentions(item.id)
            self.g.nodes[item.id]["item"] = item
        else:
            self.g.add_node(item.id, kind=_MEMORY, item=item, history=EMPTY_HISTORY)
        self._by_entity.setdefault(owner, {})[item.id] = None
        if history:
            self.g.nodes[item.id]["history"] = history
        if event is not None:
            data = self.g.nodes[item.id]
            data["history"] = add_event(data["history"], event)
        for name in item.entities:
            node = sys.intern(subject_node_id(owner, name))
            if node not in self.g:
                self.g.add_node(node, kind=_SUBJECT, name=name, entity_id=owner)
            known = self._subjects.setdefault(owner, {})
            key = normalize_subject(name)
            if key not in known:
                known[key] = self.g.nodes[node].get("name", name)
                self._subject_stamps[owner] = self._subject_stamps.get(owner, 0) + 1
            link(self.g, item.id, node, EdgeKind.MENTIONS.value)

    def _remove_subject(self, node: str) -> None:
        data = self.g.nodes[node]
        owner = str(data.get("entity_id"))
        known = self._subjects.get(owner, {})
        known.pop(normalize_subject(str(data.get("name", ""))), None)
        self._subject_stamps[owner] = self._subject_stamps.get(owner, 0) + 1
        self.g.remove_node(node)

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None:
        """Add a typed memory-to-memory edge (idempotent)."""
        if source in self and target in self:
            # The nodes' own id strings, not the caller's equal copies: networkx keeps
            # the key objects it is given in both adjacency dicts.
            nodes = self.g._node
            link(self.g, nodes[source]["item"].id, nodes[target]["item"].id, kind.value)

    def remove(self, memory_id: str) -> MemoryItem | None:
        """Remove a memory, its edges and any subject left without mentions."""
        item = self.item(memory_id)
        if item is None:
            return None
        self.forgotten.memory(item)
        subjects = [t for _, t, k in self.g.out_edges(memory_id, keys=True) if k == "mentions"]
        self.g.remove_node(memory_id)
        self._by_entity.get(item.scope.entity_id, {}).pop(memory_id, None)
        for subject in subjects:
            if subject in self.g and self.g.in_degree(subject) == 0:
                self._remove_subject(subject)
        return item

    def remove_entity(self, entity_id: str, *, began: str | None = None) -> list[str]:
        """Remove every memory of one entity; returns their ids. ``began``: when the
        forget that asks it began (ISO 8601), kept with the count of forgets."""
        ids = self.memory_ids(entity_id)
        for memory_id in ids:
            self.remove(memory_id)
        self._by_entity.pop(entity_id, None)
        self._subjects.pop(entity_id, None)
        self._subject_stamps[entity_id] = self._subject_stamps.get(entity_id, 0) + 1
        self._slim.forget(entity_id)
        self.forgotten.entity(entity_id, began=began)
        return ids

    # Deprecated names (an entity is whose memory it is, never a mentioned subject).
    def tenant_ids(self, tenant: str) -> list[str]:
        """Deprecated: [`memory_ids`][memtrellis.store.MemoryGraph.memory_ids]."""
        renamed("MemoryGraph.tenant_ids", "MemoryGraph.memory_ids")
        return self.memory_ids(tenant)

    def tenants(self) -> list[str]:
        """Deprecated: [`entity_ids`][memtrellis.store.MemoryGraph.entity_ids]."""
        renamed("MemoryGraph.tenants", "MemoryGraph.entity_ids")
        return self.entity_ids()

    def remove_tenant(self, tenant: str) -> list[str]:
        """Deprecated: [`remove_entity`][memtrellis.store.MemoryGraph.remove_entity]."""
        renamed("MemoryGraph.remove_tenant", "MemoryGraph.remove_entity")
        return self.remove_entity(tenant)

    def entity_names(self, entity_id: str) -> dict[str, str]:
        """Deprecated: [`subject_names`][memtrellis.store.MemoryGraph.subject_names]."""
        renamed("MemoryGraph.entity_names", "MemoryGraph.subject_names")
        return self.subject_names(entity_id)

    def entity_count(self) -> int:
        """Deprecated: [`subject_count`][memtrellis.store.MemoryGraph.subject_count]."""
        renamed("MemoryGraph.entity_count", "MemoryGraph.subject_count")
        return self.subject_count()

    def neighbours_by_entity(self, memory_id: str) -> Iterator[tuple[str, str]]:
        """Deprecated: `neighbours_by_subject`."""
        renamed("MemoryGraph.neighbours_by_entity", "MemoryGraph.neighbours_by_subject")
        return self.neighbours_by_subject(memory_id)

    def _drop_mentions(self, memory_id: str) -> None:
        for _, subject, key in list(self.g.out_edges(memory_id, keys=True)):
            if key == EdgeKind.MENTIONS.value:
                unlink(self.g, memory_id, subject, key)
                if self.g.in_degree(subject) == 0:
                    self._remove_subject(subject)

    # -- persistence (memtrellis.store.graph_file) -----------------------------------------
    def to_node_link(self, generation: int) -> dict[str, Any]:
        """The graph as node-link data (plain JSON types only)."""
        from memtrellis.store.graph_file import node_link

        return node_link(self, generation)

    def save(self, path: Path, generation: int) -> None:
        """Write the graph atomically as node-link JSON, streamed node by node."""
        from memtrellis.store.graph_file import json_chunks

        atomic_write_chunks(path, json_chunks(self, generation))

    def to_json(self, generation: int) -> bytes:
        """The document `save` writes, as bytes (for a snapshot kept in a database).

        Examples:
            >>> MemoryGraph.from_json(MemoryGraph().to_json(3))[1]
            3
        """
        from memtrellis.store.graph_file import json_chunks

        return b"".join(json_chunks(self, generation))

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
        from memtrellis.store.graph_file import read_into

        graph = cls()
        text = raw.decode("utf-8")
        del raw
        generation = read_into(graph, text)
        return graph, generation

    def absorb(self, other: MemoryGraph) -> None:
        """Add every memory, history and edge of ``other`` (another entity's shard).

        Examples:
            >>> from memtrellis import MemoryItem, Scope
            >>> ana, bo = MemoryGraph(), MemoryGraph()
            >>> ana.put(MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana")))
            >>> bo.put(MemoryItem(text="Bo lives in Oslo.", scope=Scope(entity_id="bo")))
            >>> ana.absorb(bo)
            >>> sorted(ana.entity_ids())
            ['ana', 'bo']
        """
        self.forgotten.absorb(other.forgotten)
        for item in other.items():
            self._slim.item(item)
            self._insert(item, None, other.g.nodes[item.id]["history"])
        for source, target, key in other.g.edges(keys=True):
            if key != EdgeKind.MENTIONS.value:
                self.add_edge(source, target, EdgeKind(key))

    def load_items(self, items: Iterable[MemoryItem]) -> None:
        """Insert many items (used when rebuilding)."""
        for item in items:
            self.put(item)
