"""The latest messages of one session of one entity: what ``Memory.session_turns`` reads.

A session's history is what memory holds of its messages: the chat messages its stored
memories were made from (their sources), and the turns this process captured for it that
the background worker has not stored yet (the spool's open entries), so that a turn
captured a moment ago is already there. A message is known by its id, so one stored
while it is read is not counted twice (the spool is read first). A forgotten memory takes
its messages with it, unless another memory of the session rests on them too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from memtrellis.extraction.normalize import normalize
from memtrellis.store import Store
from memtrellis.types import Scope, SourceKind, SourceRef

__all__ = ["CONVERSATION_ROLES", "pending_turns", "session_turns", "stored_turns"]

#: The roles a session's history keeps: what the people in the conversation said.
CONVERSATION_ROLES = frozenset({"user", "assistant"})
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


def _in_scope(ids: tuple[Any, Any, Any], wanted: Scope, session_id: str) -> bool:
    """Whether ``(entity_id, process_id, session_id)`` is the session's (any process when
    ``wanted`` names none)."""
    entity_id, process_id, session = ids
    return (
        entity_id == wanted.entity_id
        and session == session_id
        and (wanted.process_id is None or process_id == wanted.process_id)
    )


def pending_turns(
    entries: Iterable[Mapping[str, Any]], scope: Scope, session_id: str
) -> list[SourceRef]:
    """The messages of captured turns not stored yet (spooled entries) of the session."""
    found: list[SourceRef] = []
    for entry in entries:
        where: Mapping[str, Any] = entry.get("scope") or {}
        ids = (where.get("entity_id"), where.get("process_id"), where.get("session_id"))
        if not _in_scope(ids, scope, session_id):
            continue
        try:
            read = normalize(entry["data"], now=datetime.fromisoformat(entry["at"]))
        except Exception:  # it was checked when captured; a history is no place to fail
            continue
        found.extend(turn.source() for turns in read.conversations for turn in turns)
    return found


def stored_turns(store: Store, scope: Scope, session_id: str, limit: int) -> list[SourceRef]:
    """The chat sources of the session's stored memories, the newest stored first, until
    ``limit`` distinct messages are found."""
    entity_id = scope.entity_id
    store.refresh(entity_id)
    found: dict[str, SourceRef] = {}
    with store.reading(entity_id) as shard:
        graph = shard.graph
        for memory_id in graph.newest_ids(entity_id):
            item = graph.item(memory_id)
            if item is None:
                continue
            ids = (item.scope.entity_id, item.scope.process_id, item.scope.session_id)
            if not _in_scope(ids, scope, session_id):
                continue
            for source in item.sources:
                if source.kind is SourceKind.CHAT and source.message_id:
                    found.setdefault(source.message_id, source)
            if len(found) >= limit:
                break
    return list(found.values())


def session_turns(
    pending: Iterable[SourceRef], stored: Iterable[SourceRef], limit: int
) -> list[SourceRef]:
    """The latest ``limit`` user and assistant messages of ``pending`` and ``stored``
    (one per message id), oldest first."""
    by_id: dict[str, SourceRef] = {}
    for source in (*pending, *stored):
        if source.role in CONVERSATION_ROLES and source.content.strip() and source.message_id:
            by_id.setdefault(source.message_id, source)
    ordered = sorted(by_id.values(), key=lambda s: (s.timestamp or _EARLIEST, s.index or 0))
    return ordered[-limit:] if limit else []
