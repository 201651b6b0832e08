"""``MemtrellisStore``: a LangGraph ``BaseStore`` on a memtrellis ``Memory`` (needs ``langgraph``).

Each item is one memory. Where it lives:

* **Entity**: the namespace label at ``entity_index`` (default 1, so
  ``("memories", user_id)`` is ``user_id``'s); a namespace too short to have that label
  belongs to the memory's default entity.
* **Process**: the store's ``process_id`` (default the memory's own), the same for every item.
* **Id**: derived from the process, namespace and key, so a ``put`` of the same key replaces.

The memory's text, which recall searches, is the text at the store's ``fields`` (or a
put's ``index`` list) of the value; by default the whole value: its one string field
alone, else a ``field: value`` line per field. The value itself is kept as JSON in the
memory's metadata (``metadata["langgraph_store"]``) and is what ``get`` returns.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)
from memtrellis import InvalidInputError, Memory, MemoryItem, MemoryNotFoundError, MemoryType, Scope

from langchain_memtrellis._defaults import default_memory

__all__ = ["STORE_TAG", "MemtrellisStore"]

STORE_TAG = "langgraph:store"
"""The tag every memory the store writes carries (the store reads only those)."""

_META = "langgraph_store"
_ALL = 1_000_000_000  # Memory.list's limit for "every item of the entity"
_MAX_K = 1000  # recall's largest k


class MemtrellisStore(BaseStore):
    """LangGraph's long-term memory store, kept in memtrellis: ``put``/``get``/``search``/
    ``delete``/``list_namespaces`` and their async forms.

    ``search(namespace_prefix, query=...)`` is memtrellis recall (dense, keyword and graph
    scores fused) within the namespace's entity, its items in recall's order with
    ``score`` set; the prefix's other matches follow unscored, so a page is as full as
    without a query. Without a query, the matching items are listed in the order they
    were first put. ``filter`` compares the value's fields: equality (nested dicts and
    lists too) or ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``. A prefix shorter
    than ``entity_index + 1`` (``()``, say) reads every entity. TTLs are not supported.

    Items are written with ``lifecycle=False``: stored exactly as given, never merged with
    or superseded by a similar memory, so ``get`` returns what was put. Other adapters
    of the same memory (the chat wrapper, the middleware) recall them like any memory of
    the entity and process; ``put(..., index=False)`` keeps an item out of this store's
    query search only.

    Args:
        memory: The store; default the shared ``Memory()``.
        entity_index: Which namespace label names the entity.
        process_id: Process of every item (default the memory's ``process_id``).
        fields: JSON paths of the value whose text recall searches (LangGraph's path
            syntax: ``"text"``, ``"meta.title"``, ``"notes[*].body"``); default the whole
            value. A put's own ``index=[...]`` overrides it for that item.
        memory_type: The type of the stored memories.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import MemtrellisStore
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> store = MemtrellisStore(memory)
        >>> store.put(("memories", "alice"), "pet", {"content": "Alice's cat is Miso"})
        >>> store.get(("memories", "alice"), "pet").value
        {'content': "Alice's cat is Miso"}
        >>> [hit.key for hit in store.search(("memories", "alice"), query="cat name")]
        ['pet']
        >>> [m.text for m in memory.list(entity_id="alice")]
        ["Alice's cat is Miso"]
        >>> memory.close()
    """

    __slots__ = ("entity_index", "fields", "memory", "memory_type", "process_id")

    def __init__(
        self,
        memory: Memory | None = None,
        *,
        entity_index: int = 1,
        process_id: str | None = None,
        fields: Sequence[str] | None = None,
        memory_type: MemoryType | str = MemoryType.FACT,
    ) -> None:
        if isinstance(entity_index, bool) or not isinstance(entity_index, int) or entity_index < 0:
            raise InvalidInputError("entity_index must be a non-negative integer")
        if fields is not None and (
            isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields)
        ):
            raise InvalidInputError("fields must be a list of JSON paths")
        try:
            self.memory_type = MemoryType(memory_type)
        except ValueError as exc:
            raise InvalidInputError(f"unknown memory_type {memory_type!r}") from exc
        self.memory = memory if memory is not None else default_memory()
        self.entity_index = entity_index
        self.fields = list(fields) if fields is not None else None
        default = self.memory.default_scope
        self.process_id = process_id if process_id is not None else default.process_id
        Scope(entity_id=default.entity_id, process_id=self.process_id)  # a valid process id

    # -- batch -----------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; one result per operation (``None`` for a put)."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async [`batch`][langchain_memtrellis.MemtrellisStore.batch], run in a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            if op.value is None:
                self._delete(op.namespace, op.key)
            else:
                self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    # -- where an item lives ---------------------------------------------------------------
    def _entity(self, namespace: tuple[str, ...]) -> str:
        if len(namespace) <= self.entity_index:
            return self.memory.default_scope.entity_id
        label = namespace[self.entity_index]
        try:
            Scope(entity_id=label)
        except ValueError as exc:
            raise InvalidNamespaceError(
                f"label {label!r} of {namespace} cannot name a memtrellis entity: {exc}"
            ) from None
        return label

    def _id(self, namespace: tuple[str, ...], key: str) -> str:
        named = json.dumps([self.process_id, list(namespace), key], ensure_ascii=False)
        return "lgs-" + hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:40]

    def _entities(self, prefix: tuple[str, ...]) -> list[str]:
        """The entities that can hold a namespace starting with ``prefix``."""
        if len(prefix) > self.entity_index and prefix[self.entity_index] != "*":
            return [self._entity(prefix)]
        return self.memory.entities()

    def _items(self, entity: str) -> list[MemoryItem]:
        filters = {"tags": [STORE_TAG]}
        found = self.memory.list(
            entity_id=entity, process_id=self.process_id, limit=_ALL, filters=filters
        )
        return [item for item in found if self._ours(item)]

    def _ours(self, item: MemoryItem) -> bool:
        record = item.metadata.get(_META)
        return (
            STORE_TAG in item.tags
            and isinstance(record, dict)
            and item.scope.process_id == self.process_id
            and item.id == self._id(tuple(record.get("namespace", ())), record.get("key", ""))
        )

    # -- operations ------------------------------------------------------------------------
    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = self._memory_item(namespace, key)
        return _item(found) if found is not None else None

    def _memory_item(self, namespace: tuple[str, ...], key: str) -> MemoryItem | None:
        try:
            found = self.memory.get(self._id(namespace, key), entity_id=self._entity(namespace))
        except MemoryNotFoundError:
            return None
        return found if self._ours(found) else None

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if namespace[0] == "langgraph":  # put() checks this, a batch of ops does not
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph": {namespace}'
            )
        if not isinstance(op.value, Mapping) or not all(isinstance(k, str) for k in op.value):
            raise InvalidInputError("a store value is a mapping with string keys")
        try:  # a copy the caller cannot change afterwards, and proof it is JSON
            value = json.loads(json.dumps(dict(op.value), allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"a store value must be JSON-serializable: {exc}") from None
        if (
            op.index is not None
            and op.index is not False
            and (not isinstance(op.index, list) or not all(isinstance(p, str) for p in op.index))
        ):
            raise InvalidInputError("index is False or a list of JSON paths")
        paths = self.fields if op.index is None or op.index is False else op.index
        existing = self._memory_item(namespace, key)
        record = {"namespace": list(namespace), "key": key, "value": value}
        record["indexed"] = op.index is not False
        now = datetime.now(timezone.utc)
        try:
            item = MemoryItem(
                id=self._id(namespace, key),
                text=index_text(value, paths),
                memory_type=self.memory_type,
                tags=[STORE_TAG],
                scope=Scope(entity_id=self._entity(namespace), process_id=self.process_id),
                confidence=1.0,
                created_at=existing.created_at if existing is not None else now,
                updated_at=now,
                metadata={_META: record},
            )
        except ValueError as exc:
            raise InvalidInputError(f"cannot store {key!r} in {namespace}: {exc}") from None
        self.memory.store(item, lifecycle=False)

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        if self._memory_item(namespace, key) is not None:
            self.memory.forget(self._id(namespace, key), entity_id=self._entity(namespace))

    def _matching(self, op: SearchOp) -> list[MemoryItem]:
        prefix = tuple(op.namespace_prefix)
        return [
            item
            for entity in self._entities(prefix)
            for item in self._items(entity)
            if _starts_with(_record(item)["namespace"], prefix)
            and matches(_record(item)["value"], op.filter)
        ]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError("limit and offset must be non-negative")
        candidates = self._matching(op)
        wanted = op.offset + op.limit
        if not op.query or not op.query.strip() or not candidates:
            chosen = candidates[op.offset : wanted]
            return [_search_item(item, None) for item in chosen]
        ranked = self._ranked(op.query, candidates, wanted)
        seen = {item.id for item, _ in ranked}
        ranked += [(item, None) for item in candidates if item.id not in seen]
        return [_search_item(item, score) for item, score in ranked[op.offset : wanted]]

    def _ranked(
        self, query: str, candidates: list[MemoryItem], wanted: int
    ) -> list[tuple[MemoryItem, float | None]]:
        """The searchable candidates recall finds, best first, until ``wanted`` are found."""
        allowed: dict[str, dict[str, MemoryItem]] = {}
        for item in candidates:
            if _record(item).get("indexed", True):
                allowed.setdefault(item.scope.entity_id, {})[item.id] = item
        found: list[tuple[MemoryItem, float | None]] = []
        for entity, items in allowed.items():
            k = min(_MAX_K, max(2 * wanted, 16))
            while True:
                hits = self.memory.recall(
                    query,
                    entity_id=entity,
                    process_id=self.process_id,
                    k=k,
                    include_superseded=True,
                    include_expired=True,
                ).items
                kept = [(items[h.memory.id], h.score) for h in hits if h.memory.id in items]
                if len(kept) >= min(wanted, len(items)) or len(hits) < k or k == _MAX_K:
                    break
                k = min(_MAX_K, k * 4)
            found += kept
        found.sort(key=lambda pair: -(pair[1] or 0.0))
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefixes = [tuple(c.path) for c in conditions if c.match_type == "prefix"]
        entities = self._entities(prefixes[0] if prefixes else ())
        namespaces = {
            tuple(_record(item)["namespace"]) for entity in entities for item in self._items(entity)
        }
        chosen = {ns for ns in namespaces if all(_meets(c, ns) for c in conditions)}
        if op.max_depth is not None:
            chosen = {ns[: op.max_depth] for ns in chosen}
        return sorted(chosen)[op.offset : op.offset + op.limit]


# -- values ---------------------------------------------------------------------------------
def index_text(value: Mapping[str, Any], paths: Sequence[str] | None) -> str:
    """The text recall searches for a value: the text at ``paths``, else the whole value.

    The whole value (``None`` or ``"$"``) reads as its one string field alone, else as a
    ``field: value`` line per field (values that are not text as compact JSON).

    Examples:
        >>> index_text({"content": "Likes tea"}, None)
        'Likes tea'
        >>> print(index_text({"food": "tea", "level": 3}, None))
        food: tea
        level: 3
        >>> index_text({"a": {"b": "deep"}, "c": "x"}, ["a.b"])
        'deep'
    """
    texts: list[str] = []
    for path in paths or ["$"]:
        if path == "$":
            texts.append(_whole(value))
        else:
            texts += [t for t in get_text_at_path(value, tokenize_path(path)) if t.strip()]
    text = "\n".join(t for t in texts if t.strip())
    return text if text.strip() else _whole(value)


def _whole(value: Mapping[str, Any]) -> str:
    strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
    if len(value) == 1 and strings:
        return strings[0]
    lines = [
        f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in value.items()
    ]
    return "\n".join(lines) if lines else "{}"


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """Whether a value passes a store ``filter``: each field equal or meeting its operators.

    Examples:
        >>> matches({"kind": "pet", "age": 3}, {"kind": "pet", "age": {"$gte": 2}})
        True
        >>> matches({"tags": ["a", "b"]}, {"tags": ["a"]})
        False
    """
    return all(_meets_value(value.get(k), want) for k, want in (conditions or {}).items())


_OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def _meets_value(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping) and want and all(k.startswith("$") for k in want):
        return all(_compare(have, op, operand) for op, operand in want.items())
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(
            _meets_value(have.get(k), v) for k, v in want.items()
        )
    if isinstance(want, (list, tuple)):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(_meets_value(h, w) for h, w in zip(have, want, strict=True))
        )
    if isinstance(have, bool) or isinstance(want, bool):  # JSON: true is not 1
        return have is want
    return bool(have == want)


def _compare(have: Any, op: str, operand: Any) -> bool:
    if op not in _OPERATORS:
        raise InvalidInputError(f"unknown filter operator {op!r}; known: {sorted(_OPERATORS)}")
    if op == "$eq":
        return _meets_value(have, operand)
    if op == "$ne":
        return not _meets_value(have, operand)
    number = _number(have)
    if number is None or _number(operand) is None:
        return False
    bound = float(operand)
    return {"$gt": number > bound, "$gte": number >= bound, "$lt": number < bound}.get(
        op, number <= bound
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# -- items ----------------------------------------------------------------------------------
def _record(item: MemoryItem) -> dict[str, Any]:
    record: dict[str, Any] = item.metadata[_META]
    return record


def _item(found: MemoryItem) -> Item:
    record = _record(found)
    return Item(
        value=copy.deepcopy(record["value"]),
        key=record["key"],
        namespace=tuple(record["namespace"]),
        created_at=found.created_at,
        updated_at=found.updated_at or found.created_at,
    )


def _search_item(found: MemoryItem, score: float | None) -> SearchItem:
    record = _record(found)
    return SearchItem(
        namespace=tuple(record["namespace"]),
        key=record["key"],
        value=copy.deepcopy(record["value"]),
        created_at=found.created_at,
        updated_at=found.updated_at or found.created_at,
        score=score,
    )


def _starts_with(namespace: Sequence[str], prefix: Sequence[str], wildcard: bool = False) -> bool:
    """Whether ``namespace`` begins with ``prefix``; with ``wildcard``, ``"*"`` is any label."""
    return len(namespace) >= len(prefix) and all(
        p == n or (wildcard and p == "*") for n, p in zip(namespace, prefix, strict=False)
    )


def _meets(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if condition.match_type == "prefix":
        return _starts_with(namespace, path, wildcard=True)
    if condition.match_type == "suffix":
        return _starts_with(namespace[::-1], path[::-1], wildcard=True)
    raise InvalidInputError(f"unknown match type {condition.match_type!r}")
