"""``Memory(path, engine_process=True)``: the same facade, its engine in a child process.

The store, recall, the capture worker and the embedder run in a child process
(`memtrellis._memory_child`); this process keeps only what is the app's: the
``scope()`` blocks (context variables), ``on_close`` hooks, registered clients and the
adapters' counters. Every other call goes to the child by name with its scope resolved
here (an argument not given takes the active ``scope()`` block's value, as in process),
and comes back as the same public types, or as the same typed error. Async calls await
the reply on the running loop (`memtrellis._engine.channel`), so an asyncio app's loop
never waits for the GIL because of memtrellis: no thread of the app's process runs or
waits for memory work, and the engine's objects (Chroma, onnxruntime, the tokenizer)
are not in the app's heap for its garbage collector to walk.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import weakref
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from memtrellis._deprecated import renamed
from memtrellis._engine import args as _args
from memtrellis._engine.channel import EngineChannel
from memtrellis._engine.scopes import Scopes
from memtrellis._engine.stats import FacadeStats
from memtrellis.errors import InvalidInputError
from memtrellis.memory import Memory
from memtrellis.types import Health, Scope

__all__ = ["ProcessMemory"]

log = logging.getLogger("memtrellis")

_ALL = ("entity_id", "process_id", "session_id")
_EP = ("entity_id", "process_id")
_E = ("entity_id",)
#: The options of ``Memory`` that the child is opened with (all but the scope and path).
_OPTIONS = frozenset(inspect.signature(Memory.__init__).parameters) - {
    "self",
    "path",
    "entity_id",
    "process_id",
    "session_id",
    "engine_process",
}


class _Local:
    """What stays in the app's process: scopes, adapters' counters, ``on_close`` hooks."""

    def __init__(self, default: Scope) -> None:
        self.scopes = Scopes(default)
        self.stats = FacadeStats()
        self._hooks: dict[int, Callable[[], object]] = {}
        self._next = 0

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        if not callable(callback):
            raise InvalidInputError(f"on_close takes a function, not {type(callback).__name__}")
        ticket, self._next = self._next, self._next + 1
        self._hooks[ticket] = callback
        return lambda: self._hooks.pop(ticket, None) and None

    def run_close_hooks(self) -> None:
        while self._hooks:
            hook = self._hooks.pop(max(self._hooks))
            try:
                hook()
            except Exception:
                log.warning("memtrellis: an on_close hook failed", exc_info=True)


class _RemoteEmbedder:
    """The child's embedder, seen from here (``memory.embedder``)."""

    def __init__(self, channel: EngineChannel, model_id: str, dimension: int) -> None:
        self._channel, self.model_id, self.dimension = channel, model_id, dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``, computed by the engine process."""
        return list(self._channel.call("embed", ("embed_documents", list(texts)), {}))

    def embed_query(self, text: str) -> list[float]:
        """The vector of one query, computed by the engine process."""
        return list(self._channel.call("embed", ("embed_query", text), {}))


def _forward(name: str, fill: tuple[str, ...] = ()) -> Callable[..., Any]:
    def method(self: ProcessMemory, /, *args: Any, **kwargs: Any) -> Any:
        return self._channel.call(name, args, self._filled(fill, kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"[`Memory.{name}`][memtrellis.Memory.{name}], run by the engine process."
    return method


def _aforward(
    name: str, fill: tuple[str, ...] = (), remote: str | None = None
) -> Callable[..., Coroutine[Any, Any, Any]]:
    called = remote or name

    async def method(self: ProcessMemory, /, *args: Any, **kwargs: Any) -> Any:
        return await self._channel.acall(called, args, self._filled(fill, kwargs))

    twin = "a" + name
    method.__name__ = method.__qualname__ = twin
    method.__doc__ = f"Async `{name}`: the reply is awaited on the running loop."
    return method


class ProcessMemory(Memory, process_facade=True):
    """A [`Memory`][memtrellis.Memory] whose engine runs in a child process; made by
    ``Memory(path, engine_process=True)`` (see the [operations guide](../operations.md)).

    Examples:
        >>> import shutil, tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> directory = tempfile.mkdtemp()
        >>> with Memory(directory, embedder=HashingEmbedder(), engine_process=True) as memory:
        ...     _ = memory.add("Ana moved to Porto", entity_id="ana")
        ...     type(memory).__name__, memory.recall("Porto", entity_id="ana").items[0].memory.text
        ('ProcessMemory', 'Ana moved to Porto')
        >>> shutil.rmtree(directory)
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        entity_id: str = "default",
        process_id: str | None = None,
        session_id: str | None = None,
        engine_process: bool = True,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise TypeError(f"Memory() got an unexpected keyword argument {unknown[0]!r}")
        self.default_scope = _args.make_scope(entity_id, process_id, session_id)
        self.path = _args.store_path(path)
        self._drain_timeout = _args.timeout_arg(options.get("drain_timeout", 60.0))
        spec = {"path": str(self.path.absolute()), **self.default_scope.model_dump(), **options}
        stop_timeout = (self._drain_timeout or 60.0) + 30.0
        self._channel = channel = EngineChannel(spec, stop_timeout=stop_timeout)
        # At exit (or when dropped unclosed) the child closes its Memory and exits.
        self._stop = weakref.finalize(self, channel.stop)
        self._engine = local = _Local(self.default_scope)  # type: ignore[assignment]
        self._scope = local.scopes.current
        self._closed = False
        try:
            health = channel.call("health", (), {})
            self.capture_config = channel.call("attribute", ("capture_config",), {})
            self.lifecycle = channel.call("attribute", ("lifecycle",), {})
        except BaseException:
            self._stop()
            raise
        self.embedder = _RemoteEmbedder(
            channel, health.embedder_model_id, health.embedder_dimension
        )

    @property
    def pid(self) -> int | None:
        """The engine process's id (None between its exit and the next call).

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory:  # an in-process memory has none
            ...     hasattr(memory, "pid")
            False
        """
        return self._channel.pid

    @property
    def extractor(self) -> Any:  # type: ignore[override]
        """The child's extractor (a copy: changing it changes nothing)."""
        return self._channel.call("attribute", ("extractor",), {})

    def _filled(self, fill: tuple[str, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """``kwargs`` with each scope id in ``fill`` not given taken from the active block."""
        if fill:
            block = self._engine.scopes.overrides()
            for name in fill:
                if kwargs.get(name) is None and name in block:
                    kwargs[name] = block[name]
        return kwargs

    add = _forward("add", _ALL)
    aadd = _aforward("add", _ALL, remote="aadd")
    capture = _forward("capture", _ALL)
    acapture = _aforward("capture", _ALL)
    flush = _forward("flush")
    aflush = _aforward("flush")
    refine = _forward("refine", _E)
    arefine = _aforward("refine", _E)
    store = _forward("store")
    astore = _aforward("store")
    update = _forward("update", _E)
    aupdate = _aforward("update", _E)
    get = _forward("get", _E)
    aget = _aforward("get", _E)
    history = _forward("history", _E)
    ahistory = _aforward("history", _E)
    versions = _forward("versions", _E)
    aversions = _aforward("versions", _E)
    entities = _forward("entities")
    aentities = _aforward("entities")
    list = _forward("list", _EP)
    alist = _aforward("list", _EP)
    recall = _forward("recall", _EP)
    arecall = _aforward("recall", _EP)
    open_items = _forward("open_items", _EP)
    aopen_items = _aforward("open_items", _EP)
    session_turns = _forward("session_turns", _ALL)
    asession_turns = _aforward("session_turns", _ALL)
    relate = _forward("relate", _EP)
    arelate = _aforward("relate", _EP)

    def forget(self, memory_id: str | None = None, *, entity_id: str | None = None) -> int:
        """Delete one memory by id, or with ``entity_id=`` alone all an entity has."""
        if memory_id is not None:
            entity_id = self._filled(_E, {"entity_id": entity_id})["entity_id"]
        return int(self._channel.call("forget", (memory_id,), {"entity_id": entity_id}))

    async def aforget(self, memory_id: str | None = None, *, entity_id: str | None = None) -> int:
        """Async `forget`: the reply is awaited on the running loop."""
        if memory_id is not None:
            entity_id = self._filled(_E, {"entity_id": entity_id})["entity_id"]
        return int(await self._channel.acall("forget", (memory_id,), {"entity_id": entity_id}))

    def export_graph(self, path: str | os.PathLike[str], **kwargs: Any) -> Path:
        """See [`Memory.export_graph`][memtrellis.Memory.export_graph]."""
        target = str(Path(path).absolute())
        return Path(self._channel.call("export_graph", (target,), self._filled(_E, kwargs)))

    def export(self, path_or_file: Any, **kwargs: Any) -> int:
        """See [`Memory.export`][memtrellis.Memory.export]; a stream is written here."""
        if isinstance(path_or_file, (str, os.PathLike)):
            target = str(Path(path_or_file).absolute())
            return int(self._channel.call("export", (target,), kwargs))
        count, text = self._channel.call("export_text", (), kwargs)
        path_or_file.write(text)
        return int(count)

    def import_(self, path_or_file: Any, **kwargs: Any) -> Any:
        """See [`Memory.import_`][memtrellis.Memory.import_]; a stream is read here."""
        if isinstance(path_or_file, (str, os.PathLike)):
            source = str(Path(path_or_file).absolute())
            return self._channel.call("import_", (source,), kwargs)
        return self._channel.call("import_text", (path_or_file.read(),), kwargs)

    async def aexport(self, path_or_file: Any, **kwargs: Any) -> int:
        """Async `export` (in a worker thread: it may write a big file)."""
        return await asyncio.to_thread(self.export, path_or_file, **kwargs)

    async def aimport_(self, path_or_file: Any, **kwargs: Any) -> Any:
        """Async `import_` (in a worker thread: it may read a big file)."""
        return await asyncio.to_thread(self.import_, path_or_file, **kwargs)

    def _with_adapters(self, health: Health) -> Health:
        stats = self._engine.stats
        with stats.lock:
            counted = stats._adapter_figures()
        return health.model_copy(update=counted)

    def health(self) -> Health:
        """See [`Memory.health`][memtrellis.Memory.health]; adapters' counters are this
        process's."""
        return self._with_adapters(self._channel.call("health", (), {}))

    async def ahealth(self) -> Health:
        """Async `health`: the reply is awaited on the running loop."""
        return self._with_adapters(await self._channel.acall("health", (), {}))

    @property
    def recovery_report(self) -> Any:
        """What opening the store recovered after a crash (in the engine process)."""
        return self._channel.call("attribute", ("recovery_report",), {})

    @property
    def repair_report(self) -> Any:
        """Deprecated: [`recovery_report`][memtrellis.Memory.recovery_report]."""
        renamed("Memory.repair_report", "Memory.recovery_report")
        return self.recovery_report

    def close(self) -> None:
        """Run the ``on_close`` hooks, let the engine process drain and close the store,
        then stop it. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._engine.run_close_hooks()
        try:
            if self._channel.pid is not None:  # a dead engine is not started to be closed
                self._channel.call("close", (), {})
        except Exception:
            log.warning("memtrellis: the engine process failed to close cleanly", exc_info=True)
        finally:
            self._stop()

    async def aclose(self) -> None:
        """Async `close` (in a worker thread: it waits for the capture queue)."""
        await asyncio.to_thread(self.close)
