"""Deprecated: the client handlers moved to `memtrellis.clients.handlers`.

The one registry of what can be registered is [`memtrellis.registry`][memtrellis.registry];
this module only keeps the old import path (and the entry points of an installation made
before the move) working.

Examples:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     from memtrellis.clients.registry import settings_for
    >>> caught[0].category.__name__
    'DeprecationWarning'
"""

from __future__ import annotations

import warnings
from typing import Any

from memtrellis.clients import handlers as _handlers

__all__: list[str] = []  # nothing new is imported from here

_MOVED = frozenset({"register_anthropic", "register_client", "register_openai", "settings_for"})

#: Names entry points of installations made before the move load without a warning.
_QUIET = frozenset({"register_openai", "register_anthropic"})


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(name)
    if name not in _QUIET:
        warnings.warn(
            f"memtrellis.clients.registry.{name} moved to memtrellis.clients.handlers",
            DeprecationWarning,
            stacklevel=2,
        )
    return getattr(_handlers, name)
