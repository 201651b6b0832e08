"""Streams handed back to the user unchanged, chunk by chunk, and captured when they end.

`CapturingStream` and `AsyncCapturingStream` wrap what a ``stream=True``
call returns; `CapturingManager` and `AsyncCapturingManager` wrap a stream
manager such as Anthropic's ``messages.stream``. Each chunk is given to a collector and
then passed on as it came. The turn is captured once, when the stream is used up, closed
early (``close()``, leaving a ``with`` block, or a ``for`` loop left with ``break``) or
left by an error; a stream closed early is captured with what arrived until then.

Every other attribute is read from the wrapped stream, and ``isinstance`` sees the
wrapped stream's class, so code that inspects the stream keeps working.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtrellis.clients.payload import Collector, Reply

__all__ = [
    "AsyncCapturingManager",
    "AsyncCapturingStream",
    "CapturingManager",
    "CapturingStream",
    "wrap_stream",
]

log = logging.getLogger("memtrellis")


class _Proxy:
    """Reads every attribute it does not define from the wrapped object."""

    def __init__(self, inner: Any, collector: Collector, ended: Callable[[Reply], None]) -> None:
        self._inner = inner
        self._collector = collector
        self._ended = ended
        self._done = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return type(self._inner)

    def __repr__(self) -> str:
        return f"<memtrellis capturing {self._inner!r}>"

    def _feed(self, chunk: Any) -> None:
        try:
            self._collector.feed(chunk)
        except Exception as exc:  # an odd chunk must never break the user's stream
            log.debug("memtrellis could not read a stream chunk: %r", exc)

    def _end(self, complete: bool) -> None:
        if self._done:
            return
        self._done = True
        self._ended(self._collector.reply(complete))


class CapturingStream(_Proxy):
    """A sync stream passed through chunk by chunk, captured when it ends."""

    def __iter__(self) -> Iterator[Any]:
        complete = False
        try:
            for chunk in self._inner:
                self._feed(chunk)
                yield chunk
            complete = True
        finally:
            self._end(complete)

    def __next__(self) -> Any:
        try:
            chunk = next(self._inner)
        except StopIteration:
            self._end(True)
            raise
        self._feed(chunk)
        return chunk

    def close(self) -> None:
        """Close the wrapped stream; the turn is captured with what arrived."""
        try:
            self._inner.close()
        finally:
            self._end(False)

    def __enter__(self) -> CapturingStream:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        try:
            return self._inner.__exit__(*exc)
        finally:
            self._end(False)


class AsyncCapturingStream(_Proxy):
    """An async stream passed through chunk by chunk, captured when it ends."""

    async def __aiter__(self) -> AsyncIterator[Any]:
        complete = False
        try:
            async for chunk in self._inner:
                self._feed(chunk)
                yield chunk
            complete = True
        finally:
            self._end(complete)

    async def __anext__(self) -> Any:
        try:
            chunk = await self._inner.__anext__()
        except StopAsyncIteration:
            self._end(True)
            raise
        self._feed(chunk)
        return chunk

    async def close(self) -> None:
        """Close the wrapped stream; the turn is captured with what arrived."""
        try:
            closing = getattr(self._inner, "close", None) or self._inner.aclose
            await closing()
        finally:
            self._end(False)

    async def aclose(self) -> None:
        """`close`, by the name async generators use (Google's and Ollama's streams)."""
        try:
            closing = getattr(self._inner, "aclose", None) or self._inner.close
            await closing()
        finally:
            self._end(False)

    async def __aenter__(self) -> AsyncCapturingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        try:
            return await self._inner.__aexit__(*exc)
        finally:
            self._end(False)


def wrap_stream(
    stream: Any,
    collector: Collector,
    ended: Callable[[Reply], None],
    *,
    asynchronous: bool | None = None,
) -> Any:
    """``stream`` wrapped to capture at its end: async for an async call's stream
    (``asynchronous``), else when it is an async iterator. LiteLLM's stream is both an
    iterator and an async iterator: the call that made it decides."""
    if asynchronous is not None:
        wrapper = AsyncCapturingStream if asynchronous else CapturingStream
        return wrapper(stream, collector, ended)
    if hasattr(stream, "__anext__") or hasattr(stream, "__aiter__"):
        return AsyncCapturingStream(stream, collector, ended)
    return CapturingStream(stream, collector, ended)


class CapturingManager:
    """A stream manager opened on ``with``; its stream is captured when the block ends.

    Recall and placement run when the block is entered (``open_manager`` calls the
    original method), and the user gets the SDK's own stream object.
    """

    def __init__(self, open_manager: Callable[[], Any], ended: Callable[[Any], None]) -> None:
        self._open = open_manager
        self._ended = ended
        self._manager: Any = None
        self._stream: Any = None

    def __enter__(self) -> Any:
        self._manager = self._open()
        self._stream = self._manager.__enter__()
        return self._stream

    def __exit__(self, *exc: object) -> Any:
        try:
            return self._manager.__exit__(*exc)
        finally:
            self._ended(self._stream)


class AsyncCapturingManager:
    """Async `CapturingManager` (``async with``); recall runs off the event loop."""

    def __init__(
        self, open_manager: Callable[[], Awaitable[Any]], ended: Callable[[Any], None]
    ) -> None:
        self._open = open_manager
        self._ended = ended
        self._manager: Any = None
        self._stream: Any = None

    async def __aenter__(self) -> Any:
        self._manager = await self._open()
        self._stream = await self._manager.__aenter__()
        return self._stream

    async def __aexit__(self, *exc: object) -> Any:
        try:
            return await self._manager.__aexit__(*exc)
        finally:
            self._ended(self._stream)
