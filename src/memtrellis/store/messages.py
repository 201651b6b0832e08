"""Which messages a shard's memories came from: an index from message id to memories,
kept beside the keyword index, so that a resent message is found without a scan."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable

from memtrellis.store.forgotten import message_key
from memtrellis.types import MemoryItem, Scope, SourceRef

__all__ = ["MessageIndex"]

#: Finds a stored memory by id (None when there is none).
ItemOf = Callable[[str], MemoryItem | None]


class MessageIndex:
    """Message ids (of chat messages and document chunks) to the memories citing them.

    Examples:
        >>> from memtrellis import MemoryItem, Scope, SourceRef
        >>> said = SourceRef(kind="chat", message_id="m1", role="user", content="I live in Porto")
        >>> item = MemoryItem(text="I live in Porto", scope=Scope(entity_id="ana"), sources=[said])
        >>> index = MessageIndex()
        >>> index.add(item)
        >>> index.stored(item.scope, [said], lambda i: item if i == item.id else None)
        True
        >>> index.remove(item.id)
        >>> index.stored(item.scope, [said], lambda i: item if i == item.id else None)
        False
    """

    def __init__(self) -> None:
        self._memories: dict[str, dict[str, None]] = {}
        self._cited: dict[str, tuple[str, ...]] = {}

    def add(self, item: MemoryItem) -> None:
        """Index ``item``'s sources (replacing what an earlier copy of it cited)."""
        self.remove(item.id)
        cited = tuple(dict.fromkeys(s.message_id for s in item.sources if s.message_id))
        if not cited:
            return
        self._cited[item.id] = cited
        for message_id in cited:
            self._memories.setdefault(message_id, {})[item.id] = None

    def remove(self, memory_id: str) -> None:
        """Forget what ``memory_id`` cited."""
        for message_id in self._cited.pop(memory_id, ()):
            memories = self._memories.get(message_id)
            if memories is not None:
                memories.pop(memory_id, None)
                if not memories:
                    del self._memories[message_id]

    def clear(self) -> None:
        """Forget everything (the entity was forgotten)."""
        self._memories.clear()
        self._cited.clear()

    def stored(
        self,
        scope: Scope,
        sources: Iterable[SourceRef],
        item_of: ItemOf,
        forgotten: Container[str] = (),
    ) -> bool:
        """Whether every source (with a message id) is cited, with the same content, by a
        stored memory of exactly ``scope`` (entity, process and session), or is one of
        the ``forgotten`` (their `message_key`); ``item_of`` finds a memory by id. False
        when no source has a message id."""
        found = False
        for source in sources:
            if not source.message_id:
                return False
            if message_key(scope, source) in forgotten:
                found = True
                continue
            if not any(
                (item := item_of(memory_id)) is not None
                and item.scope == scope
                and any(
                    s.message_id == source.message_id and s.content == source.content
                    for s in item.sources
                )
                for memory_id in self._memories.get(source.message_id, ())
            ):
                return False
            found = True
        return found
