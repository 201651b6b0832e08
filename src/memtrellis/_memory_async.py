"""The async twins of the [`Memory`][memtrellis.Memory] facade's sync methods.

Pure logic is written once: an ``a``-prefixed method runs its sync twin in a worker
thread, so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def in_thread(
    method: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of a sync method: same logic, run off the event loop."""

    async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = f"a{method.__name__}"
    wrapper.__doc__ = f"Async form of `{method.__name__}` (runs in a worker thread)."
    return wrapper
