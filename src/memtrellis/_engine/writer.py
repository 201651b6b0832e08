"""How a ``Memory`` writes: extraction results, ready-made items, updates, deletes,
refinement and forgetting an entity. The writer is the one owner of the write lock (the
store's ``writing(entity)``), of the refresh that waits for the index under it, and of the
lifecycle's commit. Works on the engine's `Parts`, never on the ``Memory``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from memtrellis._engine.args import memory_type_arg
from memtrellis._engine.parts import Parts
from memtrellis._progress import bar, progress_arg, shown
from memtrellis.errors import InvalidInputError, MemoryNotFoundError, WriteConflictError
from memtrellis.extraction.fast import FAST_TAG
from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.language import has_cjk
from memtrellis.extraction.model import Mode
from memtrellis.extraction.normalize import check_labels
from memtrellis.extraction.pipeline import ExtractionResult
from memtrellis.extraction.refine import RefineReport, refine_groups
from memtrellis.lifecycle import LifecycleConfig, store_additions
from memtrellis.recall.hybrid import similarity_floor
from memtrellis.store import Expect
from memtrellis.types import (
    TOOL_KINDS,
    EdgeKind,
    MemoryItem,
    Scope,
    SourceRef,
    one_voice,
    utcnow,
    voice_sources,
)

__all__ = ["EMBED_CHUNK", "Spool", "Writer", "conversation_edges", "derive_ids"]

log = logging.getLogger("memtrellis")

#: Texts embedded per call while a progress bar counts them.
EMBED_CHUNK = 128


class Spool(Protocol):
    """What the writer asks of the capture queue: turns purged, an entity's turns dropped."""

    def cancelled(self, entry_id: str) -> bool:
        """Whether ``forget(entity_id=...)`` purged this captured turn."""

    def purge(self, entity_id: str) -> int:
        """Drop an entity's queued and spooled turns; how many."""


def conversation_edges(items: Sequence[MemoryItem]) -> list[tuple[str, str, EdgeKind]]:
    """``follows`` edges between memories of consecutive messages of one conversation.

    Fast mode stores one memory per message, or per burst of one speaker's messages, in
    order; a message's position (its source index) grows within a conversation and
    restarts with the next one. Recall uses the edges to lend a matching message's score
    to its neighbours.
    """
    edges: list[tuple[str, str, EdgeKind]] = []
    previous: MemoryItem | None = None
    for item in items:
        said = one_voice(item.sources, item.text) is not None
        if (
            said
            and previous is not None
            and previous.scope == item.scope
            and (voice_sources(item.sources)[0].index or 0)
            > (voice_sources(previous.sources)[-1].index or 0)
        ):
            edges.append((item.id, previous.id, EdgeKind.FOLLOWS))
        previous = item if said else None
    return edges


def _leave_out_of_burst(item: MemoryItem, known: Callable[[Sequence[SourceRef]], bool]) -> None:
    """Cut the ``known`` messages out of a fast-mode burst, in place (the tools its
    answer rests on stay its sources)."""
    said = voice_sources(item.sources)
    if len(said) < 2 or FAST_TAG not in item.tags:
        return
    if one_voice(item.sources, item.text) is None:
        return
    fresh = [source for source in said if not known([source])]
    if fresh and len(fresh) < len(said):
        item.sources = [*fresh, *(s for s in item.sources if s.kind in TOOL_KINDS)]
        item.text = "\n".join(source.content for source in fresh)
        item.valid_from = fresh[0].timestamp or item.valid_from


def derive_ids(result: ExtractionResult, capture_id: str) -> None:
    """Give a captured turn's memories ids derived from its capture id.

    Replaying the entry after a crash then replaces what it stored instead of storing it
    twice.
    """
    for number, item in enumerate(result.items):
        item.id = uuid.uuid5(uuid.NAMESPACE_URL, f"{capture_id}:{number}").hex


def extraction_options(
    mode: Mode | str | None, memory_type: Any, labels: tuple[Any, Any, Any], progress: Any
) -> dict[str, Any]:
    """The checked options of an ``add``, as the extractor takes them."""
    kind = memory_type_arg(memory_type)  # checked first, then the labels, then progress
    tags, entities, metadata = check_labels(*labels)
    return {
        "mode": mode,
        "memory_type": kind,
        "tags": tags,
        "entities": entities,
        "metadata": metadata,
        "progress": progress_arg(progress),
    }


class Writer:
    """The write side of the engine."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.store = parts.store
        #: The capture queue, once the capturer made it (see `Engine`).
        self.spool: Spool | None = None
        # An English-only embedder (`english_only`) is told of once per open store.
        self._script_noted = not getattr(parts.embedder, "english_only", False)

    def documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The embedder's vectors of ``texts``, after `note_script`."""
        self.note_script(texts)
        return self.parts.embedder.embed_documents(texts)

    def note_script(self, texts: Sequence[str]) -> None:
        """Log, once per open store, that Chinese, Japanese or Korean text is going into a
        store whose embedder reads English only: recall then rests on its keywords, and a
        multilingual embedder recalls far better (``docs/benchmarks.md``)."""
        if self._script_noted or not any(has_cjk(text) for text in texts):
            return
        self._script_noted = True
        embedder = self.parts.embedder
        log.warning(
            "memtrellis: Chinese, Japanese or Korean text is going into a store whose "
            "embedder (%s) reads English only, so recall finds it by its words alone. "
            "A store for such text recalls far better with "
            "Memory(path, embedder='multilingual') (docs/configuration.md, choosing an "
            "embedder); a store keeps the embedder it was built with.",
            embedder.model_id,
        )

    def embed_texts(self, texts: list[str], progress: bool | None) -> list[list[float]]:
        """One embedding call; in chunks counted by a bar when one can be seen."""
        if len(texts) <= EMBED_CHUNK or not shown(progress):
            return self.documents(texts)
        vectors: list[list[float]] = []
        with bar(progress, desc="embedding", total=len(texts), unit="memory") as counted:
            for start in range(0, len(texts), EMBED_CHUNK):
                chunk = texts[start : start + EMBED_CHUNK]
                vectors.extend(self.documents(chunk))
                counted.update(len(chunk))
        return vectors

    def add(
        self,
        data: Any,
        scope: Scope,
        mode: Mode | str | None,
        memory_type: Any,
        labels: tuple[Any, Any, Any],
        progress: Any,
    ) -> list[MemoryItem]:
        """``Memory.add``: check the type and ``labels`` (tags, entities, metadata), extract,
        then store what was found."""
        options = extraction_options(mode, memory_type, labels, progress)
        since = self.store.began(scope.entity_id)  # a forget from now on wins over this add
        result = self.parts.extractor.extract(data, scope, **options)
        self.leave_out_stored_messages(result)
        return self.store_result(result, progress=options["progress"], since=since)

    async def aadd(
        self,
        data: Any,
        scope: Scope,
        mode: Mode | str | None,
        memory_type: Any,
        labels: tuple[Any, Any, Any],
        progress: Any,
    ) -> list[MemoryItem]:
        """``Memory.aadd``: windows extracted concurrently, stored in a worker thread."""
        options = extraction_options(mode, memory_type, labels, progress)
        since = await asyncio.to_thread(self.store.began, scope.entity_id)
        result = await self.parts.extractor.aextract(data, scope, **options)
        await asyncio.to_thread(self.leave_out_stored_messages, result)
        return await asyncio.to_thread(self.store_result, result, None, options["progress"], since)

    def leave_out_stored_messages(self, result: ExtractionResult) -> None:
        """Leave out the memories whose every source is a message (by its id and text)
        that a memory of the same scope already cites, or cited before it was forgotten:
        a resent conversation adds only what is new, and never what was forgotten.
        Messages given without an id get a new one, so they always count. A fast-mode
        burst some of whose messages are stored keeps only the others (its text is
        theirs): a message is never stored twice, though a burst sent one message at a
        time is stored one message at a time."""
        tenants = {item.scope.entity_id for item in result.items}
        for tenant in tenants:
            self.store.refresh(tenant)
            with self.store.reading(tenant) as shard:
                forgotten = shard.graph.forgotten.messages.get(tenant, ())

                def known(
                    item: MemoryItem, sources: Sequence[SourceRef], gone: Any = forgotten
                ) -> bool:
                    return shard.messages.stored(item.scope, sources, shard.graph.item, gone)

                stored = {
                    item.id
                    for item in result.items
                    if item.scope.entity_id == tenant and known(item, item.sources)
                }
                for item in result.items:
                    if item.id not in stored and item.scope.entity_id == tenant:
                        _leave_out_of_burst(item, functools.partial(known, item))
            if stored:
                log.info(
                    "add: %d memories left out: their messages were stored before", len(stored)
                )
                result.items = [item for item in result.items if item.id not in stored]

    def store_result(
        self,
        result: ExtractionResult,
        ids: str | None = None,
        progress: bool | None = False,
        since: Expect | None = None,
    ) -> list[MemoryItem]:
        """Store what an extraction found; ``ids``: the capture id it came from, if any;
        ``since``: `Store.began` when the write began."""
        self.parts.stats.record_extraction(result.skipped, result.fallbacks)
        if not result.items:
            return []
        if ids is not None:
            derive_ids(result, ids)
        embeddings = self.embed_texts([item.search_text() for item in result.items], progress)
        return self.commit_results([(result, ids)], embeddings, since)

    def commit_results(
        self,
        results: Sequence[tuple[ExtractionResult, str | None]],
        embeddings: Sequence[Sequence[float]],
        since: Expect | None = None,
        captured: Mapping[str, datetime] | None = None,
    ) -> list[MemoryItem]:
        """Plan and commit the memories of several extraction results in one store commit.

        ``results`` pairs each result with the capture id it came from (None for ``add``);
        ``embeddings`` holds the vectors of all their items, in order. The results are of
        one mode (it goes into the history events) and of one entity (one commit in its
        shard). A captured turn that ``forget(entity_id=...)`` purged meanwhile is left out,
        and so is everything when the entity was forgotten after ``since`` (`Store.began`
        when the write began; by default when this commit began). ``captured``: when each
        captured turn was captured, by capture id; a turn captured before a forget of its
        entity began (in any process) is left out.
        """
        tenants = {item.scope.entity_id for result, _ in results for item in result.items}
        if len(tenants) != 1:
            if not tenants:
                return []
            raise InvalidInputError("commit_results takes the results of one entity")
        [tenant] = tenants
        with self.store.writing(tenant):
            self.store.refresh(tenant, wait=True)  # the plan compares with the current index
            forgotten_at = self.store.dropped_at(tenant)
            items: list[MemoryItem] = []
            vectors: list[Sequence[float]] = []
            edges: list[tuple[str, str, EdgeKind]] = []
            began: list[datetime] = []
            position = 0
            for result, capture_id in results:
                count = len(result.items)
                at = (captured or {}).get(capture_id or "")
                # forget(entity_id=...) purged this turn while it was being extracted;
                # forget holds the same entity's lock, so the check cannot miss it. A
                # forget in another process is known by when it began.
                spool = self.spool
                purged = (
                    capture_id is not None and spool is not None and spool.cancelled(capture_id)
                )
                before = at is not None and forgotten_at is not None and at < forgotten_at
                if not purged and not before:
                    if at is not None:
                        began.append(at)
                    items.extend(result.items)
                    vectors.extend(embeddings[position : position + count])
                    edges.extend(conversation_edges(result.items))
                position += count
            if not items:
                return []
            if since is None and began:
                since = replace(self.store.began(tenant), began=min(began))
            try:
                outcomes = store_additions(
                    self.store,
                    items,
                    vectors,
                    utcnow(),
                    config=self.lifecycle_config(),
                    relation_judge=self.parts.judge,
                    detail={"mode": results[0][0].mode.value},
                    edges=edges,
                    since=since,
                )
            except WriteConflictError as conflict:
                if not conflict.forgotten:
                    raise
                log.info(
                    "entity %s was forgotten while %d memories were stored: none kept",
                    tenant,
                    len(items),
                )
                return []
        return [outcome.item.detached() for outcome in outcomes]

    def lifecycle_config(self) -> LifecycleConfig:
        """The lifecycle config with its cosine thresholds on the embedder's scale.

        An embedder that declares a `similarity_floor` (unrelated texts reach it, as with
        e5) gets each threshold ``t`` as ``floor + t * (1 - floor)``: the same decision
        as comparing its cosine read from the floor, the way recall reads it.
        """
        config = self.parts.lifecycle
        floor = similarity_floor(self.parts.embedder)
        if not floor:
            return config
        names = ("duplicate_similarity", "support_similarity", "related_similarity")
        return config.model_copy(
            update={name: floor + getattr(config, name) * (1.0 - floor) for name in names}
        )

    def store_item(self, item: MemoryItem, *, lifecycle: bool) -> MemoryItem:
        """``Memory.store`` of a checked item: through the lifecycle unless it replaces one."""
        tenant = item.scope.entity_id
        since = self.store.began(tenant)
        existing = self.store.graph_of(tenant).item(item.id)
        [embedding] = self.documents([item.search_text()])
        if existing is not None or not lifecycle:
            # A replacement only of what is still stored: a forget meanwhile wins.
            expect = replace(since, existing=(item.id,) if existing else ())
            try:
                self.store.put(
                    [item], [embedding], "updated" if existing else "created", expect=expect
                )
            except WriteConflictError as conflict:
                raise MemoryNotFoundError(item.id) from conflict
            return item.detached()
        with self.store.writing(tenant):
            self.store.refresh(tenant, wait=True)
            try:
                [outcome] = store_additions(
                    self.store,
                    [item],
                    [embedding],
                    utcnow(),
                    config=self.lifecycle_config(),
                    relation_judge=self.parts.judge,
                    since=since,
                )
            except WriteConflictError as conflict:  # its entity was forgotten meanwhile
                raise MemoryNotFoundError(item.id) from conflict
        return outcome.item.detached()

    def update_item(self, current: MemoryItem, changes: Mapping[str, Any]) -> MemoryItem:
        """``Memory.update`` of a found memory: re-embedded only when its text changes."""
        data = current.model_dump()
        data.update(changes)
        data["updated_at"] = utcnow()
        try:
            updated = MemoryItem.model_validate(data)
        except ValueError as exc:
            raise InvalidInputError(f"invalid update of {current.id}: {exc}") from exc
        text_changed = updated.text != current.text
        embeddings = self.documents([updated.search_text()]) if text_changed else None
        try:  # only while it is still stored: a forget committed meanwhile wins
            self.store.put(
                [updated],
                embeddings,
                "updated",
                {"fields": sorted(changes)},
                expect=Expect(existing=(current.id,)),
            )
        except WriteConflictError as conflict:
            raise MemoryNotFoundError(current.id) from conflict
        return updated.detached()

    def delete(self, item: MemoryItem) -> int:
        """Delete one found memory; 1."""
        self.store.delete(item.scope.entity_id, [item.id])
        return 1

    def refine(self, tenant: str, limit: int | None) -> RefineReport:
        """Re-extract one entity's fast-mode memories in fine mode; supersede those cited."""
        if self.parts.extractor.llm is None:
            raise InvalidInputError("refine() needs an LLM: Memory(llm=...)")
        self.store.refresh(tenant)
        with self.store.reading(tenant) as shard:
            groups = refine_groups([i.detached() for i in shard.graph.items(tenant)], limit=limit)
        report = RefineReport(conversations=len(groups))
        for group in groups:
            scope = Scope(
                entity_id=tenant, process_id=group.process_id, session_id=group.session_id
            )
            result = self.parts.extractor.extract(group.messages, scope, mode=Mode.FINE)
            result.items = [i for i in result.items if FALLBACK_TAG not in i.tags]
            created = self.store_result(result)
            replaced: dict[str, str] = {}
            for item in created:
                for source in item.sources:
                    old = group.memory_by_message.get(source.message_id or "")
                    if old is not None:
                        replaced.setdefault(old, item.id)
            report.created.extend(i.id for i in created)
            report.kept += len(group.memory_by_message) - len(replaced)
            if replaced:
                self.store.supersede(tenant, replaced)
                report.superseded.extend(replaced)
        return report

    def forget_entity(self, tenant: str) -> int:
        """Remove everything of one entity, its spooled turns included; how many memories.
        A write of the entity begun before this call stores nothing (see `Store.began`)."""
        began = utcnow()
        with self.store.writing(tenant):  # the capture worker stores under this lock too
            purged = self.spool.purge(tenant) if self.spool is not None else 0
            if purged:
                log.info("forget: %d captured turn(s) purged from the spool", purged)
            self.store.refresh(tenant)
            count = len(self.store.graph_of(tenant).memory_ids(tenant))
            self.store.drop_entity(tenant, began=began)
        return count
