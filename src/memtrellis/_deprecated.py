"""Old names kept working after a rename, each use warned with a ``DeprecationWarning``.

A leaf module every layer may import: it imports nothing of memtrellis.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["module_aliases", "renamed", "renamed_argument", "renamed_fields"]


def renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is now called ``new``."""
    warnings.warn(
        f"{old} is deprecated; use {new} (same meaning)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_fields(owner: str, data: Any, renames: Mapping[str, str]) -> Any:
    """``data`` (a model's input) with its old field names turned into the new ones.

    For a pydantic ``model_validator(mode="before")``; a value given under both names is
    an error rather than a silent choice.
    """
    if not isinstance(data, dict) or not any(old in data for old in renames):
        return data
    data = dict(data)
    for old, new in renames.items():
        if old in data:
            renamed(f"{owner}.{old}", f"{owner}.{new}", stacklevel=6)
            if new in data:
                raise ValueError(f"give {new} or its old name {old}, not both")
            data[new] = data.pop(old)
    return data


def renamed_argument(function: str, kwargs: dict[str, Any], old: str, new: str, value: Any) -> Any:
    """``value`` of the keyword argument ``new``, or the one given under ``old`` (warned).

    ``kwargs`` is the function's ``**kwargs``; anything else in it is an error, as it
    would be without the catch-all.
    """
    if old in kwargs:
        renamed(f"{function}({old}=)", f"{function}({new}=)", stacklevel=4)
        if value is not None:
            raise TypeError(f"{function}() takes {new}= or its old name {old}=, not both")
        value = kwargs.pop(old)
    if kwargs:
        raise TypeError(f"{function}() got unexpected keyword arguments {sorted(kwargs)}")
    return value


def module_aliases(module: str, aliases: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving old names: ``{"old": "package.module:new"}``."""

    def __getattr__(name: str) -> Any:
        target = aliases.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, _, new = target.partition(":")
        renamed(f"{module}.{name}", f"{where}.{new}")
        return getattr(importlib.import_module(where), new)

    return __getattr__
