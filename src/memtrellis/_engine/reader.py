"""How a ``Memory`` reads: one memory by id, its supersession chain, a filtered page of
memories and recall. Works on the engine's `Parts`, never on the ``Memory``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from memtrellis._engine.args import checked_as_of, make_scope, recall_flags
from memtrellis._engine.parts import Parts
from memtrellis._engine.scopes import DEFAULT_ENTITY
from memtrellis.errors import InvalidInputError, MemoryNotFoundError
from memtrellis.lifecycle.heat import renewed_until
from memtrellis.recall import RecallRequest, hybrid_recall
from memtrellis.recall.hybrid import similarity_floor
from memtrellis.recall.paths import relate_in
from memtrellis.relations import Relations
from memtrellis.types import (
    EdgeKind,
    HistoryEvent,
    MemoryItem,
    MemoryType,
    RecallResult,
    Scope,
    utcnow,
)

__all__ = ["HINT_WEIGHT", "OPEN_KINDS", "Reader"]

#: Weight of a recall's ``context_hint`` beside its query (1.0) in the search embedding.
HINT_WEIGHT = 0.5
#: The kinds a memory context keeps room for while they are valid.
OPEN_KINDS = frozenset({MemoryType.DECISION, MemoryType.ACTION_ITEM})


class Reader:
    """The read side of the engine (reads catch up with other processes' writes first)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.store = parts.store

    # -- by id -------------------------------------------------------------------------
    def _in(self, tenant: str, memory_id: str) -> MemoryItem | None:
        self.store.refresh(tenant)
        item = self.store.graph_of(tenant).item(memory_id)
        return item if item is not None and item.scope.entity_id == tenant else None

    def _candidates(self) -> Iterator[str]:
        """Entities an unbound lookup tries, in an order users can predict (an id may be in
        several: ``store()`` takes any id): the default one, then the others in the order
        they were first written."""
        order = self.store.entities()
        if DEFAULT_ENTITY in order:
            yield DEFAULT_ENTITY
        yield from (tenant for tenant in order if tenant != DEFAULT_ENTITY)

    def find(self, memory_id: Any, entity_id: str | None) -> MemoryItem:
        """The live memory ``memory_id`` as a by-id call sees it (see `Scopes.by_id`)."""
        if not isinstance(memory_id, str):
            raise InvalidInputError(f"a memory id is a string, not {type(memory_id).__name__}")
        tenant = self.parts.scopes.by_id(entity_id)
        if tenant is not None:
            found = self._in(tenant, memory_id)
        else:
            found = next(
                (i for t in self._candidates() if (i := self._in(t, memory_id)) is not None), None
            )
        if found is None:
            raise MemoryNotFoundError(memory_id)
        return found

    def history(self, item: MemoryItem) -> list[HistoryEvent]:
        """What happened to a found memory, oldest first."""
        return self.store.graph_of(item.scope.entity_id).history(item.id)

    def versions(self, item: MemoryItem) -> list[MemoryItem]:
        """The supersession chain through a found memory, oldest first."""
        memory_id = item.id
        with self.store.reading(item.scope.entity_id) as shard:
            graph = shard.graph
            chain = [memory_id]
            seen = {memory_id}
            for direction in (1, 0):  # 1: what replaced it (into the edge), 0: what it replaced
                current = memory_id
                while True:
                    out, into = graph.edges_of(current, EdgeKind.SUPERSEDES)
                    step = [n for n in (into if direction else out) if n not in seen]
                    if not step:
                        break
                    current = step[0]
                    seen.add(current)
                    chain.insert(len(chain) if direction else 0, current)
            items = [graph.item(i) for i in chain]
            return [i.detached() for i in items if i is not None]

    # -- pages and recall --------------------------------------------------------------
    def list_items(
        self,
        scope: Scope,
        session_id: str | None,
        filters: Mapping[str, Any],
        limit: int,
        offset: int,
    ) -> list[MemoryItem]:
        """A page of one entity's memories that pass ``filters`` (checked), in stored order."""
        if session_id is not None:  # a filter here, but it must be a valid scope id
            make_scope(scope.entity_id, None, session_id)
        session = session_id if session_id is not None else filters.get("session_id")
        types = filters.get("memory_type")
        wanted_types = {MemoryType(t) for t in ([types] if isinstance(types, str) else types or [])}
        wanted_tags = set(filters.get("tags") or [])
        now = utcnow()
        self.store.refresh(scope.entity_id)
        with self.store.reading(scope.entity_id) as shard:
            chosen = [
                item
                for item in shard.graph.items(scope.entity_id)
                if (scope.process_id is None or item.scope.process_id == scope.process_id)
                and (session is None or item.scope.session_id == session)
                and (not wanted_types or item.memory_type in wanted_types)
                and (not wanted_tags or wanted_tags.intersection(item.tags))
                and (filters.get("key") is None or item.key == filters["key"])
                and (filters.get("include_superseded", True) or item.superseded_by is None)
                and (
                    filters.get("include_expired", True)
                    or item.valid_until is None
                    or item.valid_until > now
                    # ended by supersession, not expired: include_superseded decides (as
                    # MemoryItem.invalid_reason says for recall)
                    or item.superseded_by is not None
                )
            ]
            return [i.detached() for i in chosen[offset : offset + limit]]

    def recall(
        self,
        query: str,
        scope_args: tuple[str | None, str | None, str | None],
        k: int,
        token_budget: int | None,
        flags: tuple[bool, bool, bool],
        as_of: datetime | None,
        memory_types: frozenset[MemoryType] | None = None,
        tags: frozenset[str] | None = None,
        context_hint: str | None = None,
    ) -> RecallResult:
        """Hybrid recall with checked arguments, its latency recorded.

        ``scope_args``: the call's entity, process and session ids; ``flags``: its
        ``include_superseded``, ``include_expired`` and ``graph_context``;
        ``context_hint``: a summary of the conversation that steers the dense search.
        """
        entity_id, process_id, session_id = scope_args
        include_superseded, include_expired, graph_context = recall_flags(*flags)
        started = time.perf_counter()
        scope = self.parts.scopes.current(entity_id, process_id, None)
        if session_id is not None:  # a filter here, but it must be a valid scope id
            make_scope(scope.entity_id, None, session_id)
        self.store.refresh(scope.entity_id)
        request = RecallRequest(
            query=query,
            embedding=self._embedding(query, context_hint),
            entity_id=scope.entity_id,
            process_id=scope.process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            include_superseded=include_superseded,
            include_expired=include_expired,
            now=as_of or utcnow(),
            graph_context=graph_context,
            lifecycle=self.parts.lifecycle,
            memory_types=memory_types,
            tags=tags,
            similarity_floor=similarity_floor(self.parts.embedder),
            reranker=self.parts.reranker,
        )
        items, tokens, truncated, skipped = hybrid_recall(self.store, request)
        if items:
            moment = utcnow()
            config = self.parts.lifecycle
            until = {
                hit.memory.id: end
                for hit in items
                if (end := renewed_until(hit.memory, moment, config)) is not None
            }
            self.store.touch(scope.entity_id, [r.memory.id for r in items], moment, until)
        latency = (time.perf_counter() - started) * 1000.0
        self.parts.stats.record_recall(latency)
        return RecallResult(
            query=query,
            scope=Scope(
                entity_id=scope.entity_id, process_id=scope.process_id, session_id=session_id
            ),
            items=items,
            tokens=tokens,
            token_budget=token_budget,
            truncated=truncated,
            latency_ms=round(latency, 3),
            skipped=skipped,
            as_of=as_of,
        )

    def _embedding(self, query: str, hint: str | None) -> list[float]:
        """The query's embedding, turned towards ``hint`` when there is one.

        The hint (what the conversation is about) weighs `HINT_WEIGHT` of the query: it
        steers which of the memories that match the question come first, and cannot
        replace the question (keyword search and reranking read the question only).
        """
        embed = self.parts.embedder.embed_query
        vector = list(embed(query))
        if hint is None:
            return vector
        toward = list(embed(hint))
        size = math.sqrt(sum(v * v for v in vector)) or 1.0
        other = math.sqrt(sum(v * v for v in toward)) or 1.0
        blended = [a / size + HINT_WEIGHT * b / other for a, b in zip(vector, toward, strict=True)]
        norm = math.sqrt(sum(v * v for v in blended)) or 1.0
        return [v / norm for v in blended]

    def open_items(self, scope: Scope, limit: int, as_of: datetime | None) -> list[MemoryItem]:
        """One entity's decisions and action items valid at ``as_of`` (default: now),
        newest first: what a memory context keeps room for."""
        now = as_of or utcnow()
        self.store.refresh(scope.entity_id)
        with self.store.reading(scope.entity_id) as shard:
            found = [
                item
                for item in shard.graph.items(scope.entity_id)
                if item.memory_type in OPEN_KINDS
                and (scope.process_id is None or item.scope.process_id == scope.process_id)
                and item.invalid_reason(now) is None
            ]
            found.sort(key=lambda i: (i.valid_from or i.created_at, i.created_at), reverse=True)
            return [i.detached() for i in found[:limit]]

    def relate(
        self,
        a: Any,
        b: Any,
        scope_args: tuple[str | None, str | None],
        max_hops: int,
        limit: int,
        include_superseded: bool,
        as_of: datetime | None,
    ) -> Relations:
        """The paths between ``a`` and ``b`` (names or memory ids) in one entity's graph."""
        for name, value in (("a", a), ("b", b)):
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(f"{name} is a memory id or a name, not {value!r}")
        for name, number in (("max_hops", max_hops), ("limit", limit)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise InvalidInputError(f"{name} must be a positive integer, got {number!r}")
        when = checked_as_of(as_of) or utcnow()
        scope = self.parts.scopes.current(*scope_args, None)
        self.store.refresh(scope.entity_id)
        with self.store.reading(scope.entity_id) as shard:
            return relate_in(
                shard.graph,
                scope.entity_id,
                a.strip(),
                b.strip(),
                now=when,
                config=self.parts.lifecycle,
                process_id=scope.process_id,
                max_hops=max_hops,
                limit=limit,
                include_superseded=include_superseded,
            )
