"""The :class:`Memory` facade: the one object every adapter and user talks to.

Example:
    >>> import tempfile
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> with Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder()) as memory:
    ...     _ = memory.add("Alice's cat is called Miso")
    ...     memory.recall("what is the cat called?").items[0].memory.text
    "Alice's cat is called Miso"
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from memtrellis._ingest import items_from_input
from memtrellis.embeddings.base import Embedder, as_embedder
from memtrellis.errors import InvalidInputError, MemoryNotFoundError
from memtrellis.recall import RecallRequest, hybrid_recall
from memtrellis.store import EmbedderInfo, Store
from memtrellis.types import (
    Health,
    HistoryEvent,
    MemoryItem,
    MemoryType,
    RecallResult,
    Scope,
    utcnow,
)

__all__ = ["Memory", "default_store_path"]

log = logging.getLogger("memtrellis")

P = ParamSpec("P")
R = TypeVar("R")

_LIST_FILTERS = frozenset(
    {"memory_type", "tags", "key", "include_superseded", "include_expired", "session_id"}
)


def default_store_path() -> Path:
    """``$MEMTRELLIS_HOME`` when set, else ``./.memtrellis``."""
    return Path(os.environ.get("MEMTRELLIS_HOME") or ".memtrellis")


def _in_thread(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[Memory, P], Coroutine[Any, Any, R]]:
    """The async twin of a sync method: same logic, run off the event loop."""

    async def wrapper(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = f"a{method.__name__}"
    wrapper.__doc__ = f"Async form of :meth:`{method.__name__}` (runs in a worker thread)."
    return wrapper


class Memory:
    """Long-term memory on one store directory, shared by every adapter.

    Args:
        path: Store directory; default ``$MEMTRELLIS_HOME`` or ``./.memtrellis``.
        entity_id: Whose memory calls refer to when they do not say (default ``"default"``).
        process_id: Which app or agent writes; recall and list filter by it when set.
        session_id: Session recorded on new memories; recall filters by session only
            when a call passes ``session_id=`` itself, so memory spans sessions.
        embedder: Any :class:`~memtrellis.embeddings.Embedder`, LangChain ``Embeddings``,
            LlamaIndex ``BaseEmbedding`` or Chroma embedding function; default the
            offline all-MiniLM-L6-v2 int8 ONNX model.
        chroma_url: Use a Chroma server (``http://host:port``) instead of the embedded
            index, for several processes or machines.
        lock_timeout: Seconds to wait for another process's write before giving up.

    Example:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> [m.memory_type.value for m in memory.add({"role": "user", "content": "Hi"})]
        ['episode']
        >>> memory.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        entity_id: str = "default",
        process_id: str | None = None,
        session_id: str | None = None,
        embedder: Embedder | Any | None = None,
        chroma_url: str | None = None,
        lock_timeout: float = 60.0,
    ) -> None:
        self.default_scope = self._make_scope(entity_id, process_id, session_id)
        if embedder is None:
            from memtrellis.embeddings import default_embedder

            self.embedder: Embedder = default_embedder()
        else:
            self.embedder = as_embedder(embedder)
        self.path = Path(path) if path is not None else default_store_path()
        self._store = Store(
            self.path,
            embedder=EmbedderInfo(
                model_id=self.embedder.model_id, dimension=self.embedder.dimension
            ),
            embed=lambda texts: self.embedder.embed_documents(texts),
            chroma_url=chroma_url,
            lock_timeout=lock_timeout,
        )
        self._stats_lock = threading.Lock()
        self._latencies: deque[float] = deque(maxlen=2048)
        self._recalls = 0
        self._latency_total = 0.0
        self._skipped = 0

    # -- scope ---------------------------------------------------------------------------
    @staticmethod
    def _make_scope(entity_id: Any, process_id: Any, session_id: Any) -> Scope:
        for name, value in (
            ("entity_id", entity_id),
            ("process_id", process_id),
            ("session_id", session_id),
        ):
            if value is not None and not isinstance(value, str):
                raise InvalidInputError(f"{name} must be a string, not {type(value).__name__}")
        try:
            return Scope(entity_id=entity_id, process_id=process_id, session_id=session_id)
        except ValueError as exc:
            raise InvalidInputError(f"invalid scope: {exc}") from exc

    def _scope(
        self, entity_id: str | None, process_id: str | None, session_id: str | None
    ) -> Scope:
        base = self.default_scope
        return self._make_scope(
            entity_id if entity_id is not None else base.entity_id,
            process_id if process_id is not None else base.process_id,
            session_id if session_id is not None else base.session_id,
        )

    def _visible(self, memory_id: Any, entity_id: str | None) -> MemoryItem:
        if not isinstance(memory_id, str):
            raise InvalidInputError(f"a memory id is a string, not {type(memory_id).__name__}")
        tenant = self._scope(entity_id, None, None).entity_id
        self._store.refresh()
        item = self._store.graph.item(memory_id)
        if item is None or item.scope.entity_id != tenant:
            raise MemoryNotFoundError(memory_id)
        return item

    # -- writing -------------------------------------------------------------------------
    def add(
        self,
        data: str | Mapping[str, Any] | Sequence[Mapping[str, Any] | str],
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        memory_type: MemoryType | str | None = None,
        tags: Sequence[str] = (),
        entities: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Remember text or chat messages; returns the stored items.

        ``data`` is plain text, one message dict (``role``, ``content``, optional ``id``,
        ``timestamp``, ``name``/``speaker``) or a list of them. Messages with an unknown
        role or no text are skipped and counted in :meth:`health`.

        Example:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> [item] = m.add([{"role": "user", "content": "I moved to Lyon", "id": "m1"}])
            >>> item.sources[0].message_id
            'm1'
            >>> m.close()
        """
        scope = self._scope(entity_id, process_id, session_id)
        try:
            kind = MemoryType(memory_type) if memory_type is not None else None
        except ValueError as exc:
            raise InvalidInputError(f"unknown memory_type {memory_type!r}") from exc
        batch = items_from_input(
            data, scope, memory_type=kind, tags=tags, entities=entities, metadata=metadata
        )
        if batch.skipped:
            with self._stats_lock:
                self._skipped += batch.skipped
        if not batch.items:
            return []
        embeddings = self.embedder.embed_documents([item.text for item in batch.items])
        self._store.put(batch.items, embeddings, "created")
        return [item.detached() for item in batch.items]

    def store(self, item: MemoryItem) -> MemoryItem:
        """Store a ready-made item as it is (its own scope and id); replaces one with its id.

        Example:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> from memtrellis.types import Scope
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> m.store(MemoryItem(id="f1", text="Bob is vegan", scope=Scope(entity_id="bob"))).id
            'f1'
            >>> m.close()
        """
        if not isinstance(item, MemoryItem):
            raise InvalidInputError(f"store() takes a MemoryItem, not {type(item).__name__}")
        item = MemoryItem.model_validate(item.model_dump())
        self._store.refresh()
        existing = self._store.graph.item(item.id)
        if existing is not None and existing.scope.entity_id != item.scope.entity_id:
            raise InvalidInputError(f"memory id {item.id!r} is already in use")
        [embedding] = self.embedder.embed_documents([item.text])
        self._store.put([item], [embedding], "updated" if existing else "created")
        return item.detached()

    def update(
        self,
        memory_id: str,
        *,
        entity_id: str | None = None,
        text: str | None = None,
        key: str | None = None,
        memory_type: MemoryType | str | None = None,
        tags: Sequence[str] | None = None,
        entities: Sequence[str] | None = None,
        confidence: float | None = None,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryItem:
        """Change fields of a memory; fields left ``None`` keep their value.

        The text is re-embedded only when it changes; the change is kept in
        :meth:`history`.
        """
        changes: dict[str, Any] = {
            name: value
            for name, value in (
                ("text", text),
                ("key", key),
                ("memory_type", memory_type),
                ("tags", tags),
                ("entities", entities),
                ("confidence", confidence),
                ("valid_from", valid_from),
                ("valid_until", valid_until),
                ("metadata", metadata),
            )
            if value is not None
        }
        current = self._visible(memory_id, entity_id)
        data = current.model_dump()
        data.update(changes)
        data["updated_at"] = utcnow()
        try:
            updated = MemoryItem.model_validate(data)
        except ValueError as exc:
            raise InvalidInputError(f"invalid update of {memory_id}: {exc}") from exc
        text_changed = updated.text != current.text
        embeddings = self.embedder.embed_documents([updated.text]) if text_changed else None
        self._store.put([updated], embeddings, "updated", {"fields": sorted(changes)})
        return updated.detached()

    def forget(self, memory_id: str | None = None, *, entity_id: str | None = None) -> int:
        """Delete one memory, or with ``entity_id=`` alone every memory of that entity.

        Returns how many memories were removed from graph and index.
        """
        if memory_id is not None:
            item = self._visible(memory_id, entity_id)
            self._store.delete(item.scope.entity_id, [item.id])
            return 1
        if entity_id is None:
            raise InvalidInputError("forget() needs a memory id, or entity_id= to forget an entity")
        tenant = self._scope(entity_id, None, None).entity_id
        self._store.refresh()
        count = len(self._store.graph.tenant_ids(tenant))
        self._store.drop_entity(tenant)
        return count

    # -- reading -------------------------------------------------------------------------
    def get(self, memory_id: str, *, entity_id: str | None = None) -> MemoryItem:
        """One memory by id; :class:`MemoryNotFoundError` when it is not in this entity."""
        return self._visible(memory_id, entity_id).detached()

    def history(self, memory_id: str, *, entity_id: str | None = None) -> list[HistoryEvent]:
        """What happened to a memory: created, updated, superseded..."""
        self._visible(memory_id, entity_id)
        return self._store.graph.history(memory_id)

    def list(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        filters: Mapping[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Memories of one entity, oldest first, with paging.

        ``filters`` keys: ``memory_type`` (one or several), ``tags`` (any of),
        ``key``, ``include_superseded`` and ``include_expired`` (both default true).
        """
        if not isinstance(limit, int) or not isinstance(offset, int) or limit < 0 or offset < 0:
            raise InvalidInputError("limit and offset must be non-negative integers")
        filters = dict(filters or {})
        unknown = set(filters) - _LIST_FILTERS
        if unknown:
            raise InvalidInputError(
                f"unknown filters {sorted(unknown)}; known: {sorted(_LIST_FILTERS)}"
            )
        scope = self._scope(entity_id, process_id, None)
        session = session_id or filters.get("session_id")
        types = filters.get("memory_type")
        wanted_types = {MemoryType(t) for t in ([types] if isinstance(types, str) else types or [])}
        wanted_tags = set(filters.get("tags") or [])
        now = utcnow()
        self._store.refresh()
        with self._store.reading():
            chosen = [
                item
                for item in self._store.graph.items(scope.entity_id)
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
            chosen.sort(key=lambda i: (i.created_at, i.id))
            return [i.detached() for i in chosen[offset : offset + limit]]

    def recall(
        self,
        query: str,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int = 10,
        token_budget: int | None = None,
        include_superseded: bool = False,
        include_expired: bool = False,
        as_of: datetime | None = None,
    ) -> RecallResult:
        """The memories most relevant to ``query``, each with an explanation.

        Dense (Chroma) and keyword (BM25) results are fused by reciprocal rank and
        expanded one hop over shared entities. Expired and superseded memories are left
        out unless asked for. ``token_budget`` (tiktoken ``o200k_base``) stops the list
        before its rendered lines would exceed the budget.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("recall() needs a non-empty query string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInputError("k must be an integer from 1 to 1000")
        if token_budget is not None and (not isinstance(token_budget, int) or token_budget < 0):
            raise InvalidInputError("token_budget must be a non-negative integer or None")
        started = time.perf_counter()
        scope = self._scope(entity_id, process_id, None)
        self._store.refresh()
        request = RecallRequest(
            query=query,
            embedding=self.embedder.embed_query(query),
            entity_id=scope.entity_id,
            process_id=scope.process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            include_superseded=include_superseded,
            include_expired=include_expired,
            now=as_of or utcnow(),
        )
        items, tokens, truncated = hybrid_recall(self._store, request)
        if items:
            self._store.touch([r.memory.id for r in items], utcnow())
        latency = (time.perf_counter() - started) * 1000.0
        with self._stats_lock:
            self._recalls += 1
            self._latency_total += latency
            self._latencies.append(latency)
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
        )

    def health(self) -> Health:
        """Counts, edges by kind, recall latency since open and size on disk."""
        self._store.refresh()
        now = utcnow()
        store = self._store
        with store.reading():
            items = list(store.graph.items())
            expired = sum(1 for i in items if i.valid_until is not None and i.valid_until <= now)
            superseded = sum(1 for i in items if i.superseded_by is not None)
            active = sum(
                1
                for i in items
                if i.superseded_by is None and (i.valid_until is None or i.valid_until > now)
            )
            entities = store.graph.entity_count()
            edges = store.graph.edge_counts()
            tenants = len(store.graph.tenants())
            pending = store.pending_count
        with self._stats_lock:
            ordered = sorted(self._latencies)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0
            average = self._latency_total / self._recalls if self._recalls else 0.0
            recalls, skipped = self._recalls, self._skipped
        return Health(
            path=str(self.path.resolve()),
            vector_backend=store.vectors.mode,
            embedder_model_id=self.embedder.model_id,
            embedder_dimension=self.embedder.dimension,
            total_memories=len(items),
            active_memories=active,
            expired=expired,
            superseded=superseded,
            entities=entities,
            tenants=tenants,
            edges_by_kind=edges,
            recalls=recalls,
            recall_latency_avg_ms=round(average, 3),
            recall_latency_p95_ms=round(p95, 3),
            skipped_inputs=skipped,
            pending_index_writes=pending,
            repaired_on_open=len(store.repair.rolled_forward) + store.repair.torn_records,
            size_on_disk_bytes=store.disk_usage(),
        )

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def repair_report(self) -> Any:
        """What opening the store repaired (see :class:`memtrellis.store.RepairReport`)."""
        return self._store.repair

    def close(self) -> None:
        """Flush and release the store. Safe to call twice."""
        self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    aadd = _in_thread(add)
    astore = _in_thread(store)
    aupdate = _in_thread(update)
    aforget = _in_thread(forget)
    aget = _in_thread(get)
    ahistory = _in_thread(history)
    alist = _in_thread(list)
    arecall = _in_thread(recall)
    ahealth = _in_thread(health)
    aclose = _in_thread(close)
