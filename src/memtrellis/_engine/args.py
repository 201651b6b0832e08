"""Argument checks of the [`Memory`][memtrellis.Memory] facade: store path, scopes and options.

Every check raises [`InvalidInputError`][memtrellis.errors.InvalidInputError] in the
caller, before the store is touched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memtrellis.errors import InvalidInputError
from memtrellis.store.graph import RESERVED_ID_PREFIXES
from memtrellis.types import MemoryItem, MemoryType, Scope, _clean_text

LIST_FILTERS = frozenset(
    {"memory_type", "tags", "key", "include_superseded", "include_expired", "session_id"}
)


def given(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were given (not None)."""
    return {name: value for name, value in values.items() if value is not None}


def default_store_path() -> Path:
    """``$MEMTRELLIS_HOME`` when set, else ``./.memtrellis``."""
    return Path(os.environ.get("MEMTRELLIS_HOME") or ".memtrellis")


def store_path(path: Any) -> Path:
    """The store directory a ``Memory`` was given, or ``InvalidInputError``."""
    if path is None:
        return default_store_path()
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise InvalidInputError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    if "\x00" in text or any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise InvalidInputError("path must not contain NUL or lone surrogates")
    return Path(text)


def make_scope(entity_id: Any, process_id: Any, session_id: Any) -> Scope:
    """A checked ``Scope`` of the three ids (each a string or None)."""
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


def memory_type_arg(memory_type: MemoryType | str | None) -> MemoryType | None:
    """The ``memory_type`` an ``add`` names, if any."""
    if memory_type is not None and not isinstance(memory_type, str):
        # MemoryType(x) puts repr(x) in its error: a 10k-deep list would recurse.
        raise InvalidInputError(f"memory_type must be text, not {type(memory_type).__name__}")
    try:
        return MemoryType(memory_type) if memory_type is not None else None
    except ValueError as exc:
        raise InvalidInputError(f"unknown memory_type {memory_type!r}") from exc


def recall_filters(
    memory_types: Any, tags: Any
) -> tuple[frozenset[MemoryType] | None, frozenset[str] | None]:
    """``recall()``'s ``memory_types`` and ``tags`` (any of each; ``None``: no filter)."""
    kinds: frozenset[MemoryType] | None = None
    if memory_types is not None:
        if isinstance(memory_types, str) or not isinstance(
            memory_types, (list, tuple, set, frozenset)
        ):
            raise InvalidInputError("memory_types must be a list of memory types")
        kinds = frozenset(t for t in map(memory_type_arg, memory_types) if t is not None)
    labels: frozenset[str] | None = None
    if tags is not None:
        if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
            raise InvalidInputError("tags must be a list of tags")
        if not all(isinstance(tag, str) for tag in tags):
            raise InvalidInputError("tags must be strings")
        labels = frozenset(_clean_text(tag).strip() for tag in tags)
    return kinds, labels


def list_filters(limit: Any, offset: Any, filters: Mapping[str, Any] | None) -> dict[str, Any]:
    """``list()``'s paging checked and its filters as a dict of known keys."""
    if not isinstance(limit, int) or not isinstance(offset, int) or limit < 0 or offset < 0:
        raise InvalidInputError("limit and offset must be non-negative integers")
    checked = dict(filters or {})
    unknown = set(checked) - LIST_FILTERS
    if unknown:
        raise InvalidInputError(f"unknown filters {sorted(unknown)}; known: {sorted(LIST_FILTERS)}")
    return checked


def recall_args(query: Any, k: Any, token_budget: Any, as_of: Any) -> tuple[str, datetime | None]:
    """``recall()``'s query (cleaned) and ``as_of`` (in UTC when naive), the rest checked."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("recall() needs a non-empty query string")
    query = _clean_text(query)  # a lone surrogate cannot be embedded or tokenised
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidInputError("k must be an integer from 1 to 1000")
    if token_budget is not None and (
        isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0
    ):
        raise InvalidInputError("token_budget must be a non-negative integer or None")
    if as_of is not None:
        if not isinstance(as_of, datetime):
            raise InvalidInputError("as_of must be a datetime")
        if as_of.tzinfo is None:
            as_of = as_of.replace(tzinfo=timezone.utc)  # naive times are UTC throughout
    return query, as_of


def ready_item(item: Any) -> MemoryItem:
    """The item ``store()`` was given, validated, with an id that names no subject node."""
    if not isinstance(item, MemoryItem):
        raise InvalidInputError(f"store() takes a MemoryItem, not {type(item).__name__}")
    try:  # an item made with model_construct has not been validated yet
        checked = MemoryItem.model_validate(item.model_dump())
    except ValueError as exc:
        raise InvalidInputError(f"store() got an invalid MemoryItem: {exc}") from exc
    if checked.id.startswith(RESERVED_ID_PREFIXES):
        # Such an id names a subject node of the graph (or did, before the rename),
        # perhaps another entity's: storing it would turn that node into this memory.
        raise InvalidInputError(
            f"memory id {checked.id!r} is reserved: ids starting with "
            f"{' or '.join(map(repr, RESERVED_ID_PREFIXES))} name the graph's subject nodes"
        )
    return checked
