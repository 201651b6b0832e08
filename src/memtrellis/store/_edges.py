"""How the memory graph stores its edges in networkx's dicts, without a dict per edge.

A ``MultiDiGraph`` keeps, for every linked pair of nodes, a dict of edge keys (the same
dict in the successor and the predecessor adjacency), each key with a dict of attributes.
The store's edges carry nothing but their key, the edge kind, and nearly every pair has
one kind only (a memory mentions an entity, a message follows the one before), so a pair
holds one of a few shared read-only key dicts, ``{kind: <no attributes>}``, and gets a
dict of its own only when a second kind links it. That saves about 250 bytes an edge.

The shared dicts refuse to change: networkx's own ``add_edge``/``remove_edge`` on a pair
that holds one raise ``TypeError`` rather than change every pair at once, so the graph
links and unlinks through [`link`][memtrellis.store._edges.link] and
[`unlink`][memtrellis.store._edges.unlink]. Reading is plain networkx.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from memtrellis.types import EdgeKind

__all__ = ["NO_ATTRIBUTES", "link", "no_attributes", "unlink"]


class _ReadOnly(dict[str, Any]):
    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("shared by many edges of the memory graph: it cannot change")

    def update(self, *args: Any, **kwargs: Any) -> None:
        if any(args) or kwargs:
            self._refuse()

    __setitem__ = __delitem__ = setdefault = pop = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]


#: The attribute dict of every edge: empty, and one for all of them.
NO_ATTRIBUTES: dict[str, Any] = _ReadOnly()
_ONE_KIND: dict[str, dict[str, dict[str, Any]]] = {
    kind.value: _ReadOnly({kind.value: NO_ATTRIBUTES}) for kind in EdgeKind
}
_clear_cache = getattr(nx, "_clear_cache", lambda graph: None)


def no_attributes() -> dict[str, Any]:
    """The graph's ``edge_attr_dict_factory``: the one shared empty attribute dict.

    Examples:
        >>> no_attributes() is no_attributes(), no_attributes()
        (True, {})
    """
    return NO_ATTRIBUTES


def _keys(kinds: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    # The shared dict for a single kind, else a dict of the pair's own.
    if len(kinds) == 1:
        [kind] = kinds
        shared = _ONE_KIND.get(kind)
        if shared is not None:
            return shared
    return {kind: NO_ATTRIBUTES for kind in kinds}


def link(graph: nx.MultiDiGraph, source: str, target: str, key: str) -> None:
    """Add the edge ``source -> target`` of kind ``key`` (idempotent; both nodes exist).

    Examples:
        >>> g = nx.MultiDiGraph()
        >>> g.add_nodes_from(["m2", "m1"])
        >>> link(g, "m2", "m1", "follows"); link(g, "m2", "m1", "supports")
        >>> sorted(g.edges(keys=True)), g.has_edge("m2", "m1", key="follows")
        ([('m2', 'm1', 'follows'), ('m2', 'm1', 'supports')], True)
    """
    successors = graph._succ[source]
    kinds = successors.get(target)
    if kinds is not None and key in kinds:
        return
    kinds = _keys({**kinds, key: NO_ATTRIBUTES} if kinds else {key: NO_ATTRIBUTES})
    successors[target] = kinds
    graph._pred[target][source] = kinds
    _clear_cache(graph)


def unlink(graph: nx.MultiDiGraph, source: str, target: str, key: str) -> None:
    """Remove the edge ``source -> target`` of kind ``key`` (no-op when absent).

    Examples:
        >>> g = nx.MultiDiGraph()
        >>> g.add_nodes_from(["m2", "m1"])
        >>> link(g, "m2", "m1", "follows"); unlink(g, "m2", "m1", "follows")
        >>> g.number_of_edges(), g.has_node("m1")
        (0, True)
    """
    kinds = graph._succ[source].get(target)
    if kinds is None or key not in kinds:
        return
    if len(kinds) == 1:
        del graph._succ[source][target]
        del graph._pred[target][source]
    else:
        rest = _keys({kind: data for kind, data in kinds.items() if kind != key})
        graph._succ[source][target] = rest
        graph._pred[target][source] = rest
    _clear_cache(graph)
