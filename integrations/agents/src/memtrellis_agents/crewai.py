"""memtrellis as CrewAI's memory: `MemtrellisMemory` and its `MemtrellisStorage`.

CrewAI 1.15 has one memory interface, its unified ``crewai.memory.Memory`` (the earlier
``ExternalMemory`` and its ``Storage`` are gone), which a ``Crew`` or an ``Agent`` takes
as ``memory=``. Its agents call three of its methods: ``recall(task description)``
before a task (the matches go into the task's prompt), then ``extract_memories(task and
result)`` and ``remember_many(...)`` after it. `MemtrellisMemory` is that class with
those methods answered by a memtrellis ``Memory``, for one entity:

* ``recall`` is ``Memory.recall`` (dense, keyword and graph scores; no LLM, no embedder
  of CrewAI's), each hit a CrewAI ``MemoryMatch``;
* ``extract_memories`` hands the text on whole: memtrellis extracts it when it is added
  (fast mode, or fine mode with the ``Memory``'s own LLM), so CrewAI's LLM is never asked;
* ``remember`` adds at once; ``remember_many`` adds in CrewAI's background save pool, and
  ``recall`` waits for pending saves first, as CrewAI's own memory does;
* ``forget``, ``reset``, ``list_records``, ``info``, ``tree`` and ``update`` go through
  `MemtrellisStorage` (CrewAI's ``StorageBackend`` protocol over the same entity).

A CrewAI scope path (``/crew/research``) is kept in the memory's metadata
(``crewai_scope``); memtrellis isolates entities, so give each user a memory of their
own (``MemtrellisMemory(memory, entity_id=user)``). A memory failure never fails the
task: it is counted in ``Memory.health()`` (source ``"crewai"``) and logged, unless
``strict=True``.

CrewAI sends telemetry unless ``CREWAI_DISABLE_TELEMETRY=true`` (and OpenTelemetry's
``OTEL_SDK_DISABLED=true``) are set; memtrellis itself never reaches a network.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Literal, cast

from crewai import Crew
from crewai.memory.storage.backend import StorageBackend
from crewai.memory.types import MemoryMatch, MemoryRecord, ScopeInfo
from crewai.memory.unified_memory import Memory as CrewMemory
from memtrellis import InvalidInputError, Memory, MemoryItem
from memtrellis.binding import AdapterOptions, AdapterStats, Binding
from pydantic import PrivateAttr

__all__ = ["MemtrellisMemory", "MemtrellisStorage", "register"]

#: Metadata key of the CrewAI scope path a memory was saved under.
SCOPE_KEY = "crewai_scope"
#: Metadata key of the agent role that saved a memory.
ROLE_KEY = "agent_role"
_LISTED = 10_000  # most memories one listing walks


def _naive(moment: datetime) -> datetime:
    """CrewAI keeps naive UTC datetimes."""
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def _record_of(item: MemoryItem) -> MemoryRecord:
    """A memtrellis memory as a CrewAI ``MemoryRecord`` (id, text, scope, tags,
    confidence as importance, the session as source)."""
    metadata = dict(item.metadata)
    scope = metadata.pop(SCOPE_KEY, None)
    metadata["memory_type"] = item.memory_type.value
    return MemoryRecord(
        id=item.id,
        content=item.text,
        scope=scope if isinstance(scope, str) and scope else "/",
        categories=[t for t in item.tags if ":" not in t],  # not memtrellis's own mode:fast
        metadata=metadata,
        importance=min(1.0, max(0.0, item.confidence)),
        created_at=_naive(item.created_at),
        last_accessed=_naive(item.last_recalled_at or item.created_at),
        source=item.scope.session_id,
    )


class MemtrellisStorage:
    """CrewAI's ``StorageBackend`` over one entity of a memtrellis ``Memory``.

    It serves what CrewAI's ``Memory`` asks of its storage besides search (listing,
    counting, updating, deleting, resetting); search is by text in memtrellis, and
    `MemtrellisMemory.recall` does it, never a vector handed in.

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     storage = MemtrellisStorage(memory, {"entity_id": "ana"})
        ...     storage.save([MemoryRecord(content="Ana drinks green tea", scope="/crew/c")])
        ...     [r.content for r in storage.list_records()], storage.count("/crew")
        (['Ana drinks green tea'], 1)
    """

    def __init__(self, memory: Memory, scope: dict[str, str], mode: str | None = None) -> None:
        self.memory, self.scope, self.mode = memory, scope, mode

    # -- writing -------------------------------------------------------------------------
    def add(
        self,
        contents: Sequence[str],
        *,
        scope: str | None = None,
        categories: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        agent_role: str | None = None,
    ) -> list[MemoryItem]:
        """Add texts to the entity's memory (extracted as the memory's mode says)."""
        extra: dict[str, Any] = {**(metadata or {}), SCOPE_KEY: scope or "/"}
        if agent_role:
            extra[ROLE_KEY] = agent_role
        items: list[MemoryItem] = []
        for content in contents:
            if content.strip():
                items += self.memory.add(
                    content,
                    tags=list(categories or ()),
                    metadata=extra,
                    mode=self.mode,
                    entity_id=self.scope.get("entity_id"),
                    process_id=self.scope.get("process_id"),
                    session_id=self.scope.get("session_id"),
                )
        return items

    def save(self, records: list[MemoryRecord]) -> None:
        """Add each record's text with its scope, categories and metadata."""
        for record in records:
            self.add(
                [record.content],
                scope=record.scope,
                categories=record.categories,
                metadata=record.metadata,
            )

    def search(self, query_embedding: list[float], **_: Any) -> list[tuple[MemoryRecord, float]]:
        """Not served: memtrellis recalls by text (`MemtrellisMemory.recall`)."""
        raise NotImplementedError("memtrellis recalls by text: use MemtrellisMemory.recall")

    def update(self, record: MemoryRecord) -> None:
        """Replace a memory's text, tags and metadata."""
        metadata = {**record.metadata, SCOPE_KEY: record.scope}
        metadata.pop("memory_type", None)
        self.memory.update(
            record.id,
            text=record.content,
            tags=list(record.categories),
            metadata=metadata,
            confidence=record.importance,
            entity_id=self.scope.get("entity_id"),
        )

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        """Forget the entity's memories that match; returns how many."""
        chosen = [
            r.id
            for r in self.list_records(scope_prefix, limit=_LISTED)
            if (record_ids is None or r.id in record_ids)
            and (not categories or set(categories) & set(r.categories))
            and (older_than is None or r.created_at < _naive(older_than))
            and all(r.metadata.get(k) == v for k, v in (metadata_filter or {}).items())
        ]
        for memory_id in chosen:
            self.memory.forget(memory_id, entity_id=self.scope.get("entity_id"))
        return len(chosen)

    def reset(self, scope_prefix: str | None = None) -> None:
        """Forget the entity's memories under ``scope_prefix``, or all of them."""
        if scope_prefix in (None, "", "/"):
            self.memory.forget(entity_id=self.scope.get("entity_id", "default"))
        else:
            self.delete(scope_prefix)

    # -- reading -------------------------------------------------------------------------
    def get_record(self, record_id: str) -> MemoryRecord | None:
        """One memory by id, or None."""
        try:
            return _record_of(self.memory.get(record_id, entity_id=self.scope.get("entity_id")))
        except Exception:
            return None

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        """The entity's memories under ``scope_prefix``, newest first."""
        items = self.memory.list(
            entity_id=self.scope.get("entity_id"),
            process_id=self.scope.get("process_id"),
            limit=_LISTED,
            filters={"include_superseded": False},
        )
        records = [_record_of(i) for i in reversed(items)]
        records = [r for r in records if _under(r.scope, scope_prefix)]
        return records[offset : offset + limit]

    def count(self, scope_prefix: str | None = None) -> int:
        """How many memories lie under ``scope_prefix``."""
        return len(self.list_records(scope_prefix, limit=_LISTED))

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        """Categories (tags) and their counts."""
        counts: dict[str, int] = {}
        for record in self.list_records(scope_prefix, limit=_LISTED):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The scope paths just under ``parent``."""
        base = parent.rstrip("/")
        found = set()
        for record in self.list_records(parent, limit=_LISTED):
            rest = record.scope[len(base) :].strip("/")
            if rest and record.scope.startswith(base):
                found.add(f"{base}/{rest.split('/')[0]}")
        return sorted(found)

    def get_scope_info(self, scope: str) -> ScopeInfo:
        """How many memories a scope holds, their categories and dates."""
        records = self.list_records(scope, limit=_LISTED)
        dates = [r.created_at for r in records]
        return ScopeInfo(
            path=scope or "/",
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(dates, default=None),
            newest_record=max(dates, default=None),
            child_scopes=self.list_scopes(scope or "/"),
        )


class MemtrellisMemory(CrewMemory):
    """CrewAI's ``Memory``, answered by memtrellis for one entity (see the module).

    Args:
        memory: The memtrellis ``Memory``.
        entity_id: Whose memory (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        session_id: Recorded on what is saved (recall spans sessions).
        k: Default number of memories a recall returns when CrewAI gives no limit.
        mode: Extraction mode of what is saved (``"fast"``/``"fine"``; None: the
            ``Memory``'s default).
        strict: Raise memory failures instead of counting them and going on.
        **fields: CrewAI ``Memory`` fields (``read_only``, ``root_scope``...).

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     crew_memory = MemtrellisMemory(memory, entity_id="ana")
        ...     _ = crew_memory.remember("Ana drinks green tea", categories=["drinks"])
        ...     [m.record.content for m in crew_memory.recall("What does Ana drink?")]
        ['Ana drinks green tea']
    """

    _binding: Binding = PrivateAttr()
    _store: MemtrellisStorage = PrivateAttr()

    def __init__(
        self,
        memory: Memory,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int = 10,
        mode: Literal["fast", "fine"] | None = None,
        strict: bool = False,
        **fields: Any,
    ) -> None:
        options = AdapterOptions(
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            k=k,
            capture_mode=mode,
            strict=strict,
        )
        storage = MemtrellisStorage(memory, options.scope, mode)
        # It serves the storage methods CrewAI's Memory calls (its async twins call the
        # sync methods, and search is recall's, overridden here).
        super().__init__(storage=cast("StorageBackend", storage), **fields)
        self._binding = Binding(memory, options, source="crewai")
        self._store = storage

    def __repr__(self) -> str:
        return f"MemtrellisMemory(entity_id={self._binding.options.entity_id!r})"

    @property
    def stats(self) -> AdapterStats:
        """What this memory did: recalls, captures and the failures it absorbed."""
        return self._binding.stats

    def extract_memories(self, content: str) -> list[str]:
        """The text as it is: memtrellis extracts memories when it is added."""
        return [content] if content.strip() else []

    def recall(
        self,
        query: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        limit: int | None = None,
        depth: Literal["shallow", "deep"] = "deep",
        source: str | None = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """``Memory.recall`` for ``query`` (after pending saves), as CrewAI matches;
        ``[]`` when recall failed (counted) or found nothing."""
        self.drain_writes()
        binding = self._binding
        where = {n: v for n, v in binding.scope().items() if n != "session_id"}
        size = limit or binding.options.k
        try:
            result = binding.memory.recall(query, k=size, tags=categories or None, **where)
        except Exception as exc:
            binding.failed("recall", exc, what="crewai recall")
            return []
        binding.count("call")
        binding.stats.count("recalls")
        matches = [
            MemoryMatch(
                record=_record_of(hit.memory),
                score=hit.score,
                match_reasons=["semantic", "keyword"] + (["graph"] if hit.explanation.path else []),
            )
            for hit in result.items
        ]
        return [m for m in matches if _under(m.record.scope, scope)]

    def update(
        self,
        record_id: str,
        content: str | None = None,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
    ) -> MemoryRecord:
        """Change a memory (``Memory.update``; importance is its confidence).

        Raises:
            ValueError: No memory of the entity has that id (as CrewAI raises).
        """
        existing = self._store.get_record(record_id)
        if existing is None:
            raise ValueError(f"Record not found: {record_id}")
        if self.read_only:
            return existing
        given: dict[str, Any] = {"content": content, "scope": scope, "categories": categories}
        given |= {"metadata": metadata, "importance": importance}
        self._store.update(
            existing.model_copy(update={k: v for k, v in given.items() if v is not None})
        )
        return self._store.get_record(record_id) or existing

    def _save(
        self,
        contents: Sequence[str],
        scope: str | None,
        categories: Sequence[str] | None,
        metadata: dict[str, Any] | None,
        agent_role: str | None,
    ) -> list[MemoryRecord]:
        binding = self._binding
        try:
            items = self._store.add(
                contents, scope=scope, categories=categories, metadata=metadata,
                agent_role=agent_role,
            )  # fmt: skip
        except Exception as exc:
            binding.failed("capture", exc, what="crewai save")
            return []
        binding.count("capture")
        binding.stats.count("captured")
        return [_record_of(item) for item in items]

    def remember(
        self,
        content: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> MemoryRecord | None:
        """Add ``content`` now; the first memory made of it (None when read-only)."""
        if self.read_only:
            return None
        where = _scope_path(root_scope or self.root_scope, scope)
        records = self._save([content], where, categories, metadata, agent_role)
        return records[0] if records else None

    def remember_many(
        self,
        contents: list[str],
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> list[MemoryRecord]:
        """Add ``contents`` in CrewAI's background save pool; returns ``[]`` at once."""
        if not contents or self.read_only:
            return []
        where = _scope_path(root_scope or self.root_scope, scope)
        self._submit_save(self._save, list(contents), where, categories, metadata, agent_role)
        return []


def _under(path: str, prefix: str | None) -> bool:
    """Whether the scope ``path`` lies under ``prefix`` (everything lies under none)."""
    if prefix in (None, "", "/"):
        return True
    return f"{path.rstrip('/')}/".startswith(f"{str(prefix).rstrip('/')}/")


def _scope_path(root: str | None, scope: str | None) -> str:
    parts = [p.strip("/") for p in (root, scope) if p and p.strip("/")]
    return "/" + "/".join(parts)


def register(memory: Memory, obj: Any, **options: Any) -> MemtrellisMemory:
    """Entry point of ``memtrellis.integrations``: ``memory.register(crewai=crew)`` gives
    the CrewAI ``Crew`` ``obj`` a `MemtrellisMemory` (options: its arguments) and returns
    it.

    Raises:
        InvalidInputError: ``obj`` is not a ``crewai.Crew``.

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     register(memory, object(), entity_id="bob")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: the crewai integration gives memory to a crewai.Crew...
    """
    if not isinstance(obj, Crew):
        raise InvalidInputError(
            f"the crewai integration gives memory to a crewai.Crew; got {type(obj).__name__}"
        )
    crew_memory = MemtrellisMemory(memory, **options)
    obj.memory = crew_memory
    obj._memory = crew_memory  # what the crew's agents read (set up when it was made)
    return crew_memory
