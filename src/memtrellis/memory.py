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
import contextvars
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from memtrellis._health import FacadeStats, store_figures
from memtrellis.capture import CaptureService
from memtrellis.capture.entry import build_entry
from memtrellis.clients import register_client
from memtrellis.clients.patch import uninstall
from memtrellis.embeddings.base import Embedder, as_embedder
from memtrellis.errors import InvalidInputError, MemoryNotFoundError
from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.model import Mode
from memtrellis.extraction.normalize import check_labels, normalize
from memtrellis.extraction.pipeline import ExtractionConfig, ExtractionResult, Extractor
from memtrellis.extraction.refine import RefineReport, refine_groups
from memtrellis.graph_export import ExportFormat
from memtrellis.lifecycle import LifecycleConfig, store_additions
from memtrellis.lifecycle.judge import llm_judge
from memtrellis.llm import LLM
from memtrellis.recall import RecallRequest, hybrid_recall
from memtrellis.registry import register as register_integration
from memtrellis.store import EmbedderInfo, Store
from memtrellis.store.graph import ENTITY_NODE_PREFIX
from memtrellis.types import (
    EdgeKind,
    Health,
    HistoryEvent,
    MemoryItem,
    MemoryType,
    RecallResult,
    Scope,
    SourceKind,
    _clean_text,
    utcnow,
)

__all__ = ["Memory", "default_store_path"]

log = logging.getLogger("memtrellis")

P = ParamSpec("P")
R = TypeVar("R")

_LIST_FILTERS = frozenset(
    {"memory_type", "tags", "key", "include_superseded", "include_expired", "session_id"}
)


def conversation_edges(items: Sequence[MemoryItem]) -> list[tuple[str, str, EdgeKind]]:
    """``follows`` edges between memories of consecutive messages of one conversation.

    Fast mode stores one memory per message in order; a message's position (its source
    index) grows within a conversation and restarts with the next one. Recall uses the
    edges to lend a matching message's score to its neighbours.
    """
    edges: list[tuple[str, str, EdgeKind]] = []
    previous: MemoryItem | None = None
    for item in items:
        single = len(item.sources) == 1 and item.sources[0].kind is SourceKind.CHAT
        if (
            single
            and previous is not None
            and previous.scope == item.scope
            and (item.sources[0].index or 0) > (previous.sources[0].index or 0)
        ):
            edges.append((item.id, previous.id, EdgeKind.FOLLOWS))
        previous = item if single else None
    return edges


def _given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were given (not None)."""
    return {name: value for name, value in values.items() if value is not None}


def default_store_path() -> Path:
    """``$MEMTRELLIS_HOME`` when set, else ``./.memtrellis``."""
    return Path(os.environ.get("MEMTRELLIS_HOME") or ".memtrellis")


def _store_path(path: Any) -> Path:
    """The store directory a ``Memory`` was given, or ``InvalidInputError``."""
    if path is None:
        return default_store_path()
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise InvalidInputError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    if "\x00" in text or any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise InvalidInputError("path must not contain NUL or lone surrogates")
    return Path(text)


def _in_thread(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[Memory, P], Coroutine[Any, Any, R]]:
    """The async twin of a sync method: same logic, run off the event loop."""

    async def wrapper(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = f"a{method.__name__}"
    wrapper.__doc__ = f"Async form of `{method.__name__}` (runs in a worker thread)."
    return wrapper


class Memory:
    """Long-term memory on one store directory, shared by every adapter.

    The methods that read or write memories have an async form, named with an ``a`` prefix
    and taking the same arguments: `aadd` (LLM calls awaited concurrently) and `acapture`
    (it only queues) are coroutines of their own; `astore`, `aupdate`, `aforget`, `aget`,
    `ahistory`, `aversions`, `alist`, `arecall`, `ahealth`, `aflush`, `arefine` and `aclose`
    run the sync method in a worker thread, so the loop never blocks. `async with
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
        lock_timeout: Seconds to wait for another process's write before giving up.
        llm: A chat model for fine-mode extraction and for judging how a new memory
            relates to the closest existing ones: anything with ``complete(messages)``,
            or a framework model an installed integration adapts (LangChain, LlamaIndex).
        lifecycle: Validity by kind, confidence, decay and matching thresholds
            ([`LifecycleConfig`][memtrellis.lifecycle.LifecycleConfig]).

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
        lock_timeout: float = 60.0,
        llm: LLM | Any | None = None,
        extraction: ExtractionConfig | None = None,
        drain_timeout: float = 60.0,
        lifecycle: LifecycleConfig | None = None,
    ) -> None:
        self.default_scope = self._make_scope(entity_id, process_id, session_id)
        self.path = _store_path(path)
        if chroma_url is not None and not isinstance(chroma_url, str):
            raise InvalidInputError(f"chroma_url must be a str, not {type(chroma_url).__name__}")
        # Memory.scope(): this memory's scope for the current thread or task only.
        self._overrides: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
            f"memtrellis_scope_{id(self)}", default=None
        )
        self._clients: weakref.WeakSet[Any] = weakref.WeakSet()
        # Everything that can reject an argument runs before the store takes its lock.
        self.extractor = Extractor(llm, extraction)
        if lifecycle is not None and not isinstance(lifecycle, LifecycleConfig):
            raise InvalidInputError("lifecycle must be a LifecycleConfig")
        self.lifecycle = lifecycle or LifecycleConfig()
        # The extractor adapted the llm (a LangChain or LlamaIndex model, say) to the LLM
        # protocol; the judge asks the same adapted model.
        chat = self.extractor.llm
        timeout = self.extractor.config.llm_timeout
        self._judge = llm_judge(chat, timeout=timeout) if chat is not None else None
        # One plan-and-commit at a time in this process, so that two adds never both
        # miss the duplicate the other is storing.
        self._writing = threading.Lock()
        if embedder is None:
            from memtrellis.embeddings import default_embedder

            self.embedder: Embedder = default_embedder()
        else:
            self.embedder = as_embedder(embedder)
        self._store = Store(
            self.path,
            embedder=EmbedderInfo(
                model_id=self.embedder.model_id, dimension=self.embedder.dimension
            ),
            embed=lambda texts: self.embedder.embed_documents(texts),
            chroma_url=chroma_url,
            lock_timeout=lock_timeout,
        )
        self._stats = FacadeStats()
        self._drain_timeout = drain_timeout
        config = self.extractor.config
        self._capture = CaptureService(
            self.path / "spool",
            self._store_captured,
            attempts=config.capture_attempts,
            backoff=config.capture_backoff,
            max_backoff=config.capture_max_backoff,
            fallback=self._store_captured_fallback,
        )

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
        # A call's own argument, else the active Memory.scope(), else the defaults.
        base = {**self.default_scope.model_dump(), **self._scope_overrides()}
        return self._make_scope(
            entity_id if entity_id is not None else base["entity_id"],
            process_id if process_id is not None else base["process_id"],
            session_id if session_id is not None else base["session_id"],
        )

    def _scope_overrides(self) -> dict[str, str]:
        """What the innermost active [`scope`][memtrellis.Memory.scope] sets, for this thread or
        task."""
        return dict(self._overrides.get() or {})

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
        given = _given(entity_id=entity_id, process_id=process_id, session_id=session_id)
        token = self._overrides.set({**self._scope_overrides(), **given})
        try:
            yield self._scope(None, None, None)  # checks the values before the block runs
        finally:
            self._overrides.reset(token)

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
        mode: Mode | str | None = None,
    ) -> list[MemoryItem]:
        """Remember messages, conversations, text or documents; returns the stored items.

        ``data`` is plain text, one message dict (``role``, ``content``, optional ``id``,
        ``timestamp``, ``name``/``speaker``), a list of them, a list of such lists (several
        conversations), or a ``pathlib.Path`` to a ``.txt``/``.md`` document (PDF and Word
        with the ``documents`` extra). ``mode="fine"`` distils memories with the LLM given
        to ``Memory(llm=...)`` (the default when there is one); ``mode="fast"`` stores
        each message as a memory. Messages with an unknown role or no text are skipped
        and counted in [`health`][memtrellis.Memory.health].

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
        result = self.extractor.extract(
            data,
            scope,
            mode=mode,
            memory_type=kind,
            tags=tags,
            entities=entities,
            metadata=metadata,
        )
        return self._store_result(result)

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
    ) -> list[MemoryItem]:
        """Async [`add`][memtrellis.Memory.add]: fine-mode windows are extracted concurrently
        through the LLM's native ``acomplete`` when it has one; storing runs in a worker thread."""
        scope, kind = self._add_args(entity_id, process_id, session_id, memory_type)
        tags, entities, metadata = check_labels(tags, entities, metadata)
        result = await self.extractor.aextract(
            data,
            scope,
            mode=mode,
            memory_type=kind,
            tags=tags,
            entities=entities,
            metadata=metadata,
        )
        return await asyncio.to_thread(self._store_result, result)

    def _add_args(
        self,
        entity_id: str | None,
        process_id: str | None,
        session_id: str | None,
        memory_type: MemoryType | str | None,
    ) -> tuple[Scope, MemoryType | None]:
        scope = self._scope(entity_id, process_id, session_id)
        if memory_type is not None and not isinstance(memory_type, str):
            # MemoryType(x) puts repr(x) in its error: a 10k-deep list would recurse.
            raise InvalidInputError(f"memory_type must be text, not {type(memory_type).__name__}")
        try:
            return scope, MemoryType(memory_type) if memory_type is not None else None
        except ValueError as exc:
            raise InvalidInputError(f"unknown memory_type {memory_type!r}") from exc

    def _store_result(self, result: ExtractionResult, ids: str | None = None) -> list[MemoryItem]:
        """Store what an extraction found; ``ids``: the capture id it came from, if any."""
        self._stats.record_extraction(result.skipped, result.fallbacks)
        if not result.items:
            return []
        if ids is not None:
            # Captured entries get ids derived from the capture id, so replaying an entry
            # after a crash replaces what it stored instead of storing it twice.
            for number, item in enumerate(result.items):
                item.id = uuid.uuid5(uuid.NAMESPACE_URL, f"{ids}:{number}").hex
        embeddings = self.embedder.embed_documents([item.search_text() for item in result.items])
        with self._writing:
            if ids is not None and self._capture.cancelled(ids):
                # forget(entity_id=...) purged this turn while it was being extracted;
                # forget holds the same lock, so the check cannot miss it.
                return []
            self._store.refresh(wait=True)  # the plan compares with the current index
            outcomes = store_additions(
                self._store,
                result.items,
                embeddings,
                utcnow(),
                config=self.lifecycle,
                judge=self._judge,
                detail={"mode": result.mode.value},
                edges=conversation_edges(result.items),
            )
        return [outcome.item.detached() for outcome in outcomes]

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
        chosen = self.extractor.resolve_mode(mode)
        at = utcnow()
        if isinstance(data, os.PathLike):
            raise InvalidInputError("capture() takes messages or text; add() reads documents")
        normalize(data, now=at)  # bad input fails here, in the caller, with a typed error
        tags, _, metadata = check_labels(tags, (), metadata)
        entry = build_entry(data, scope, mode=chosen.value, at=at, tags=tags, metadata=metadata)
        self._store.check_open()
        self._capture.submit(entry)
        return str(entry["id"])

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

    def _store_captured(self, entry: dict[str, Any]) -> None:
        # Strict: a timeout, an error or a reply not usable whole raises, and the worker
        # tries the whole turn again later; nothing of a half-understood turn is stored.
        result = self.extractor.extract(
            entry["data"],
            Scope.model_validate(entry["scope"]),
            mode=entry["mode"],
            now=datetime.fromisoformat(entry["at"]),
            tags=entry.get("tags", ()),
            metadata=entry.get("metadata") or None,
            strict=True,
        )
        self._store_result(result, ids=str(entry["id"]))

    def _store_captured_fallback(self, entry: dict[str, Any]) -> None:
        """Store a turn whose extraction failed on every try in fast mode, tagged as such."""
        result = self.extractor.extract(
            entry["data"],
            Scope.model_validate(entry["scope"]),
            mode=Mode.FAST,
            now=datetime.fromisoformat(entry["at"]),
            tags=[*entry.get("tags", ()), FALLBACK_TAG],
            metadata=entry.get("metadata") or None,
        )
        result.fallbacks = len(result.items)
        self._store_result(result, ids=str(entry["id"]))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every captured turn is stored; False when ``timeout`` ran out."""
        return self._capture.flush(timeout)

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
        if self.extractor.llm is None:
            raise InvalidInputError("refine() needs an LLM: Memory(llm=...)")
        tenant = self._scope(entity_id, None, None).entity_id
        self._store.refresh()
        with self._store.reading():
            groups = refine_groups(
                [i.detached() for i in self._store.graph.items(tenant)], limit=limit
            )
        report = RefineReport(conversations=len(groups))
        for group in groups:
            scope = Scope(
                entity_id=tenant, process_id=group.process_id, session_id=group.session_id
            )
            result = self.extractor.extract(group.messages, scope, mode=Mode.FINE)
            result.items = [i for i in result.items if FALLBACK_TAG not in i.tags]
            created = self._store_result(result)
            replaced: dict[str, str] = {}
            for item in created:
                for source in item.sources:
                    old = group.memory_by_message.get(source.message_id or "")
                    if old is not None:
                        replaced.setdefault(old, item.id)
            report.created.extend(i.id for i in created)
            report.kept += len(group.memory_by_message) - len(replaced)
            if replaced:
                self._store.supersede(replaced)
                report.superseded.extend(replaced)
        return report

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
        if not isinstance(item, MemoryItem):
            raise InvalidInputError(f"store() takes a MemoryItem, not {type(item).__name__}")
        try:  # an item made with model_construct has not been validated yet
            item = MemoryItem.model_validate(item.model_dump())
        except ValueError as exc:
            raise InvalidInputError(f"store() got an invalid MemoryItem: {exc}") from exc
        if item.id.startswith(ENTITY_NODE_PREFIX):
            # Such an id names an entity node of the graph, perhaps another entity's:
            # storing it would turn that node into this memory.
            raise InvalidInputError(
                f"memory id {item.id!r} is reserved: ids starting with "
                f"{ENTITY_NODE_PREFIX!r} name the graph's entity nodes"
            )
        self._store.refresh()
        existing = self._store.graph.item(item.id)
        if existing is not None and existing.scope.entity_id != item.scope.entity_id:
            raise InvalidInputError(f"memory id {item.id!r} is already in use")
        [embedding] = self.embedder.embed_documents([item.search_text()])
        if existing is not None or not lifecycle:
            self._store.put([item], [embedding], "updated" if existing else "created")
            return item.detached()
        with self._writing:
            self._store.refresh(wait=True)
            [outcome] = store_additions(
                self._store, [item], [embedding], utcnow(), config=self.lifecycle, judge=self._judge
            )
        return outcome.item.detached()

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
        embeddings = (
            self.embedder.embed_documents([updated.search_text()]) if text_changed else None
        )
        self._store.put([updated], embeddings, "updated", {"fields": sorted(changes)})
        return updated.detached()

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
            item = self._visible(memory_id, entity_id)
            self._store.delete(item.scope.entity_id, [item.id])
            return 1
        if entity_id is None:
            raise InvalidInputError("forget() needs a memory id, or entity_id= to forget an entity")
        tenant = self._scope(entity_id, None, None).entity_id
        with self._writing:  # the capture worker stores under this lock too
            purged = self._capture.purge(tenant)
            if purged:
                log.info("forget: %d captured turn(s) purged from the spool", purged)
            self._store.refresh()
            count = len(self._store.graph.tenant_ids(tenant))
            self._store.drop_entity(tenant)
        return count

    # -- reading -------------------------------------------------------------------------
    def get(self, memory_id: str, *, entity_id: str | None = None) -> MemoryItem:
        """One memory by id; [`MemoryNotFoundError`][memtrellis.errors.MemoryNotFoundError] when it
        is not in this entity."""
        return self._visible(memory_id, entity_id).detached()

    def history(self, memory_id: str, *, entity_id: str | None = None) -> list[HistoryEvent]:
        """What happened to a memory: created (and what it superseded), merged, updated,
        superseded (and by what), oldest first. [`versions`][memtrellis.Memory.versions] walks the
        chain."""
        self._visible(memory_id, entity_id)
        return self._store.graph.history(memory_id)

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
        self._visible(memory_id, entity_id)
        graph = self._store.graph
        with self._store.reading():
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
        graph_context: bool = True,
    ) -> RecallResult:
        """The memories most relevant to ``query``, each with an explanation.

        Dense (Chroma) and keyword (BM25) scores are fused; with ``graph_context`` each
        candidate lends part of its score to the messages beside it in its conversation
        and to memories sharing an entity (see `memtrellis.recall.hybrid`). Expired,
        superseded and not-yet-valid memories (at ``as_of``, default now) are left out
        unless asked for. ``token_budget`` (tiktoken ``o200k_base``) stops the list
        before its rendered lines would exceed the budget.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("recall() needs a non-empty query string")
        query = _clean_text(query)  # a lone surrogate cannot be embedded or tokenised
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInputError("k must be an integer from 1 to 1000")
        if token_budget is not None and (not isinstance(token_budget, int) or token_budget < 0):
            raise InvalidInputError("token_budget must be a non-negative integer or None")
        if as_of is not None:
            if not isinstance(as_of, datetime):
                raise InvalidInputError("as_of must be a datetime")
            if as_of.tzinfo is None:
                as_of = as_of.replace(tzinfo=timezone.utc)  # naive times are UTC throughout
        started = time.perf_counter()
        scope = self._scope(entity_id, process_id, None)
        if session_id is not None:  # a filter here, but it must be a valid scope id
            self._make_scope(scope.entity_id, None, session_id)
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
            graph_context=graph_context,
            lifecycle=self.lifecycle,
        )
        items, tokens, truncated, skipped = hybrid_recall(self._store, request)
        if items:
            self._store.touch([r.memory.id for r in items], utcnow())
        latency = (time.perf_counter() - started) * 1000.0
        self._stats.record_recall(latency)
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
        from memtrellis.graph_export import export_graph

        tenant = None if all_entities else self._scope(entity_id, None, None).entity_id
        self._store.refresh()
        with self._store.reading():
            return export_graph(
                self._store.graph, path, format=format, tenant=tenant, max_memories=max_memories
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
        options = _given(
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            capture_mode=capture_mode,
            strict=strict,
        )
        if client is not None:
            if named:
                raise InvalidInputError("register() takes a client or name=object, not both")
            return register_client(self, client, **options)
        if not named:
            raise InvalidInputError(
                "register() takes a client, or integration=object, e.g. langchain=llm"
            )
        wrapped = {
            name: register_integration(self, name, obj, **options) for name, obj in named.items()
        }
        return next(iter(wrapped.values())) if len(wrapped) == 1 else wrapped

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
        if not uninstall(client, self):
            return False
        self._clients.discard(client)
        return True

    def _registered(self, client: Any) -> None:
        """Remember a patched client, so that [`close`][memtrellis.Memory.close] can restore it."""
        with contextlib.suppress(TypeError):  # no weak references: close() cannot restore it
            self._clients.add(client)

    def health(self) -> Health:
        """Counts, edges by kind, recall latency since open, capture queue and disk size."""
        self._store.refresh()
        capture = self._capture.stats
        failures = self.extractor.failures
        return Health(
            path=str(self.path.resolve()),
            embedder_model_id=self.embedder.model_id,
            embedder_dimension=self.embedder.dimension,
            capture_queue_depth=self._capture.depth,
            capture_spooled=self._capture.spool.open_entries,
            capture_retries=capture.retries,
            capture_failures=capture.failures,
            llm_failures=self.extractor.llm_failures,
            extraction_timeouts=failures.timeouts,
            extraction_errors=failures.errors,
            extraction_garbage=failures.garbage,
            extraction_retries=failures.retries + capture.extraction_retries,
            judge_failures=self._judge.failures if self._judge is not None else 0,
            **store_figures(self._store),
            **self._stats.figures(),
        )

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
        for client in list(self._clients):
            self.unregister(client)
        try:
            if not self._capture.close(self._drain_timeout):
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
    aget = _in_thread(get)
    ahistory = _in_thread(history)
    aversions = _in_thread(versions)
    alist = _in_thread(list)
    arecall = _in_thread(recall)
    ahealth = _in_thread(health)
    aclose = _in_thread(close)
    aflush = _in_thread(flush)
    arefine = _in_thread(refine)
