"""Which memories one recall may show: scope, filters, validity and replaced turns.

A memory is left out of a recall when it belongs to another scope (entity, process,
session), fails the type and tag filters, or is not valid at recall's ``now``
(`MemoryItem.invalid_reason`: not yet valid, expired, superseded) unless asked for. A
conversation turn is never ``superseded_by``: turns stay as they were said, and the
lifecycle links a turn to an earlier one-claim turn it makes out of date with a
``supersedes`` edge (`memtrellis.lifecycle.turns`), which counts from the newer turn's
time on; unless superseded memories are asked for, such a turn is left out too.

`Visibility` checks each memory once per recall and keeps why it was left out (the
hits left out as out of date are reported). It reads the graph's node and adjacency
dicts directly: recall checks some hundreds of search hits, and the graph's views cost
more than the checks.
"""

from __future__ import annotations

from memtrellis.recall.request import RecallRequest
from memtrellis.store import MemoryGraph
from memtrellis.types import EdgeKind, MemoryItem, MemoryType

__all__ = ["SCOPE", "Visibility", "hidden"]

#: Why a memory of another scope (or filtered out) is left out; never reported.
SCOPE = "scope"
_SUPERSEDES = EdgeKind.SUPERSEDES.value
_MEMORY = "memory"


def hidden(item: MemoryItem | None, req: RecallRequest) -> str | None:
    """Why ``item`` is left out of this recall, or ``None`` when it is visible (the
    replaced-turn check aside: see `Visibility`)."""
    if item is None or item.scope.entity_id != req.entity_id:
        return SCOPE
    if req.process_id is not None and item.scope.process_id != req.process_id:
        return SCOPE
    if req.session_id is not None and item.scope.session_id != req.session_id:
        return SCOPE
    if req.filtered and not req.wanted(item):
        return SCOPE
    # The validity rule is the item's own (MemoryItem.invalid_reason), shared with
    # MemoryItem.is_valid_at.
    return item.invalid_reason(
        req.now,
        include_expired=req.include_expired,
        include_superseded=req.include_superseded,
    )


class Visibility:
    """The visibility of memories in one recall, each checked once: call it with a
    memory id for whether it is visible.

    ``seen`` maps each memory checked to why it is left out (``None``: visible);
    ``turns`` maps each turn left out as replaced to the newer turn that replaces it.
    """

    __slots__ = ("_nodes", "_plain", "_pred", "_req", "seen", "turns")

    def __init__(self, graph: MemoryGraph, req: RecallRequest) -> None:
        self._nodes = graph.g._node
        self._pred = graph.g._pred
        self._req = req
        # Neither process, session nor filters narrow it: the entity and validity decide.
        self._plain = req.process_id is None and req.session_id is None and not req.filtered
        self.seen: dict[str, str | None] = {}
        self.turns: dict[str, str] = {}

    def __call__(self, memory_id: str) -> bool:
        seen = self.seen
        if memory_id in seen:
            return seen[memory_id] is None
        return self._check(memory_id) is None

    def _check(self, memory_id: str) -> str | None:
        data = self._nodes.get(memory_id)
        item: MemoryItem | None = (
            data["item"] if data is not None and data.get("kind") == _MEMORY else None
        )
        req = self._req
        reason: str | None
        if self._plain and item is not None and item.scope.entity_id == req.entity_id:
            reason = item.invalid_reason(
                req.now,
                include_expired=req.include_expired,
                include_superseded=req.include_superseded,
            )
        else:
            reason = hidden(item, req)
        if reason is None and not req.include_superseded:
            assert item is not None
            newer = self._replaced_by(item)
            if newer is not None:
                reason = "superseded"
                self.turns[memory_id] = newer
        self.seen[memory_id] = reason
        return reason

    def _replaced_by(self, item: MemoryItem) -> str | None:
        """The first newer turn (in edge order) that supersedes this conversation turn
        at recall's ``now``, if any."""
        if item.memory_type is not MemoryType.EPISODE:
            return None
        preds: dict[str, dict[str, object]] | None = self._pred.get(item.id)
        if not preds:
            return None
        now = self._req.now
        nodes = self._nodes
        for other, keys in preds.items():
            if _SUPERSEDES not in keys:
                continue
            data = nodes.get(other)
            if data is None or data.get("kind") != _MEMORY:
                continue
            newer: MemoryItem = data["item"]
            if (newer.valid_from or newer.created_at) <= now:
                return other
        return None
