"""Argument checks of the [`Memory`][memtrellis.Memory] facade: store path, scopes and options.

Every check raises [`InvalidInputError`][memtrellis.errors.InvalidInputError] in the
caller, before the store is touched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memtrellis.errors import InvalidInputError
from memtrellis.store.graph import RESERVED_ID_PREFIXES
from memtrellis.types import MemoryItem, MemoryType, Scope, _clean_text

#: Any valid entity id, to check a session id on its own as a scope would.
DEFAULT_ENTITY_ID = "default"
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


def _shown(value: Any) -> str:
    """``value`` for an error message: its repr, cut short."""
    try:
        text = repr(value) if isinstance(value, (str, int, float)) else type(value).__name__
    except ValueError:  # an int of more digits than Python will print
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


_TYPE_NAMES = ", ".join(kind.value for kind in MemoryType)
_LISTS = (list, tuple, set, frozenset)


def memory_type_arg(memory_type: MemoryType | str | None) -> MemoryType | None:
    """The ``memory_type`` an ``add`` names, if any."""
    if memory_type is not None and not isinstance(memory_type, str):
        # MemoryType(x) puts repr(x) in its error: a 10k-deep list would recurse.
        raise InvalidInputError(
            f"memory_type must be one of {_TYPE_NAMES}, not {type(memory_type).__name__}"
        )
    try:
        return MemoryType(memory_type) if memory_type is not None else None
    except ValueError:
        raise InvalidInputError(
            f"unknown memory_type {_shown(memory_type)}; one of {_TYPE_NAMES}"
        ) from None


def _memory_types(name: str, value: Any, *, one: bool) -> frozenset[MemoryType]:
    """The memory types a filter names: a list of them (with ``one``, or a single one)."""
    if one and isinstance(value, str):
        value = [value]
    if isinstance(value, str) or not isinstance(value, _LISTS):
        raise InvalidInputError(
            f"{name} must be a list of memory types ({_TYPE_NAMES}), not {_shown(value)}"
        )
    kinds = set()
    for entry in value:
        if not isinstance(entry, str):
            raise InvalidInputError(f"{name} holds memory type names, not {_shown(entry)}")
        try:
            kinds.add(MemoryType(entry))
        except ValueError:
            raise InvalidInputError(
                f"unknown memory_type {_shown(entry)} in {name}; known: {_TYPE_NAMES}"
            ) from None
    return frozenset(kinds)


def _tags(name: str, value: Any) -> frozenset[str]:
    """The tags a filter names (any of them), cleaned as stored tags are."""
    if isinstance(value, str) or not isinstance(value, _LISTS):
        raise InvalidInputError(f"{name} must be a list of tag strings, not {_shown(value)}")
    odd = [tag for tag in value if not isinstance(tag, str)]
    if odd:
        raise InvalidInputError(
            f"{name} must be strings (a list of tag strings), not {_shown(odd[0])}"
        )
    return frozenset(_clean_text(tag).strip() for tag in value)


def recall_filters(
    memory_types: Any, tags: Any
) -> tuple[frozenset[MemoryType] | None, frozenset[str] | None]:
    """``recall()``'s ``memory_types`` and ``tags`` (any of each; ``None``: no filter)."""
    kinds = None if memory_types is None else _memory_types("memory_types", memory_types, one=False)
    labels = None if tags is None else _tags("tags", tags)
    return kinds, labels


def recall_flags(
    include_superseded: Any, include_expired: Any, graph_context: Any
) -> tuple[bool, bool, bool]:
    """``recall()``'s switches, each True or False (``None``: its default)."""
    flags = {
        "include_superseded": (include_superseded, False),
        "include_expired": (include_expired, False),
        "graph_context": (graph_context, True),
    }
    for name, (value, _) in flags.items():
        if value is not None and not isinstance(value, bool):
            raise InvalidInputError(f"{name} must be True or False, not {_shown(value)}")
    superseded, expired, graph = (
        default if value is None else value for value, default in flags.values()
    )
    return superseded, expired, graph


def _flag(filters: Mapping[str, Any], name: str) -> bool:
    value = filters.get(name)
    if value is None:
        return True  # the default: listed
    if not isinstance(value, bool):
        raise InvalidInputError(f"filter {name!r} must be True or False, not {_shown(value)}")
    return value


def list_filters(limit: Any, offset: Any, filters: Any) -> dict[str, Any]:
    """``list()``'s paging checked and its filters as a dict of known keys, each value
    checked and normalised (``memory_type``: a frozenset of types, ``tags``: of tags)."""
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{name} must be a non-negative integer, not {_shown(value)}")
    known = ", ".join(sorted(LIST_FILTERS))
    if filters is None:
        filters = {}
    if not isinstance(filters, Mapping):
        raise InvalidInputError(
            f"filters must be a dict with keys among {known}, not {_shown(filters)}"
        )
    odd = [key for key in filters if not isinstance(key, str) or key not in LIST_FILTERS]
    if odd:
        names = ", ".join(_shown(key) for key in odd[:5])
        raise InvalidInputError(f"unknown filters {names}; known: {known}")
    checked: dict[str, Any] = {
        "include_superseded": _flag(filters, "include_superseded"),
        "include_expired": _flag(filters, "include_expired"),
    }
    if filters.get("memory_type") is not None:
        checked["memory_type"] = _memory_types("memory_type", filters["memory_type"], one=True)
    if filters.get("tags") is not None:
        checked["tags"] = _tags("tags", filters["tags"])
    for name in ("key", "session_id"):
        value = filters.get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"filter {name!r} must be a string, not {_shown(value)}")
        if value is not None:
            checked[name] = value
    if "session_id" in checked:
        make_scope(DEFAULT_ENTITY_ID, None, checked["session_id"])  # a valid scope id
    return checked


def timeout_arg(timeout: Any) -> float | None:
    """A wait's ``timeout`` in seconds: ``None`` (no limit) or a number, not NaN."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout != timeout:
        raise InvalidInputError(
            f"timeout must be a number of seconds or None, not {_shown(timeout)}"
        )
    return None if timeout >= threading.TIMEOUT_MAX else float(timeout)  # longer: no limit


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
    return query, checked_as_of(as_of)


def context_hint_arg(hint: Any) -> str | None:
    """``recall()``'s ``context_hint``: ``None`` or text (cleaned; blank is ``None``)."""
    if hint is None:
        return None
    if not isinstance(hint, str):
        raise InvalidInputError(f"context_hint must be a string or None, not {_shown(hint)}")
    hint = _clean_text(hint)
    return hint if hint.strip() else None


def checked_as_of(as_of: Any) -> datetime | None:
    """A read's ``as_of``: ``None`` or a datetime (in UTC when naive)."""
    if as_of is None:
        return None
    if not isinstance(as_of, datetime):
        raise InvalidInputError("as_of must be a datetime")
    when: datetime = as_of
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)  # naive times are UTC throughout
    return when


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
