"""How two things an entity's memories speak of are related: paths through the graph.

``relate(a, b)`` answers "how are Hana and Kyoto related?" from the graph alone, without
an LLM. ``a`` and ``b`` are each a memory id or a name the memories mention (a subject of
the graph, matched fuzzily with rapidfuzz, so "hana" and "Hana S." find "Hana"; Chinese
names match character by character). A path walks between memories and the subjects they
mention, and along the typed edges between memories:

- ``mentions``: a memory names a subject;
- ``supports``, ``extends``, ``contradicts``, ``supersedes``: what the lifecycle recorded
  between two memories.

``follows`` (the next message of a conversation) is left out: being said one after the
other relates two memories only loosely, and it would connect almost everything. Subjects
that more than `HUB_MENTIONS` memories mention (the user's own name, say) are not walked
through, as in recall: they relate everything to everything; they can still be ``a`` or
``b``. Memories that are superseded or outside their validity at ``now`` are left out
unless asked for, as in recall.

Paths are ranked by the confidence of what they rest on: the product of their memories'
effective confidences (`memtrellis.lifecycle.confidence`), times 0.8 for each memory after
the first, so a short, well-supported path comes first. The search is bounded (at most
`MAX_HOPS` edges, `SEARCH_BUDGET` steps), so its cost follows the two names' neighbourhood,
not the size of the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from rapidfuzz import fuzz, process

from memtrellis.lifecycle.confidence import effective_confidence
from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.relations import PathStep, RelationPath, Relations
from memtrellis.store.graph import (
    HUB_MENTIONS,
    SUBJECT_NODE_PREFIX,
    MemoryGraph,
    normalize_subject,
    subject_node_id,
)
from memtrellis.types import EdgeKind, MemoryItem

__all__ = ["MAX_HOPS", "relate_in", "route_path"]

#: Longest path searched, in edges (Hana -> memory -> Kenji -> memory -> Kyoto is 4).
MAX_HOPS = 6
#: Nodes the search may expand in one call, whatever the graph holds.
SEARCH_BUDGET = 20_000
#: How close a name must be to a subject's (rapidfuzz WRatio, 0-100) to stand for it.
NAME_MATCH = 85.0
#: Each memory after the first on a path weighs this much less.
HOP_FACTOR = 0.8
#: The edges walked; where two memories have several, a path shows the first listed.
_WALKED = tuple(
    k.value
    for k in (
        EdgeKind.SUPERSEDES,
        EdgeKind.CONTRADICTS,
        EdgeKind.EXTENDS,
        EdgeKind.SUPPORTS,
        EdgeKind.MENTIONS,
    )
)


def _resolve(graph: MemoryGraph, entity_id: str, name: str) -> tuple[str, str] | None:
    """``(node, label)`` of a memory id or a subject name of ``entity_id``, or ``None``."""
    item = graph.item(name)
    if item is not None and item.scope.entity_id == entity_id:
        return name, name
    subjects = graph.subject_names(entity_id)  # normalised -> display
    wanted = normalize_subject(name)
    if wanted in subjects:
        return subject_node_id(entity_id, wanted), subjects[wanted]
    if not wanted or not subjects:
        return None
    found = process.extractOne(wanted, list(subjects), scorer=fuzz.WRatio, score_cutoff=NAME_MATCH)
    if found is None:
        return None
    return subject_node_id(entity_id, found[0]), subjects[found[0]]


def _usable(
    graph: MemoryGraph, node: str, entity_id: str, process_id: str | None, now: datetime,
    include_superseded: bool,
) -> MemoryItem | None:  # fmt: skip
    item = graph.item(node)
    if item is None or item.scope.entity_id != entity_id:
        return None
    if process_id is not None and item.scope.process_id != process_id:
        return None
    if item.invalid_reason(now, include_superseded=include_superseded) is not None:
        return None
    return item


def _neighbours(graph: MemoryGraph, node: str) -> Iterator[tuple[str, str, bool]]:
    """``(other node, edge kind, forward)`` over the walked edges, both directions."""
    g = graph.g
    for other, keys in g._succ.get(node, {}).items():
        for kind in _WALKED:
            if kind in keys:
                yield other, kind, True
    for other, keys in g._pred.get(node, {}).items():
        for kind in _WALKED:
            if kind in keys:
                yield other, kind, False


def relate_in(
    graph: MemoryGraph,
    entity_id: str,
    a: str,
    b: str,
    *,
    now: datetime,
    config: LifecycleConfig,
    process_id: str | None = None,
    max_hops: int = 4,
    limit: int = 5,
    include_superseded: bool = False,
) -> Relations:
    """The paths between ``a`` and ``b`` in one entity's memories, best first.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from memtrellis import MemoryItem, Scope
        >>> graph = MemoryGraph()
        >>> scope = Scope(entity_id="me")
        >>> graph.put(MemoryItem(text="Hana moved to Kyoto.", scope=scope,
        ...                      entities=["Hana", "Kyoto"]))
        >>> found = relate_in(graph, "me", "hana", "Kyoto",
        ...                   now=datetime.now(timezone.utc), config=LifecycleConfig())
        >>> found.paths[0].describe()
        'Hana -mentions- [Hana moved to Kyoto.] -mentions- Kyoto'
    """
    start, end = _resolve(graph, entity_id, a), _resolve(graph, entity_id, b)
    result = Relations(
        a=a,
        b=b,
        a_resolved=start[1] if start else None,
        b_resolved=end[1] if end else None,
        paths=[],
    )
    if start is None or end is None or start[0] == end[0]:
        return result
    labels = {start[0]: start[1], end[0]: end[1]}

    def usable(node: str) -> MemoryItem | None:
        return _usable(graph, node, entity_id, process_id, now, include_superseded)

    for node in (start[0], end[0]):
        if not node.startswith(SUBJECT_NODE_PREFIX) and usable(node) is None:
            return result  # a memory asked about that recall would not show
    found: list[tuple[float, list[tuple[str, str | None, bool | None]]]] = []
    budget = [SEARCH_BUDGET]
    hops = max(1, min(max_hops, MAX_HOPS))

    def walk(node: str, path: list[tuple[str, str | None, bool | None]], seen: set[str]) -> None:
        if budget[0] <= 0 or len(found) >= 50 * limit:
            return
        budget[0] -= 1
        for other, kind, forward in _neighbours(graph, node):
            if other in seen:
                continue
            step = [*path[:-1], (path[-1][0], kind, forward), (other, None, None)]
            if other == end[0]:
                found.append((_confidence(graph, step, now, config), step))
                continue
            if len(step) - 1 >= hops:
                continue
            if other.startswith(SUBJECT_NODE_PREFIX):
                if len(graph.g._pred.get(other, ())) > HUB_MENTIONS:
                    continue  # a hub relates everything: not walked through
            elif usable(other) is None:
                continue
            walk(other, step, seen | {other})

    walk(start[0], [(start[0], None, None)], {start[0]})
    best: dict[frozenset[str], tuple[float, list[tuple[str, str | None, bool | None]]]] = {}
    for confidence, step in found:
        key = frozenset(n for n, _, _ in step)
        if key not in best or best[key][0] < confidence:
            best[key] = (confidence, step)
    ranked = sorted(best.values(), key=lambda pair: (-pair[0], len(pair[1])))[:limit]
    result.paths = [_path(graph, step, confidence, labels) for confidence, step in ranked]
    return result


def _confidence(
    graph: MemoryGraph,
    step: Sequence[tuple[str, str | None, bool | None]],
    now: datetime,
    config: LifecycleConfig,
) -> float:
    value, memories = 1.0, 0
    for node, _, _ in step:
        item = graph.item(node)
        if item is None:
            continue
        supports = graph.count_into(node, EdgeKind.SUPPORTS)
        value *= effective_confidence(item, supports, now, config)[0]
        memories += 1
    return round(min(1.0, value * HOP_FACTOR ** max(0, memories - 1)), 4)


def route_path(
    graph: MemoryGraph,
    route: Sequence[tuple[str, str | None, bool | None]],
    now: datetime,
    config: LifecycleConfig,
) -> RelationPath:
    """The path recall took to a memory, as `relate` shows paths: ``route`` is its steps
    ``(node, kind of the edge to the next, forward)``; memory steps carry their id and
    text only (the memory itself is the recalled one, or a `get` away).

    Examples:
        >>> from datetime import datetime, timezone
        >>> from memtrellis import MemoryItem, Scope
        >>> graph = MemoryGraph()
        >>> item = MemoryItem(text="Kenji lives in Kyoto.", scope=Scope(entity_id="me"),
        ...                   entities=["Kyoto"])
        >>> graph.put(item)
        >>> route = [(subject_node_id("me", "Kyoto"), "mentions", False), (item.id, None, None)]
        >>> route_path(graph, route, datetime.now(timezone.utc), LifecycleConfig()).describe()
        'Kyoto -mentions- [Kenji lives in Kyoto.]'
    """
    confidence = _confidence(graph, route, now, config)
    return _path(graph, route, confidence, {}, with_memories=False)


def _path(
    graph: MemoryGraph,
    step: Sequence[tuple[str, str | None, bool | None]],
    confidence: float,
    labels: dict[str, str],
    *,
    with_memories: bool = True,
) -> RelationPath:
    steps: list[PathStep] = []
    for node, kind, forward in step:
        item = graph.item(node)
        if item is not None:
            steps.append(
                PathStep(
                    kind="memory",
                    id=node,
                    text=item.text,
                    memory=item.detached() if with_memories else None,
                    edge=kind,
                    forward=forward,
                )
            )
        else:
            name = labels.get(node) or _subject_label(graph, node)
            steps.append(PathStep(kind="subject", id=name, text=name, edge=kind, forward=forward))
    return RelationPath(steps=steps, confidence=confidence)


def _subject_label(graph: MemoryGraph, node: str) -> str:
    data = graph.g.nodes.get(node, {})
    name = data.get("name")
    return str(name) if name else node.rsplit(":", 1)[-1]
