"""The [`Memory`][memtrellis.Memory] facade: the one object every adapter and user talks to.

Examples:
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
import contextlib
import itertools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memtrellis import registry
from memtrellis._engine import Engine
from memtrellis._engine.args import (
    default_store_path,
    given,
    list_filters,
    make_scope,
    memory_type_arg,
    ready_item,
    recall_args,
    recall_filters,
    store_path,
)
from memtrellis._memory_async import in_thread as _in_thread
from memtrellis._progress import progress_arg
from memtrellis.embeddings.base import Embedder, as_embedder
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.model import Mode
from memtrellis.extraction.normalize import check_labels
from memtrellis.extraction.pipeline import ExtractionConfig, Extractor
from memtrellis.extraction.refine import RefineReport
from memtrellis.graph_export import ExportFormat
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.lifecycle.judge import llm_judge
from memtrellis.llm import LLM
from memtrellis.store import EmbedderInfo, Store
from memtrellis.store.store import DEFAULT_RESIDENT_MEMORIES, DEFAULT_RESIDENT_SHARDS
from memtrellis.transfer import ImportReport, PathOrFile, export_to, import_from
from memtrellis.types import (
    Health,
    HistoryEvent,
    MemoryItem,
    MemoryType,
    RecallResult,
    Scope,
)

__all__ = ["Memory", "default_store_path", "engine_of"]

log = logging.getLogger("memtrellis")


class Memory:
    """Long-term memory on one store directory, shared by every adapter.

    The methods that read or write memories have an async form, named with an ``a`` prefix
    and taking the same arguments: `aadd` (LLM calls awaited concurrently) and `acapture`
    (it only queues) are coroutines of their own; `astore`, `aupdate`, `aforget`, `aget`,
    `ahistory`, `aversions`, `alist`, `aentities`, `arecall`, `ahealth`, `aflush`, `arefine`,
    `aexport`, `aimport_` and `aclose` run the sync method in a worker thread, so the loop
    never blocks. `async with
    Memory(...)` closes the store on exit.

    Args:
        path: Store directory; default ``$MEMTRELLIS_HOME`` or ``./.memtrellis``.
        entity_id: Whose memory calls refer to when they do not say (default ``"default"``).
        process_id: Which app or agent writes; recall and list filter by it when set.
        session_id: Session recorded on new memories; recall filters by session only
            when a call passes ``session_id=`` itself, so memory spans sessions.
        embedder: Any [`Embedder`][memtrellis.embeddings.Embedder], LangChain ``Embeddings``,
            LlamaIndex ``BaseEmbedding`` or Chroma embedding function; default the
            offline all-MiniLM-L6-v2 int8 ONNX model.
        chroma_url: Use a Chroma server (``http://host:port``) instead of the embedded
            index, for several processes or machines.
        postgres_url: Keep the entity shards, their logs, the catalog and the writer
            locks in PostgreSQL (``postgresql://user@host/db``; the ``postgres`` extra),
            so that app servers with no shared disk share one memory; needs
            ``chroma_url``. ``path`` then holds only this machine's capture spool.
        lock_timeout: Seconds to wait for another process's write before giving up.
        llm: A chat model for fine-mode extraction and for judging how a new memory
            relates to the closest existing ones: anything with ``complete(messages)``,
            or a framework model an installed integration adapts (LangChain, LlamaIndex).
        lifecycle: Validity by kind, confidence, decay and matching thresholds
            ([`LifecycleConfig`][memtrellis.lifecycle.LifecycleConfig]).
        max_resident_shards: How many entities' shards (graph and keyword index) stay
            loaded at once; the least recently used is unloaded beyond it. See
            "Scaling out" in the operations guide for sizing.
        max_resident_memories: The same bound counted in memories over all loaded shards
            (resident memory is about a few KB per memory).
        vector_process: Run the embedded Chroma index in a child process of its own, so
            that its writes (which hold the GIL for their whole duration) never stall
            this process's threads or event loop; for async apps and servers. Costs a
            child process, about a second to start, and a fraction of a millisecond per
            query. Ignored with ``chroma_url`` (a server is already another process).

    Examples:
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
        postgres_url: str | None = None,
        lock_timeout: float = 60.0,
        llm: LLM | Any | None = None,
        extraction: ExtractionConfig | None = None,
        drain_timeout: float = 60.0,
        lifecycle: LifecycleConfig | None = None,
        max_resident_shards: int = DEFAULT_RESIDENT_SHARDS,
        max_resident_memories: int = DEFAULT_RESIDENT_MEMORIES,
        vector_process: bool = False,
    ) -> None:
        self.default_scope = make_scope(entity_id, process_id, session_id)
        self.path = store_path(path)
        for name, url in (("chroma_url", chroma_url), ("postgres_url", postgres_url)):
            if url is not None and not isinstance(url, str):
                raise InvalidInputError(f"{name} must be a str, not {type(url).__name__}")
        self._closers: dict[int, Callable[[], object]] = {}  # on_close(), by ticket
        self._tickets = itertools.count()
        # Everything that can reject an argument runs before the store takes its lock.
        self.extractor = Extractor(llm, extraction)
        if lifecycle is not None and not isinstance(lifecycle, LifecycleConfig):
            raise InvalidInputError("lifecycle must be a LifecycleConfig")
        self.lifecycle = lifecycle or LifecycleConfig()
        # The extractor adapted the llm (a LangChain or LlamaIndex model, say) to the LLM
        # protocol; the judge asks the same adapted model.
        chat = self.extractor.llm
        timeout = self.extractor.config.llm_timeout
        judge = llm_judge(chat, timeout=timeout) if chat is not None else None
        if embedder is None:
            from memtrellis.embeddings import default_embedder

            self.embedder: Embedder = default_embedder()
        else:
            self.embedder = as_embedder(embedder)
        store = Store(
            self.path,
            embedder=EmbedderInfo(
                model_id=self.embedder.model_id, dimension=self.embedder.dimension
            ),
            embed=lambda texts: self.embedder.embed_documents(texts),
            chroma_url=chroma_url,
            postgres_url=postgres_url,
            lock_timeout=lock_timeout,
            max_resident_shards=max_resident_shards,
            max_resident_memories=max_resident_memories,
            vector_process=vector_process,
        )
        self._drain_timeout = drain_timeout
        self._engine = Engine(
            path=self.path,
            store=store,
            embedder=self.embedder,
            extractor=self.extractor,
            lifecycle=self.lifecycle,
            judge=judge,
            default_scope=self.default_scope,
        )
        self._store, self._reader, self._writer = store, self._engine.reader, self._engine.writer
        self._capturer = self._engine.capturer
        self._scope = self._engine.scopes.current

    # -- scope ---------------------------------------------------------------------------
    def current_scope(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        defaults: Mapping[str, str] | None = None,
    ) -> Scope:
        """The scope a call with these arguments uses: each argument given, else what the
        innermost active [`scope`][memtrellis.Memory.scope] block sets, else ``defaults``
        (a registration's own scope, say), else this memory's defaults.

        For adapters and clients: the one door to the scope of the current thread or task.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
            ...     with memory.scope(session_id="s1"):
            ...         scope = memory.current_scope(defaults={"entity_id": "bob"})
            ...     scope.entity_id, scope.session_id
            ('bob', 's1')
        """
        return self._scope(entity_id, process_id, session_id, defaults=defaults)

    @contextlib.contextmanager
    def scope(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
    ) -> Iterator[Scope]:
        """Use another entity, process or session inside a ``with`` block.

        The scope holds for the current thread or asyncio task only (a context
        variable), so concurrent requests of different users do not mix. Inside the
        block it is the default of every method that takes a scope (an argument given
        to a call still wins) and of every client registered with this memory, over
        the scope given at registration. Blocks nest; the inner one wins per field.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> with memory.scope(entity_id="bob", session_id="s1") as scope:
            ...     [item] = memory.add("Bob likes jazz")
            >>> scope.entity_id, item.scope.entity_id, item.scope.session_id
            ('bob', 'bob', 's1')
            >>> memory.list()  # outside the block: the default entity again
            []
            >>> memory.close()
        """
        fields = given(entity_id=entity_id, process_id=process_id, session_id=session_id)
        with self._engine.scopes.using(fields) as scope:
            yield scope

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
        mode: Mode | str | None = None,
        progress: bool | None = None,
    ) -> list[MemoryItem]:
        """Remember messages, conversations, text or documents; returns the stored items.

        ``data`` is plain text, one message dict (``role``, ``content``, optional ``id``,
        ``timestamp``, ``name``/``speaker``), a list of them, a list of such lists (several
        conversations), or a ``pathlib.Path`` to a ``.txt``/``.md`` document (PDF and Word
        with the ``documents`` extra). ``mode="fine"`` distils memories with the LLM given
        to ``Memory(llm=...)`` (the default when there is one); ``mode="fast"`` stores
        each message as a memory. Messages with an unknown role or no text are skipped
        and counted in [`health`][memtrellis.Memory.health]. A long input shows progress
        on stderr (windows extracted, memories embedded) when stderr is a terminal;
        ``progress=False`` never, ``True`` always.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> [item] = m.add([{"role": "user", "content": "I moved to Lyon", "id": "m1"}])
            >>> item.sources[0].message_id
            'm1'
            >>> m.close()
        """
        scope, kind = self._add_args(entity_id, process_id, session_id, memory_type)
        tags, entities, metadata = check_labels(tags, entities, metadata)
        shown = progress_arg(progress)
        result = self.extractor.extract(
            data,
            scope,
            mode=mode,
            memory_type=kind,
            tags=tags,
            entities=entities,
            metadata=metadata,
            progress=shown,
        )
        return self._writer.store_result(result, progress=shown)

    async def aadd(
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
        mode: Mode | str | None = None,
        progress: bool | None = None,
    ) -> list[MemoryItem]:
        """Async [`add`][memtrellis.Memory.add]: fine-mode windows are extracted concurrently
        through the LLM's native ``acomplete`` when it has one; storing runs in a worker thread."""
        scope, kind = self._add_args(entity_id, process_id, session_id, memory_type)
        tags, entities, metadata = check_labels(tags, entities, metadata)
        shown = progress_arg(progress)
        result = await self.extractor.aextract(
            data,
            scope,
            mode=mode,
            memory_type=kind,
            tags=tags,
            entities=entities,
            metadata=metadata,
            progress=shown,
        )
        return await asyncio.to_thread(self._writer.store_result, result, None, shown)

    def _add_args(
        self,
        entity_id: str | None,
        process_id: str | None,
        session_id: str | None,
        memory_type: MemoryType | str | None,
    ) -> tuple[Scope, MemoryType | None]:
        return self._scope(entity_id, process_id, session_id), memory_type_arg(memory_type)

    # -- background capture ----------------------------------------------------------------
    def capture(
        self,
        data: str | Mapping[str, Any] | Sequence[Any],
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        mode: Mode | str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Queue a turn (messages or text) for extraction in the background; returns at once.

        The turn is validated and written to the spool before this returns, so it is
        extracted even if the process dies first (on the next open). Returns the capture
        id. [`flush`][memtrellis.Memory.flush] waits until everything captured is stored.
        """
        scope = self._scope(entity_id, process_id, session_id)
        return self._capturer.capture(data, scope, mode=mode, tags=tags, metadata=metadata)

    async def acapture(
        self,
        data: str | Mapping[str, Any] | Sequence[Any],
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        mode: Mode | str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Async [`capture`][memtrellis.Memory.capture]; it only spools and queues, so it runs
        inline."""
        return self.capture(
            data,
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            mode=mode,
            tags=tags,
            metadata=metadata,
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every captured turn is stored; False when ``timeout`` ran out."""
        return self._capturer.service.flush(timeout)

    # -- refine -------------------------------------------------------------------------------
    def refine(
        self,
        *,
        entity_id: str | None = None,
        limit: int | None = None,
    ) -> RefineReport:
        """Re-extract fast-mode memories with the LLM and supersede them with fine ones.

        Fast now, fine when idle: the rebuilt conversations go through fine extraction;
        each new memory keeps the sources it cites, and the fast memories it cites are
        marked superseded by it (kept as history, linked by ``supersedes`` edges). Fast
        memories that no new memory cites are left as they are.
        """
        return self._writer.refine(self._scope(entity_id, None, None).entity_id, limit)

    def store(self, item: MemoryItem, *, lifecycle: bool = True) -> MemoryItem:
        """Store a ready-made item (its own scope and id); replaces one with its id.

        A new item goes through the lifecycle like [`add`][memtrellis.Memory.add]: its entities are
        resolved, it gets its kind's default validity, and it is compared with the closest memories
        of its scope (a duplicate is merged: the memory it joined is returned; a contradiction
        supersedes the older one). ``lifecycle=False`` stores it exactly as given.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> from memtrellis.types import Scope
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> m.store(MemoryItem(id="f1", text="Bob is vegan", scope=Scope(entity_id="bob"))).id
            'f1'
            >>> m.close()
        """
        return self._writer.store_item(ready_item(item), lifecycle=lifecycle)

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
        [`history`][memtrellis.Memory.history].
        """
        changes = given(
            text=text,
            key=key,
            memory_type=memory_type,
            tags=tags,
            entities=entities,
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
            metadata=metadata,
        )
        return self._writer.update_item(self._reader.find(memory_id, entity_id), changes)

    def forget(self, memory_id: str | None = None, *, entity_id: str | None = None) -> int:
        """Delete one memory, or with ``entity_id=`` alone every memory of that entity.

        Forgetting an entity removes all it has: its memories and entity nodes and their
        edges, its vector collection, its keyword index, its records in the log (the
        store is compacted at once) and its captured turns still waiting in this
        process's spool, including one being extracted at that moment. Turns captured
        after the call are kept.

        Returns how many memories were removed from graph and index.
        """
        if memory_id is not None:
            return self._writer.delete(self._reader.find(memory_id, entity_id))
        if entity_id is None:
            raise InvalidInputError("forget() needs a memory id, or entity_id= to forget an entity")
        return self._writer.forget_entity(self._scope(entity_id, None, None).entity_id)

    # -- reading -------------------------------------------------------------------------
    def get(self, memory_id: str, *, entity_id: str | None = None) -> MemoryItem:
        """One memory by id; [`MemoryNotFoundError`][memtrellis.errors.MemoryNotFoundError] when it
        is not in this entity."""
        return self._reader.find(memory_id, entity_id).detached()

    def history(self, memory_id: str, *, entity_id: str | None = None) -> list[HistoryEvent]:
        """What happened to a memory: created (and what it superseded), merged, updated,
        superseded (and by what), oldest first. [`versions`][memtrellis.Memory.versions] walks the
        chain."""
        return self._reader.history(self._reader.find(memory_id, entity_id))

    def versions(self, memory_id: str, *, entity_id: str | None = None) -> list[MemoryItem]:
        """The supersession chain through a memory, oldest first, ending at the current one.

        Follows ``supersedes`` edges both ways from ``memory_id``: what it replaced, what
        replaced it. A memory never superseded is its own one-item chain.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> [old] = m.add("Ana lives in Lyon", memory_type="fact")
            >>> [new] = m.add("Ana moved to Porto", memory_type="fact")
            >>> [v.text for v in m.versions(old.id)]
            ['Ana lives in Lyon', 'Ana moved to Porto']
            >>> m.close()
        """
        return self._reader.versions(self._reader.find(memory_id, entity_id))

    def entities(self) -> list[str]:
        """Every entity the store holds, in the order they were first written.

        Read from the catalog: no entity's shard is loaded. An entity whose memories
        were forgotten one by one is still listed; ``forget(entity_id=...)`` removes it.
        It is an administrator's view (it names every tenant), as
        ``export_graph(all_entities=True)`` is: never show it to one entity's user.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> _ = m.add("Bob likes jazz", entity_id="bob")
            >>> _ = m.add("Ana likes tea", entity_id="ana")
            >>> m.entities()
            ['bob', 'ana']
            >>> m.close()
        """
        return self._store.entities()

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
        """Memories of one entity in the order they were stored, with paging.

        ``filters`` keys: ``memory_type`` (one or several), ``tags`` (any of),
        ``key``, ``include_superseded`` and ``include_expired`` (both default true).
        """
        checked = list_filters(limit, offset, filters)
        scope = self._scope(entity_id, process_id, None)
        return self._reader.list_items(scope, session_id, checked, limit, offset)

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
        graph_context: bool = True,
        memory_types: Sequence[MemoryType | str] | None = None,
        tags: Sequence[str] | None = None,
    ) -> RecallResult:
        """The memories most relevant to ``query``, each with an explanation.

        Dense (Chroma) and keyword (BM25) scores are fused; with ``graph_context`` each
        candidate lends part of its score to the messages beside it in its conversation
        and to memories sharing an entity (see `memtrellis.recall.hybrid`). Expired,
        superseded and not-yet-valid memories (at ``as_of``, default now) are left out
        unless asked for. ``token_budget`` (tiktoken ``o200k_base``) stops the list
        before its rendered lines would exceed the budget. ``memory_types`` and ``tags``
        keep only memories of one of those types / with one of those tags; the searches
        run among those alone, so ``k`` come back whenever ``k`` match.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as m:
            ...     _ = m.add("Ana likes green tea", memory_type="preference", tags=["drinks"])
            ...     _ = m.add("Ana drank green tea in Kyoto", memory_type="event")
            ...     [h.memory.text for h in m.recall("tea", memory_types=["preference"]).items]
            ['Ana likes green tea']
        """
        query, as_of = recall_args(query, k, token_budget, as_of)
        kinds, labels = recall_filters(memory_types, tags)
        return self._reader.recall(
            query,
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            include_superseded=include_superseded,
            include_expired=include_expired,
            as_of=as_of,
            graph_context=graph_context,
            memory_types=kinds,
            tags=labels,
        )

    def export_graph(
        self,
        path: str | os.PathLike[str],
        *,
        format: ExportFormat = "html",
        entity_id: str | None = None,
        all_entities: bool = False,
        max_memories: int | None = None,
    ) -> Path:
        """Write one entity's memories, entities and edges as a picture or a graph file.

        ``format``: ``"html"`` (one self-contained page, no network), ``"graphml"``,
        ``"json"`` (node-link) or ``"png"`` (the ``viz`` extra). ``all_entities=True``
        writes every entity's part (an admin export). See
        [`memtrellis.graph_export`][memtrellis.graph_export].

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> m = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> _ = m.add("Ana moved to Porto", memory_type="fact")
            >>> m.export_graph(m.path / "ana.graphml", format="graphml").name
            'ana.graphml'
            >>> m.close()
        """
        from memtrellis.graph_export import export_store_graph

        tenant = None if all_entities else self._scope(entity_id, None, None).entity_id
        return export_store_graph(self._store, path, format, tenant, max_memories)

    def export(
        self,
        path_or_file: PathOrFile,
        *,
        entity_id: str | None = None,
        progress: bool | None = None,
    ) -> int:
        """Write memories as JSON lines (history, edges and vectors included), one entity's
        shard at a time; how many were written.

        ``entity_id=None`` exports every entity (a backup), an id that entity alone;
        superseded and expired memories are written too. ``path_or_file``: a path or a text
        file open for writing. Format: [`memtrellis.transfer`][memtrellis.transfer].
        ``progress``: a bar on stderr (default: when it is a terminal).

        Examples:
            >>> import io, tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as m:
            ...     _ = m.add("Ana moved to Porto", entity_id="ana")
            ...     _ = m.add("Bob is vegan", entity_id="bob")
            ...     m.export(io.StringIO()), m.export(io.StringIO(), entity_id="bob")
            (2, 1)
        """
        return export_to(self._store, self.embedder, path_or_file, entity_id, progress)

    def import_(
        self,
        path_or_file: PathOrFile,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        batch_size: int = 256,
        progress: bool | None = None,
    ) -> ImportReport:
        """Store the memories of an [`export`][memtrellis.Memory.export] exactly as they were.

        Ids, scopes, sources, validity, recall counts, history, edges and (same embedder)
        vectors are restored, without the lifecycle; a memory already there is replaced.
        The file is read a line at a time; every ``batch_size`` memories are one commit
        per entity and at most one embedding call. ``entity_id`` / ``process_id`` store
        every memory under that entity / process. Invalid lines are skipped and reported.

        Examples:
            >>> import io, tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as m:
            ...     line = '{"id": "n1", "text": "Bob is vegan", "scope": {"entity_id": "bob"}}'
            ...     report = m.import_(io.StringIO(line + "\\n"), entity_id="robert")
            ...     report.imported, m.get("n1", entity_id="robert").text
            (1, 'Bob is vegan')
        """
        return import_from(
            self._store, self.embedder, path_or_file, progress, entity_id, process_id, batch_size
        )

    def register(
        self,
        client: Any = None,
        /,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        capture_mode: str | None = None,
        strict: bool | None = None,
        **named: Any,
    ) -> Any:
        """Give memory to an SDK client or a framework object, through one registry.

        * ``memory.register(client)``: an ``OpenAI``, ``AsyncOpenAI``, ``Anthropic`` or
          ``AsyncAnthropic`` client is patched in place and returned. Its calls
          (``chat.completions.create``/``parse``, ``responses.create``,
          ``messages.create``/``parse``/``stream``) recall memories, place the memory context
          and capture each turn in the background; nothing else in your code changes.
          Registering twice wraps once; [`unregister`][memtrellis.Memory.unregister] restores the
          client.
        * ``memory.register(openai=client)``, ``register(anthropic=...)``,
          ``register(langchain=chat_model)``...: the integration of that name (entry-point
          group ``memtrellis.integrations``); one keyword returns the wrapped object,
          several a dict by name.

        Args:
            client: A supported SDK client (positional).
            entity_id: Whose memory this registration's calls use (``Memory.scope``
                overrides it per call).
            process_id: Which app or agent.
            session_id: Recorded on captured turns.
            k: Memories recalled per call.
            token_budget: Tokens the memory-context block may take.
            capture_mode: ``"fast"`` or ``"fine"`` extraction of captured turns.
            strict: Raise memory failures instead of logging and counting them in
                [`health`][memtrellis.Memory.health] (the default never breaks the user's call).
            **named: ``integration_name=object``.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> memory.register(object())  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            memtrellis.errors.UnsupportedClientError: memtrellis cannot register a builtins...
            >>> memory.close()

        Raises:
            UnsupportedClientError: ``client`` is of no supported type (the message lists
                the supported types and the named forms).
            UnknownIntegrationError: A name no installed package registers.
            InvalidInputError: Nothing to register, or a client and names together.
        """
        options = given(
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            capture_mode=capture_mode,
            strict=strict,
        )
        return registry.register_objects(self, client, named, options)

    def unregister(self, client: Any) -> bool:
        """Restore the original methods of a client registered with this memory.

        Returns False when the client is not registered with this memory.
        [`close`][memtrellis.Memory.close] unregisters every client still registered.

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
            ...     memory.unregister(object())
            False
        """
        return registry.unregister(self, client)

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` when this memory [closes][memtrellis.Memory.close], before the capture
        queue drains; returns a function that cancels it. Hooks run last registered first;
        one that raises is logged and the others still run. For adapters (registered SDK
        clients are restored this way).

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> cancel = memory.on_close(lambda: print("closing"))
            >>> _ = memory.on_close(lambda: print("first"))
            >>> memory.close()
            first
            closing
        """
        ticket = next(self._tickets)
        self._closers[ticket] = callback
        return lambda: self._closers.pop(ticket, None) and None

    def count_client(self, counter: str) -> None:
        """Add one to a ``client_*`` counter of [`health`][memtrellis.Memory.health]
        (``"client_calls"``, ``"client_captures"``, ``"client_recall_failures"``,
        ``"client_capture_failures"``), for clients and adapters. Thread-safe; never raises
        (an unknown name is logged and ignored).

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
            ...     memory.count_client("client_calls")
            ...     memory.health().client_calls
            1
        """
        self._engine.stats.count(counter)

    def health(self) -> Health:
        """Counts, edges by kind, recall latency since open, capture queue and disk size."""
        return self._engine.health()

    def report_failure(
        self,
        what: Literal["recall", "capture", "context"],
        *,
        source: str,
        error: BaseException | None = None,
    ) -> None:
        """Count a memory failure an adapter absorbed (fail-open), so that health shows it.

        For integrations, ours and third-party ones: an adapter that catches a memory
        failure so that the user's model call goes on calls this, then logs the failure
        as it does (or raises it, in strict mode). [`health`][memtrellis.Memory.health]
        reports the counts as ``adapter_recall_failures``, ``adapter_capture_failures``,
        ``adapter_context_failures`` and, by ``"source.kind"``, ``adapter_failures``.
        Thread-safe, works after [`close`][memtrellis.Memory.close], and never raises:
        it runs on failure paths, so a kind it does not know counts as ``"other"`` (in
        ``adapter_failures`` only, with a warning) and a source that is not a string as
        ``"unknown"``.

        Args:
            what: What failed: ``"recall"`` (reading memories for a call), ``"capture"``
                (handing a turn to memory) or ``"context"`` (rendering or trimming the
                memory-context block).
            source: Who reports, a short stable name such as ``"langchain"``.
            error: The exception absorbed, logged at debug level (it is not kept).

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> memory.report_failure("recall", source="my_adapter", error=TimeoutError())
            >>> health = memory.health()
            >>> health.adapter_recall_failures, health.adapter_failures
            (1, {'my_adapter.recall': 1})
            >>> memory.close()
        """
        try:
            self._engine.stats.count_adapter_failure(what, source)
            if error is not None:
                log.debug("memtrellis: %s reported a %s failure: %r", source, what, error)
        except Exception:  # never let the report break the failure path it runs on
            log.debug("memtrellis: report_failure could not count a failure", exc_info=True)

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def repair_report(self) -> Any:
        """What opening the store repaired (see
        [`memtrellis.store.RepairReport`][memtrellis.store.RepairReport])."""
        return self._store.repair

    def close(self) -> None:
        """Drain captured turns (up to ``drain_timeout``), flush and release the store.

        Turns still queued when the timeout runs out stay in the spool and are extracted
        on the next open. Safe to call twice. Registered clients are unregistered.
        """
        while self._closers:
            ticket = max(self._closers)
            hook = self._closers.pop(ticket, None)
            try:
                if hook is not None:
                    hook()
            except Exception:
                log.warning("memtrellis: an on_close hook failed", exc_info=True)
        try:
            if not self._capturer.service.close(self._drain_timeout):
                log.warning("capture queue not drained on close; the rest stays spooled")
        finally:
            self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    astore = _in_thread(store)
    aupdate = _in_thread(update)
    aforget = _in_thread(forget)
    aget = _in_thread(get, read=True)
    ahistory = _in_thread(history, read=True)
    aversions = _in_thread(versions, read=True)
    alist = _in_thread(list, read=True)
    aentities = _in_thread(entities, read=True)
    arecall = _in_thread(recall, read=True)
    ahealth = _in_thread(health, read=True)
    aclose = _in_thread(close)
    aflush = _in_thread(flush)
    arefine = _in_thread(refine)
    aexport = _in_thread(export)
    aimport_ = _in_thread(import_)


def engine_of(memory: Memory) -> Engine:
    """The engine under ``memory`` (internal; tests use `memtrellis.testing.store_of` and friends).

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     engine_of(memory).store is engine_of(memory).parts.store
        True
    """
    return memory._engine
