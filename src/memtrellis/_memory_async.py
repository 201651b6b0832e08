"""The async twins of the [`Memory`][memtrellis.Memory] facade's sync methods.

Pure logic is written once: an ``a``-prefixed method runs its sync twin in a worker
thread, so the event loop never blocks.

Reads (recall, get, list, ...) run in a small pool of this package's own rather than the
loop's default executor. Their work is Python holding the GIL, so more threads than this
add no throughput; they only add contenders for the GIL that the event loop's thread must
win back after every timer (with 20 users recalling at once, the default executor's six
threads doubled the loop's lag p99 against two; ``benchmarks/event_loop.py``). And the
app's own ``to_thread`` work never queues behind memory reads. Writes and waits (flush,
close, refine) may wait for a writer lock, the capture queue or an LLM, so they keep the
default executor and never hold up a read.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from typing_extensions import Self

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

#: Threads that run async reads, for every Memory of the process.
READ_WORKERS = 2

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _read_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                READ_WORKERS, thread_name_prefix="memtrellis-read"
            )
        return _pool


def in_thread(
    method: Callable[Concatenate[S, P], R], *, read: bool = False
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of a sync method: same logic, run off the event loop.

    ``read=True`` runs it in the read pool (see the module docstring), with the caller's
    context variables as ``asyncio.to_thread`` would pass them.

    Examples:
        >>> import asyncio
        >>> class Box:
        ...     def get(self, x: int) -> int:
        ...         return x + 1
        ...     aget = in_thread(get, read=True)
        >>> asyncio.run(Box().aget(1))
        2
    """

    if read:

        async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            call = functools.partial(contextvars.copy_context().run, method, self, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(_read_pool(), call)

    else:

        async def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return await asyncio.to_thread(method, self, *args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = f"a{method.__name__}"
    wrapper.__doc__ = f"Async form of `{method.__name__}` (runs in a worker thread)."
    return wrapper


class Closing:
    """``with`` and ``async with`` (closing in a worker thread) for an object with ``close``.

    Examples:
        >>> import asyncio
        >>> class Door(Closing):
        ...     def close(self) -> None:
        ...         print("closed")
        >>> with Door():
        ...     pass
        closed
        >>> async def main() -> None:
        ...     async with Door():
        ...         pass
        >>> asyncio.run(main())
        closed
    """

    def close(self) -> None:
        """Release what the object holds (subclasses define it)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)
