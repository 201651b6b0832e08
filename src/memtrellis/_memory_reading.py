"""How the [`Memory`][memtrellis.Memory] facade reads: one memory, its supersession chain, a
filtered page of memories, recall and health.

Plain functions of the ``Memory`` they serve; the facade's methods check their arguments
and call them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memtrellis._health import store_figures
from memtrellis._memory_args import make_scope
from memtrellis.errors import InvalidInputError, MemoryNotFoundError
from memtrellis.recall import RecallRequest, hybrid_recall
from memtrellis.types import EdgeKind, Health, MemoryItem, MemoryType, RecallResult, Scope, utcnow

if TYPE_CHECKING:
    from memtrellis.memory import Memory


def visible(memory: Memory, memory_id: Any, entity_id: str | None) -> MemoryItem:
    """The live memory ``memory_id`` if it is the entity's, else not found."""
    if not isinstance(memory_id, str):
        raise InvalidInputError(f"a memory id is a string, not {type(memory_id).__name__}")
    tenant = memory._scope(entity_id, None, None).entity_id
    memory._store.refresh(tenant)
    item = memory._store.graph_of(tenant).item(memory_id)
    if item is None or item.scope.entity_id != tenant:
        raise MemoryNotFoundError(memory_id)
    return item


def versions(memory: Memory, memory_id: str, tenant: str) -> list[MemoryItem]:
    """The supersession chain through a visible memory of ``tenant``, oldest first."""
    with memory._store.reading(tenant) as shard:
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


def list_items(
    memory: Memory,
    scope: Scope,
    session_id: str | None,
    filters: Mapping[str, Any],
    limit: int,
    offset: int,
) -> list[MemoryItem]:
    """A page of one entity's memories that pass ``filters`` (checked), in stored order."""
    session = session_id or filters.get("session_id")
    types = filters.get("memory_type")
    wanted_types = {MemoryType(t) for t in ([types] if isinstance(types, str) else types or [])}
    wanted_tags = set(filters.get("tags") or [])
    now = utcnow()
    memory._store.refresh(scope.entity_id)
    with memory._store.reading(scope.entity_id) as shard:
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
            )
        ]
        return [i.detached() for i in chosen[offset : offset + limit]]


def recall(
    memory: Memory,
    query: str,
    *,
    entity_id: str | None,
    process_id: str | None,
    session_id: str | None,
    k: int,
    token_budget: int | None,
    include_superseded: bool,
    include_expired: bool,
    as_of: datetime | None,
    graph_context: bool,
    memory_types: frozenset[MemoryType] | None = None,
    tags: frozenset[str] | None = None,
) -> RecallResult:
    """Hybrid recall with checked arguments, its latency recorded."""
    started = time.perf_counter()
    scope = memory._scope(entity_id, process_id, None)
    if session_id is not None:  # a filter here, but it must be a valid scope id
        make_scope(scope.entity_id, None, session_id)
    memory._store.refresh(scope.entity_id)
    request = RecallRequest(
        query=query,
        embedding=memory.embedder.embed_query(query),
        entity_id=scope.entity_id,
        process_id=scope.process_id,
        session_id=session_id,
        k=k,
        token_budget=token_budget,
        include_superseded=include_superseded,
        include_expired=include_expired,
        now=as_of or utcnow(),
        graph_context=graph_context,
        lifecycle=memory.lifecycle,
        memory_types=memory_types,
        tags=tags,
    )
    items, tokens, truncated, skipped = hybrid_recall(memory._store, request)
    if items:
        memory._store.touch(scope.entity_id, [r.memory.id for r in items], utcnow())
    latency = (time.perf_counter() - started) * 1000.0
    memory._stats.record_recall(latency)
    return RecallResult(
        query=query,
        scope=Scope(entity_id=scope.entity_id, process_id=scope.process_id, session_id=session_id),
        items=items,
        tokens=tokens,
        token_budget=token_budget,
        truncated=truncated,
        latency_ms=round(latency, 3),
        skipped=skipped,
        as_of=as_of,
    )


def health(memory: Memory) -> Health:
    """Counts, edges, latency, capture queue and disk size of one open ``Memory``."""
    memory._store.check_open()
    capture = memory._capture.stats
    failures = memory.extractor.failures
    return Health(
        path=str(memory.path.resolve()),
        embedder_model_id=memory.embedder.model_id,
        embedder_dimension=memory.embedder.dimension,
        capture_queue_depth=memory._capture.depth,
        capture_spooled=memory._capture.spool.open_entries,
        capture_retries=capture.retries,
        capture_failures=capture.failures,
        llm_failures=memory.extractor.llm_failures,
        extraction_timeouts=failures.timeouts,
        extraction_errors=failures.errors,
        extraction_garbage=failures.garbage,
        extraction_retries=failures.retries + capture.extraction_retries,
        relation_judge_failures=memory._judge.failures if memory._judge is not None else 0,
        **store_figures(memory._store),
        **memory._stats.figures(),
    )
