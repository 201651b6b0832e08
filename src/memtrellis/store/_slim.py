"""What the graph keeps in RAM per memory, made smaller without changing any value.

A stored item loaded from JSON carries its own copy of everything: the set of its field
names (pydantic's ``__pydantic_fields_set__``, 700 bytes), its ``Scope`` object, the role
and tag strings, its source's excerpt (in fast mode the very text of the memory) and
history events as pydantic objects. [`Slimmer.item`][memtrellis.store._slim.Slimmer.item]
replaces each of those by an equal value shared with the other items, in place; a
memory's history is kept as the JSON text the snapshot holds (see
[`history_bytes`][memtrellis.store._slim.history_bytes]) and decoded when asked for.

Nothing here changes what an item reads as, compares as or dumps as: a value is shared
only when it is equal (and, for times, in the same zone), and pydantic only ever adds
field names it already holds to a full fields set. Times in UTC take Python's own
``timezone.utc`` (see [`utc_zone`][memtrellis.store._slim.utc_zone]).
"""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from memtrellis.types import HistoryEvent, MemoryItem, Scope, SourceRef

__all__ = [
    "EMPTY_HISTORY",
    "Slimmer",
    "add_event",
    "dumps",
    "history_bytes",
    "read_history",
    "utc_zone",
]

#: A memory without events.
EMPTY_HISTORY = b"[]"
# One set of all field names, shared by every item that has all of them set (every item
# read from a snapshot or the log): pydantic adds to it only names it already holds.
_ITEM_FIELDS: set[str] = set(MemoryItem.model_fields)
_SOURCE_FIELDS: set[str] = set(SourceRef.model_fields)
_SCOPE_FIELDS: set[str] = set(Scope.model_fields)
_ScopeKey = tuple[str, str | None, str | None]
_TIMES = ("created_at", "updated_at", "last_recalled_at")
_BOUNDS = ("valid_from", "valid_until")
_ZERO = timedelta(0)


def utc_zone(value: datetime) -> datetime:
    """``value`` in Python's own ``timezone.utc`` when it is a UTC time under another zone
    object (pydantic's ``TzInfo(0)``, which every time read from JSON carries); any other
    time as it is. The same instant, printed and dumped the same way.

    Comparing two times of different zone objects asks each zone for its offset, ten
    times the cost of comparing two times of one zone, and recall compares the validity
    of hundreds of memories per query with ``utcnow()``, which is in ``timezone.utc``.

    Examples:
        >>> from pydantic import TypeAdapter
        >>> parsed = TypeAdapter(datetime).validate_json('"2026-01-01T00:00:00Z"')
        >>> moved = utc_zone(parsed)
        >>> moved.tzinfo is timezone.utc, moved == parsed, moved.isoformat() == parsed.isoformat()
        (True, True, True)
    """
    zone = value.tzinfo
    if zone is None or zone is timezone.utc or zone.utcoffset(value) != _ZERO:
        return value
    return value.replace(tzinfo=timezone.utc)


def dumps(value: Any) -> str:
    """JSON as the snapshot writes it: compact separators, ASCII only.

    Examples:
        >>> dumps({"at": "2025-09-14T00:00:00Z", "detail": {"city": "Pôrto"}})
        '{"at":"2025-09-14T00:00:00Z","detail":{"city":"P\\\\u00f4rto"}}'
    """
    return json.dumps(value, separators=(",", ":"))


def history_bytes(events: Iterable[dict[str, Any]]) -> bytes:
    """The JSON list of dumped events (``model_dump(mode="json")``), as bytes.

    Byte for byte what ``dumps`` writes for the same list, so a snapshot can splice it in.

    Examples:
        >>> history_bytes([{"action": "created"}, {"action": "updated"}])
        b'[{"action":"created"},{"action":"updated"}]'
        >>> history_bytes([]) == EMPTY_HISTORY
        True
    """
    return dumps(list(events)).encode("ascii")


def add_event(history: bytes, event: HistoryEvent) -> bytes:
    """``history`` with ``event`` appended.

    Examples:
        >>> from datetime import datetime, timezone
        >>> at = datetime(2025, 9, 14, tzinfo=timezone.utc)
        >>> add_event(EMPTY_HISTORY, HistoryEvent(at=at, action="created"))
        b'[{"at":"2025-09-14T00:00:00Z","action":"created","detail":{}}]'
    """
    record = dumps(event.model_dump(mode="json")).encode("ascii")
    if history == EMPTY_HISTORY:
        return b"[" + record + b"]"
    return history[:-1] + b"," + record + b"]"


def read_history(history: bytes) -> list[HistoryEvent]:
    """The events of a history written by `history_bytes` or `add_event`, oldest first.

    Examples:
        >>> [e.action for e in read_history(b'[{"at":"2025-09-14T00:00:00Z","action":"created"}]')]
        ['created']
    """
    return [HistoryEvent.model_validate(event) for event in json.loads(history)]


def _share_strings(values: list[str]) -> None:
    for index, value in enumerate(values):
        if type(value) is str:
            values[index] = sys.intern(value)


class Slimmer:
    """Shares equal parts among the items of one graph (scopes, field sets, strings).

    Examples:
        >>> from memtrellis.types import utcnow
        >>> now = utcnow()
        >>> def loaded(text):  # as read from a snapshot: every field set
        ...     item = MemoryItem(text=text, scope=Scope(entity_id="u"), created_at=now)
        ...     return MemoryItem.model_validate(item.model_dump(mode="json"))
        >>> slim, a, b = Slimmer(), loaded("x"), loaded("y")
        >>> slim.item(a); slim.item(b)
        >>> a.scope is b.scope, a.model_fields_set is b.model_fields_set
        (True, True)
        >>> a.created_at is b.created_at  # made together: one datetime object
        True
        >>> a.scope == Scope(entity_id="u"), b.model_dump()["text"]
        (True, 'y')
    """

    __slots__ = ("_scopes", "_times")

    def __init__(self) -> None:
        self._scopes: dict[_ScopeKey, Scope] = {}
        # The last few times seen: the items of one add() (consecutive in a snapshot)
        # share their creation time, and an update or recall of several its time.
        self._times: deque[datetime] = deque(maxlen=4)

    def forget(self, entity_id: str) -> None:
        """Drop the shared scopes of one entity (all its memories are gone).

        Examples:
            >>> Slimmer().forget("u")
        """
        for key in [key for key in self._scopes if key[0] == entity_id]:
            del self._scopes[key]

    def item(self, item: MemoryItem) -> None:
        """Share what ``item`` holds with the items seen before, in place.

        Examples:
            >>> from memtrellis.types import SourceRef
            >>> source = SourceRef(kind="chat", role="user", content="I moved to Porto")
            >>> scope = Scope(entity_id="u")
            >>> item = MemoryItem(text="I moved to Porto", sources=[source], scope=scope)
            >>> Slimmer().item(item)
            >>> item.sources[0].content is item.text
            True
        """
        values = item.__dict__
        if item.__pydantic_fields_set__ == _ITEM_FIELDS:
            object.__setattr__(item, "__pydantic_fields_set__", _ITEM_FIELDS)
        scope: Scope = values["scope"]
        if scope.__pydantic_fields_set__ == _SCOPE_FIELDS:
            key = (scope.entity_id, scope.process_id, scope.session_id)
            values["scope"] = self._scopes.setdefault(key, scope)
        for name in _TIMES:
            if values[name] is not None:
                values[name] = self._time(utc_zone(values[name]))
        for name in _BOUNDS:
            if values[name] is not None:
                values[name] = utc_zone(values[name])
        _share_strings(values["tags"])
        _share_strings(values["entities"])
        if values["key"] is not None:
            values["key"] = sys.intern(values["key"])
        for source in values["sources"]:
            self._source(source, item)

    def _time(self, value: datetime) -> datetime:
        for known in self._times:
            if known == value and known.tzinfo is value.tzinfo:
                return known
        self._times.appendleft(value)
        return value

    @staticmethod
    def _source(source: SourceRef, item: MemoryItem) -> None:
        # SourceRef is frozen: its values are swapped for equal ones in its __dict__.
        values = source.__dict__
        if source.__pydantic_fields_set__ == _SOURCE_FIELDS:
            object.__setattr__(source, "__pydantic_fields_set__", _SOURCE_FIELDS)
        if values["content"] == item.text:
            values["content"] = item.text
        for name in ("role", "speaker", "document"):
            if type(values[name]) is str:
                values[name] = sys.intern(values[name])
        stamp, valid_from = values["timestamp"], item.valid_from
        if stamp is not None:
            stamp = values["timestamp"] = utc_zone(stamp)
        if (
            stamp is not None
            and valid_from is not None
            and stamp == valid_from
            and stamp.tzinfo is valid_from.tzinfo
        ):
            values["timestamp"] = valid_from
