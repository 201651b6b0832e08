"""What a graph keeps of what was forgotten, so that it stays forgotten: per entity, how
many times all of it was forgotten and when the last such forget began (a write begun
before is refused), and keys of the messages its forgotten memories came from (a resent
message is not stored again). Keys are hashes: no forgotten text is kept."""

from __future__ import annotations

import hashlib
from typing import Any

from memtrellis.types import MemoryItem, Scope, SourceRef

__all__ = ["Forgotten", "message_key"]


def message_key(scope: Scope, source: SourceRef) -> str:
    """A key of one message of one scope (entity, process, session): id and text hashed.

    Examples:
        >>> from memtrellis import Scope, SourceRef
        >>> said = SourceRef(kind="chat", message_id="m1", content="I live in Porto")
        >>> len(message_key(Scope(entity_id="ana"), said))
        24
    """
    parts = (scope.entity_id, scope.process_id or "", scope.session_id or "")
    raw = "\0".join((*parts, source.message_id or "", source.content))
    return hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()


class Forgotten:
    """The forgetting a `MemoryGraph` remembers (saved in its snapshot's header).

    Examples:
        >>> from memtrellis import MemoryItem, Scope, SourceRef
        >>> said = SourceRef(kind="chat", message_id="m1", content="I live in Porto")
        >>> item = MemoryItem(text="I live in Porto", scope=Scope(entity_id="ana"), sources=[said])
        >>> forgotten = Forgotten()
        >>> forgotten.memory(item)
        >>> message_key(item.scope, said) in forgotten.messages["ana"]
        True
        >>> forgotten.entity("ana", began=None)
        >>> forgotten.drops
        {'ana': 1}
    """

    def __init__(self) -> None:
        #: entity_id -> how many times everything of it was forgotten.
        self.drops: dict[str, int] = {}
        #: entity_id -> when the last of those forgets began (ISO 8601, microseconds).
        self.dropped_at: dict[str, str] = {}
        #: entity_id -> keys (`message_key`) of the messages of its forgotten memories.
        self.messages: dict[str, set[str]] = {}

    def memory(self, item: MemoryItem) -> None:
        """Note the messages of one forgotten memory."""
        keys = [message_key(item.scope, s) for s in item.sources if s.message_id]
        if keys:
            self.messages.setdefault(item.scope.entity_id, set()).update(keys)

    def entity(self, entity_id: str, *, began: str | None) -> None:
        """Note that everything of ``entity_id`` was forgotten (by a forget begun at
        ``began``)."""
        self.drops[entity_id] = self.drops.get(entity_id, 0) + 1
        if began is not None:
            self.dropped_at[entity_id] = max(began, self.dropped_at.get(entity_id, began))

    def header(self) -> dict[str, Any]:
        """The members of the snapshot's ``graph`` header (none when nothing is noted)."""
        header: dict[str, Any] = {}
        if self.drops:
            header["drops"] = dict(sorted(self.drops.items()))
        if self.dropped_at:
            header["dropped_at"] = dict(sorted(self.dropped_at.items()))
        if self.messages:
            header["forgotten_messages"] = {e: sorted(k) for e, k in sorted(self.messages.items())}
        return header

    def read(self, header: dict[str, Any]) -> None:
        """Take what `header` wrote (a header without it leaves nothing noted)."""
        self.drops = {str(k): int(v) for k, v in header.get("drops", {}).items()}
        self.dropped_at = {str(k): str(v) for k, v in header.get("dropped_at", {}).items()}
        self.messages = {
            str(k): {str(key) for key in v} for k, v in header.get("forgotten_messages", {}).items()
        }

    def absorb(self, other: Forgotten) -> None:
        """Add what ``other`` noted (another entity's graph)."""
        for entity_id, count in other.drops.items():
            self.drops[entity_id] = max(count, self.drops.get(entity_id, 0))
        for entity_id, at in other.dropped_at.items():
            self.dropped_at[entity_id] = max(at, self.dropped_at.get(entity_id, at))
        for entity_id, keys in other.messages.items():
            self.messages.setdefault(entity_id, set()).update(keys)
