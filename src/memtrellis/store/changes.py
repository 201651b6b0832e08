"""What a write to a shard is: `Change`s of items and edges, and the log records they
become (one ``put`` per history event of an item, one ``edge`` per edge)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memtrellis.store.graph import MemoryGraph
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem

__all__ = ["Change", "change_records", "superseded_records"]


@dataclass(frozen=True)
class Change:
    """One item to store: its new state, its vector (``None``: text unchanged), the event.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> Change(item, embedding=None, action="updated").detail
        {}
    """

    item: MemoryItem
    embedding: Sequence[float] | None
    action: str
    detail: dict[str, Any] = field(default_factory=dict)
    #: Events recorded before ``action``, oldest first: a memory's past, when an import
    #: restores it (each is logged as a ``put`` of the item carrying that event).
    history: tuple[HistoryEvent, ...] = ()


def change_records(
    changes: Sequence[Change], edges: Sequence[tuple[str, str, EdgeKind]], at: datetime
) -> list[dict[str, Any]]:
    """The log records of ``changes`` and ``edges``, their events dated ``at``.

    Examples:
        >>> from datetime import datetime, timezone
        >>> from memtrellis import MemoryItem, Scope
        >>> item = MemoryItem(id="m1", text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> at = datetime.now(timezone.utc)
        >>> records = change_records([Change(item, None, "updated")], [], at)
        >>> [(r["op"], r["item"]["id"], r["reembed"]) for r in records]
        [('put', 'm1', False)]
    """
    records: list[dict[str, Any]] = []
    for change in changes:
        item = change.item.model_dump(mode="json")
        reembed = change.embedding is not None
        event = HistoryEvent(at=at, action=change.action, detail=change.detail)
        for past in (*change.history, event):
            records.append(
                {
                    "op": "put",
                    "item": item,
                    "event": past.model_dump(mode="json"),
                    "reembed": reembed,
                }
            )
    records.extend(
        {"op": "edge", "src": src, "dst": dst, "kind": kind.value} for src, dst, kind in edges
    )
    return records


def superseded_records(
    graph: MemoryGraph, replaced: dict[str, str], at: datetime
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The records that mark each ``old id -> new id`` of ``graph`` superseded, with a
    ``supersedes`` edge new -> old, and the ids they need (pairs of which either is gone
    are left out).

    Examples:
        >>> from datetime import datetime, timezone
        >>> from memtrellis import MemoryItem, Scope
        >>> graph = MemoryGraph()
        >>> for n in ("m1", "m2"):
        ...     graph.put(MemoryItem(id=n, text=f"note {n}", scope=Scope(entity_id="ana")))
        >>> records, needed = superseded_records(graph, {"m1": "m2", "m3": "m2"},
        ...                                      datetime.now(timezone.utc))
        >>> [r["op"] for r in records], needed
        (['put', 'edge'], ('m1', 'm2'))
    """
    records: list[dict[str, Any]] = []
    needed: list[str] = []
    for old_id, new_id in replaced.items():
        old = graph.item(old_id)
        if old is None or new_id not in graph:
            continue
        needed.extend((old_id, new_id))
        event = HistoryEvent(at=at, action="superseded", detail={"by": new_id})
        item = old.model_copy(update={"superseded_by": new_id}).model_dump(mode="json")
        records.append(
            {"op": "put", "item": item, "event": event.model_dump(mode="json"), "reembed": False}
        )
        records.append(
            {"op": "edge", "src": new_id, "dst": old_id, "kind": EdgeKind.SUPERSEDES.value}
        )
    return records, tuple(needed)
