"""The [`Memory`][memtrellis.Memory] facade: the one object every adapter and user talks to.

Its methods check their arguments and delegate in one line to the engine under it
(`memtrellis._engine`: a reader, a writer and a capturer over the store).

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

import builtins
import contextlib
import inspect
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from memtrellis._deprecated import renamed
from memtrellis._engine import args as _args
from memtrellis._engine import open_engine
from memtrellis._memory_async import Closing
from memtrellis._memory_async import in_thread as _in_thread
from memtrellis._memory_doors import AdapterDoors
from memtrellis.capture.config import CaptureConfig
from memtrellis.embeddings.base import Embedder
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.model import Mode
from memtrellis.extraction.pipeline import ExtractionConfig
from memtrellis.extraction.refine import RefineReport
from memtrellis.graph_export import ExportFormat
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.llm import LLM
from memtrellis.relations import Relations
from memtrellis.store.store import DEFAULT_RESIDENT_MEMORIES, DEFAULT_RESIDENT_SHARDS
from memtrellis.transfer import ImportReport, PathOrFile, export_to, import_from
from memtrellis.types import (
    Health,
    HistoryEvent,
    MemoryItem,
    MemoryType,
    RecallResult,
    Scope,
    SourceRef,
)

__all__ = ["Memory", "default_store_path"]

default_store_path = _args.default_store_path

log = logging.getLogger("memtrellis")


class Memory(AdapterDoors, Closing):
    """Long-term memory on one store directory, shared by every adapter.

    Every argument is described in the [configuration guide](../configuration.md). Each
    method that reads or writes has an async twin named with an ``a`` (`aadd`, `arecall`,
    `aget`...) that never blocks the loop; `async with Memory(...)` closes on exit.

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     [m.memory_type.value for m in memory.add({"role": "user", "content": "Hi"})]
        ['episode']
    """

    #: The class ``engine_process=True`` makes (`memtrellis._memory_process`, which the
    #: package imports, declares itself with ``process_facade=True``).
    _process_facade: ClassVar[type[Memory] | None] = None
    __signature__: ClassVar[inspect.Signature]

    def __init_subclass__(cls, *, process_facade: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if process_facade:
            Memory._process_facade = cls

    def __new__(cls, *args: Any, engine_process: bool = False, **kwargs: Any) -> Memory:
        # engine_process=True: the same facade over an engine in a child process.
        if engine_process and cls is Memory and Memory._process_facade is not None:
            return super().__new__(Memory._process_facade)
        return super().__new__(cls)

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
        capture: CaptureConfig | None = None,
        drain_timeout: float = 60.0,
        lifecycle: LifecycleConfig | None = None,
        max_resident_shards: int = DEFAULT_RESIDENT_SHARDS,
        max_resident_memories: int = DEFAULT_RESIDENT_MEMORIES,
        vector_process: bool = False,
        reranker: Any = None,
        engine_process: bool = False,
    ) -> None:
        if engine_process:
            raise InvalidInputError("engine_process=True is for Memory itself, not a subclass")
        self.default_scope = _args.make_scope(entity_id, process_id, session_id)
        self.path = _args.store_path(path)
        self._drain_timeout = _args.timeout_arg(drain_timeout)
        self._engine = engine = open_engine(
            self,
            self.path,
            self.default_scope,
            embedder=embedder,
            llm=llm,
            extraction=extraction,
            capture=capture,
            lifecycle=lifecycle,
            chroma_url=chroma_url,
            postgres_url=postgres_url,
            lock_timeout=lock_timeout,
            max_resident_shards=max_resident_shards,
            max_resident_memories=max_resident_memories,
            vector_process=vector_process,
            reranker=reranker,
        )
        p = engine.parts
        self.capture_config = p.capture
        self.extractor, self.lifecycle, self.embedder = p.extractor, p.lifecycle, p.embedder
        self._store, self._reader, self._writer = engine.store, engine.reader, engine.writer
        self._capturer, self._scope = engine.capturer, engine.scopes.current

    @contextlib.contextmanager
    def scope(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
    ) -> Iterator[Scope]:
        """Use another entity, process or session inside a ``with`` block, for the current
        thread or task: the default of every call and registered client (a call's argument
        still wins); blocks nest, the inner one wins per field.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory, memory.scope(entity_id="bob") as scope:
            ...     [item] = memory.add("Bob likes jazz")
            ...     scope.entity_id, item.scope.entity_id
            ('bob', 'bob')
        """
        fields = _args.given(entity_id=entity_id, process_id=process_id, session_id=session_id)
        with self._engine.scopes.using(fields) as scope:
            yield scope

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

        ``data``: text, a message dict (``role``, ``content``, ``id``...), a list of them or
        of such lists, or a ``pathlib.Path`` to a document. ``mode``: ``"fine"`` (the LLM
        distils; the default with an LLM) or ``"fast"``. See the [concepts](../concepts.md).

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     [item] = m.add([{"role": "user", "content": "I moved to Lyon", "id": "m1"}])
            ...     item.sources[0].message_id
            'm1'
        """
        scope, labels = self._scope(entity_id, process_id, session_id), (tags, entities, metadata)
        return self._writer.add(data, scope, mode, memory_type, labels, progress)

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
        """Async [`add`][memtrellis.Memory.add]: fine-mode windows extracted concurrently."""
        scope, labels = self._scope(entity_id, process_id, session_id), (tags, entities, metadata)
        return await self._writer.aadd(data, scope, mode, memory_type, labels, progress)

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
        """Queue a turn (messages or text) for extraction in the background; its capture id.

        It is checked and spooled first, so a crash does not lose it (the next open
        extracts it); [`flush`][memtrellis.Memory.flush] waits until it is stored."""
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
        """Async [`capture`][memtrellis.Memory.capture]; it only spools and queues: inline."""
        scope = {"entity_id": entity_id, "process_id": process_id, "session_id": session_id}
        return self.capture(data, mode=mode, tags=tags, metadata=metadata, **scope)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every captured turn is stored; False when ``timeout`` ran out."""
        return self._capturer.service.flush(_args.timeout_arg(timeout))

    def refine(self, *, entity_id: str | None = None, limit: int | None = None) -> RefineReport:
        """Re-extract fast-mode memories with the LLM; those a new memory cites it supersedes."""
        return self._writer.refine(self._scope(entity_id, None, None).entity_id, limit)

    def store(self, item: MemoryItem, *, lifecycle: bool = True) -> MemoryItem:
        """Store a ready-made item (its own scope and id), replacing one with its id; a new one
        goes through the [lifecycle](../lifecycle.md) unless ``lifecycle=False``.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> from memtrellis.types import Scope
            >>> with temp_memory() as m:
            ...     m.store(MemoryItem(id="f1", text="Bob is vegan", scope=Scope(entity_id="b"))).id
            'f1'
        """
        return self._writer.store_item(_args.ready_item(item), lifecycle=lifecycle)

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
        """Change fields of a memory found by id (``None``: unchanged); kept in
        [`history`][memtrellis.Memory.history], re-embedded only when the text changes."""
        changes = _args.given(text=text, key=key, memory_type=memory_type, tags=tags)
        changes |= _args.given(entities=entities, confidence=confidence, metadata=metadata)
        changes |= _args.given(valid_from=valid_from, valid_until=valid_until)
        return self._writer.update_item(self._reader.find(memory_id, entity_id), changes)

    def forget(self, memory_id: str | None = None, *, entity_id: str | None = None) -> int:
        """Delete one memory by id, or with ``entity_id=`` alone all an entity has (its spooled
        turns included: see the [operations guide](../operations.md)); how many memories."""
        if memory_id is not None:
            return self._writer.delete(self._reader.find(memory_id, entity_id))
        if entity_id is None:
            raise InvalidInputError("forget() needs a memory id, or entity_id= to forget an entity")
        return self._writer.forget_entity(self._scope(entity_id, None, None).entity_id)

    def get(self, memory_id: str, *, entity_id: str | None = None) -> MemoryItem:
        """One memory by id, else `MemoryNotFoundError`; in the entity the call, a scope or the
        memory names, else in any ("By id" in the [concepts](../concepts.md))."""
        return self._reader.find(memory_id, entity_id).detached()

    def history(self, memory_id: str, *, entity_id: str | None = None) -> list[HistoryEvent]:
        """What happened to a memory (created, merged, updated, superseded), oldest first."""
        return self._reader.history(self._reader.find(memory_id, entity_id))

    def versions(self, memory_id: str, *, entity_id: str | None = None) -> list[MemoryItem]:
        """The supersession chain through a memory, oldest first, ending at the current one.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     [old] = m.add("Ana lives in Lyon", memory_type="fact")
            ...     [new] = m.add("Ana moved to Porto", memory_type="fact")
            ...     [v.text for v in m.versions(old.id)]
            ['Ana lives in Lyon', 'Ana moved to Porto']
        """
        return self._reader.versions(self._reader.find(memory_id, entity_id))

    def entities(self) -> list[str]:
        """Every entity the store holds, in the order they were first written (read from the
        catalog). An administrator's view: never show it to one entity's user.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.add("Bob likes jazz", entity_id="bob"), m.add("Tea", entity_id="ana")
            ...     m.entities()
            ['bob', 'ana']
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
        """Memories of one entity in stored order, paged; ``filters``: ``memory_type``,
        ``tags`` (any of), ``key``, ``include_superseded``/``include_expired`` (default true)."""
        checked = _args.list_filters(limit, offset, filters)
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
        context_hint: str | None = None,
    ) -> RecallResult:
        """The memories most relevant to ``query``, each with an explanation (dense, keyword
        and graph scores; validity at ``as_of``): "Recall" in the [concepts](../concepts.md).
        ``context_hint``, a summary of the conversation, steers which matches come first.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.add("Ana likes green tea", memory_type="preference", tags=["drinks"])
            ...     _ = m.add("Ana drank green tea in Kyoto", memory_type="event")
            ...     [h.memory.text for h in m.recall("tea", memory_types=["preference"]).items]
            ['Ana likes green tea']
        """
        query, as_of = _args.recall_args(query, k, token_budget, as_of)
        kinds, labels = _args.recall_filters(memory_types, tags)
        scope = (entity_id, process_id, session_id)
        flags = (include_superseded, include_expired, graph_context)
        hint = _args.context_hint_arg(context_hint)
        return self._reader.recall(
            query, scope, k, token_budget, flags, as_of, kinds, labels, context_hint=hint
        )

    def open_items(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        limit: int = 20,
        as_of: datetime | None = None,
    ) -> builtins.list[MemoryItem]:
        """The entity's decisions and action items still valid at ``as_of`` (not expired,
        not superseded), newest first: what a memory context keeps room for.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.add("Book the venue by Friday", memory_type="action_item")
            ...     [i.text for i in m.open_items()]
            ['Book the venue by Friday']
        """
        _args.list_filters(limit, 0, None)
        scope = self._scope(entity_id, process_id, None)
        return self._reader.open_items(scope, limit, _args.checked_as_of(as_of))

    def session_turns(
        self,
        *,
        session_id: str | None = None,
        entity_id: str | None = None,
        process_id: str | None = None,
        limit: int = 20,
    ) -> builtins.list[SourceRef]:
        """The latest ``limit`` user and assistant messages of one session of one entity,
        oldest first: those its memories were made from and the turns captured and not
        stored yet. ``session_id`` defaults to the scope's; without one, `InvalidInputError`.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.capture([{"role": "user", "content": "Book a table for two"},
            ...                    {"role": "assistant", "content": "For tonight?"}],
            ...                   session_id="s1")
            ...     [(s.role, s.content) for s in m.session_turns(session_id="s1")]
            [('user', 'Book a table for two'), ('assistant', 'For tonight?')]
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInputError("limit must be an integer from 1 to 1000")
        scope = self._scope(entity_id, process_id, session_id)
        if scope.session_id is None:
            raise InvalidInputError("session_turns() needs a session_id (or a scope with one)")
        return self._engine.session_turns(scope, scope.session_id, limit)

    def relate(
        self,
        a: str,
        b: str,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        max_hops: int = 4,
        limit: int = 5,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> Relations:
        """How ``a`` and ``b`` (names the memories mention, or memory ids) are related: the
        paths between them in the graph, each edge's kind, the memories and their sources,
        best supported first; no LLM (`memtrellis.recall.paths`).

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.add("Hana moved to Kyoto in 2023.")
            ...     m.relate("Hana", "Kyoto").paths[0].describe()
            'Hana -mentions- [Hana moved to Kyoto in 2023.] -mentions- Kyoto'
        """
        scope = (entity_id, process_id)
        return self._reader.relate(a, b, scope, max_hops, limit, include_superseded, as_of)

    def export_graph(
        self,
        path: str | os.PathLike[str],
        *,
        format: ExportFormat = "html",
        entity_id: str | None = None,
        all_entities: bool = False,
        max_memories: int | None = None,
    ) -> Path:
        """Write one entity's memories, entities and edges as a picture or a graph file:
        ``"html"``, ``"graphml"``, ``"json"`` or ``"png"``; ``all_entities=True`` for every
        entity. See [`memtrellis.graph_export`][memtrellis.graph_export].

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.add("Ana moved to Porto", memory_type="fact")
            ...     m.export_graph(m.path / "ana.graphml", format="graphml").name
            'ana.graphml'
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
        """Write memories as JSON lines (every entity's by default: a backup); how many. See
        [`memtrellis.transfer`][memtrellis.transfer] and the [operations guide](../operations.md).

        Examples:
            >>> import io
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     _ = m.add("Ana moved to Porto", entity_id="ana"), m.add("Bob", entity_id="bob")
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
        """Store the memories of an [`export`][memtrellis.Memory.export] as they were (no
        lifecycle), under ``entity_id``/``process_id`` when given; ``batch_size`` a commit.

        Examples:
            >>> import io
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as m:
            ...     line = '{"id": "n1", "text": "Bob is vegan", "scope": {"entity_id": "bob"}}'
            ...     report = m.import_(io.StringIO(line + "\\n"), entity_id="robert")
            ...     report.imported, m.get("n1", entity_id="robert").text
            (1, 'Bob is vegan')
        """
        return import_from(
            self._store, self.embedder, path_or_file, progress, entity_id, process_id, batch_size
        )

    def health(self) -> Health:
        """Counts, edges by kind, recall latency since open, capture queue and disk size."""
        return self._engine.health()

    @property
    def recovery_report(self) -> Any:
        """What opening the store recovered after a crash (see
        [`memtrellis.store.RecoveryReport`][memtrellis.store.RecoveryReport])."""
        return self._store.recovery

    @property
    def repair_report(self) -> Any:
        """Deprecated: [`recovery_report`][memtrellis.Memory.recovery_report]."""
        renamed("Memory.repair_report", "Memory.recovery_report")
        return self._store.recovery

    def close(self) -> None:
        """Run the [`on_close`][memtrellis.Memory.on_close] hooks (clients are unregistered),
        drain captured turns (``drain_timeout``), release the store. Safe to call twice."""
        self._engine.run_close_hooks()
        try:
            if not self._capturer.service.close(self._drain_timeout):
                log.warning("capture queue not drained on close; the rest stays spooled")
        finally:
            self._store.close()

    astore = _in_thread(store)
    aupdate = _in_thread(update)
    aforget = _in_thread(forget)
    aget = _in_thread(get, read=True)
    ahistory = _in_thread(history, read=True)
    aversions = _in_thread(versions, read=True)
    alist = _in_thread(list, read=True)
    aentities = _in_thread(entities, read=True)
    arecall = _in_thread(recall, read=True)
    aopen_items = _in_thread(open_items, read=True)
    asession_turns = _in_thread(session_turns, read=True)
    arelate = _in_thread(relate, read=True)
    ahealth = _in_thread(health, read=True)
    aclose = _in_thread(close)
    aflush = _in_thread(flush)
    arefine = _in_thread(refine)
    aexport = _in_thread(export)
    aimport_ = _in_thread(import_)


# What ``inspect.signature(Memory)`` (the API reference, tools) shows: the constructor's
# arguments, not those of ``__new__``, which only picks the class.
Memory.__signature__ = inspect.signature(Memory.__init__).replace(
    parameters=[*inspect.signature(Memory.__init__).parameters.values()][1:]
)
