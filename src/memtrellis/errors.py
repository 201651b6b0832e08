"""Typed errors. Everything memtrellis raises on purpose derives from
[`MemtrellisError`][memtrellis.errors.MemtrellisError].

Examples:
    >>> from memtrellis.errors import MemtrellisError, MemoryNotFoundError
    >>> issubclass(MemoryNotFoundError, MemtrellisError)
    True
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EmbedderUnavailableError",
    "EmbeddingMismatchError",
    "EngineProcessError",
    "InvalidInputError",
    "MemoryNotFoundError",
    "MemtrellisError",
    "MissingDependencyError",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreInconsistentError",
    "StoreLockedError",
    "TokenizerUnavailableError",
    "UnknownIntegrationError",
    "UnsupportedClientError",
    "VectorIndexUnavailableError",
    "WriteConflictError",
]


class MemtrellisError(Exception):
    """Base class of every error memtrellis raises on purpose.

    Examples:
        >>> from memtrellis import MemtrellisError, Memory
        >>> try:
        ...     Memory(entity_id="")
        ... except MemtrellisError as exc:
        ...     print(type(exc).__name__)
        InvalidInputError
    """


class InvalidInputError(MemtrellisError, ValueError):
    """Input that memtrellis cannot store or act on (bad type, empty text, bad scope...).

    Examples:
        >>> issubclass(InvalidInputError, ValueError)
        True
    """


class MemoryNotFoundError(MemtrellisError, KeyError):
    """No memory with this id is visible in the given scope.

    Raised alike for an id that does not exist and for one that belongs to another
    entity, so a caller can never learn that another tenant's memory exists.

    Examples:
        >>> str(MemoryNotFoundError("m1"))
        "no memory with id 'm1' in this scope"
    """

    def __init__(self, memory_id: str) -> None:
        super().__init__(memory_id)
        self.memory_id = memory_id

    def __str__(self) -> str:
        return f"no memory with id {self.memory_id!r} in this scope"


class EmbeddingMismatchError(MemtrellisError):
    """The store was built with another embedder; opening it would corrupt the index.

    Examples:
        >>> issubclass(EmbeddingMismatchError, MemtrellisError)
        True
    """


class StoreCorruptError(MemtrellisError):
    """A store file cannot be read. The message names the path and the way to recover.

    ``path`` is the damaged file or directory and ``command`` the ``memtrellis repair``
    command line that rebuilds it from the store's other copies (``None`` when no repair
    applies, e.g. a store written by a newer memtrellis).

    Examples:
        >>> error = StoreCorruptError(
        ...     "graph.json is cut short", path="s/graph.json", command="memtrellis repair s"
        ... )
        >>> error.path, error.command, issubclass(StoreCorruptError, MemtrellisError)
        ('s/graph.json', 'memtrellis repair s', True)
    """

    def __init__(
        self, message: str, *, path: str | None = None, command: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.command = command

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps path and command when the error crosses a process (the vector process).
        return (_rebuild_corrupt, (str(self), self.path, self.command))


def _rebuild_corrupt(message: str, path: str | None, command: str | None) -> StoreCorruptError:
    return StoreCorruptError(message, path=path, command=command)


class StoreInconsistentError(StoreCorruptError):
    """An entity's copies disagree when its shard is opened: acknowledged changes are
    missing from one of them.

    Raised when the shard's write-ahead log is shorter than the catalog recorded (cut,
    emptied or deleted), when its snapshot is older than the catalog recorded, or when
    the entity's vector index holds more or fewer memories than its graph and log. Every
    file is left as it was (the message says so, or says what recovery did first);
    ``command`` is the ``memtrellis repair`` command that brings back what either copy
    still holds.

    Examples:
        >>> error = StoreInconsistentError(
        ...     "the index holds 200 memories, the graph 160", path="s/shards/a0/x",
        ...     command="memtrellis repair s",
        ... )
        >>> isinstance(error, StoreCorruptError), error.command
        (True, 'memtrellis repair s')
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_inconsistent, (str(self), self.path, self.command))


def _rebuild_inconsistent(
    message: str, path: str | None, command: str | None
) -> StoreInconsistentError:
    return StoreInconsistentError(message, path=path, command=command)


class StoreLockedError(MemtrellisError):
    """Another process held the store's write lock for longer than the timeout.

    Examples:
        >>> issubclass(StoreLockedError, MemtrellisError)
        True
    """


class WriteConflictError(MemtrellisError):
    """An entity's memories changed between the planning of a write and its commit, so
    nothing of the write was stored: a memory it changes was forgotten (``missing``), the
    whole entity was forgotten since the write began (``forgotten``), or another writer
    committed to the entity first. `Memory` handles it itself (an addition is planned
    again, an update of a forgotten memory raises
    [`MemoryNotFoundError`][memtrellis.errors.MemoryNotFoundError]); only code that uses
    the store directly sees it.

    Examples:
        >>> WriteConflictError("changed", missing=("m1",)).missing
        ('m1',)
    """

    def __init__(
        self, message: str, *, missing: tuple[str, ...] = (), forgotten: bool = False
    ) -> None:
        super().__init__(message)
        self.missing = missing
        self.forgotten = forgotten

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_conflict, (str(self), self.missing, self.forgotten))


def _rebuild_conflict(message: str, missing: tuple[str, ...], forgotten: bool) -> Any:
    return WriteConflictError(message, missing=missing, forgotten=forgotten)


class VectorIndexUnavailableError(MemtrellisError, RuntimeError):
    """The vector index could not serve a call: its process (``vector_process=True``)
    did not start or exited during the call. The next call starts a new one.

    Examples:
        >>> issubclass(VectorIndexUnavailableError, RuntimeError)
        True
    """


class EngineProcessError(MemtrellisError, RuntimeError):
    """The engine process of a ``Memory(..., engine_process=True)`` did not start, or
    exited during the call (the call's outcome is then unknown: it is not sent again).
    The next call starts a new process.

    Examples:
        >>> issubclass(EngineProcessError, RuntimeError)
        True
    """


class StoreClosedError(MemtrellisError):
    """The [`Memory`][memtrellis.Memory] was closed and cannot be used any more.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> memory.close()
        >>> try:
        ...     memory.list()
        ... except StoreClosedError:
        ...     print("closed")
        closed
    """


class TokenizerUnavailableError(MemtrellisError):
    """The offline tiktoken vocabulary could not be found; names the package to install.

    Examples:
        >>> issubclass(TokenizerUnavailableError, MemtrellisError)
        True
    """


class EmbedderUnavailableError(MemtrellisError):
    """The offline embedding model or its tokenizer could not be loaded.

    Examples:
        >>> issubclass(EmbedderUnavailableError, MemtrellisError)
        True
    """


def _install_hint(extra: str, quote: str = "'") -> str:
    """How to add an extra: the command that works from a clone today, then the one that
    works once memtrellis is published on a package index."""
    return (
        f"pip install {quote}.[{extra}]{quote} in a clone of memtrellis "
        f"(once published: pip install {quote}memtrellis[{extra}]{quote})"
    )


class MissingDependencyError(MemtrellisError, ImportError):
    """An optional feature needs a package that is not installed; names the extra to add,
    from a clone (what works today) and from the package index (once published).

    Examples:
        >>> print(MissingDependencyError("matplotlib", extra="viz"))
        ... # doctest: +NORMALIZE_WHITESPACE
        matplotlib is not installed: pip install '.[viz]' in a clone of memtrellis
        (once published: pip install 'memtrellis[viz]')
    """

    def __init__(self, package: str, *, extra: str) -> None:
        super().__init__(f"{package} is not installed: {_install_hint(extra)}")
        self.package = package
        self.extra = extra


class UnknownIntegrationError(MemtrellisError, LookupError):
    """No installed integration registers under this name; the message lists those that do.

    Examples:
        >>> error = UnknownIntegrationError("crewai", ["langchain", "llama_index"])
        >>> error.known, "installed: langchain, llama_index" in str(error)
        (['langchain', 'llama_index'], True)
    """

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(name)
        self.name = name
        self.known = known

    def __str__(self) -> str:
        installed = ", ".join(self.known) if self.known else "none"
        return (
            f"no memtrellis integration named {self.name!r} is installed "
            f"(installed: {installed}); install its package, e.g. langchain-memtrellis"
        )


class UnsupportedClientError(InvalidInputError, TypeError):
    """``Memory.register(client)`` got an object no client handler recognises.

    The message lists the supported client types and the named forms
    (``register(openai=...)`` and the other installed integrations).

    Examples:
        >>> error = UnsupportedClientError("dict", ["openai.OpenAI"], ["openai"])
        >>> "openai.OpenAI" in str(error), "register(openai=...)" in str(error)
        (True, True)
    """

    def __init__(self, kind: str, supported: list[str], named: list[str]) -> None:
        super().__init__(kind)
        self.kind = kind
        self.supported = supported
        self.named = named

    def __str__(self) -> str:
        forms = ", ".join(f"register({name}=...)" for name in self.named) or "none installed"
        return (
            f"memtrellis cannot register a {self.kind}: supported clients are "
            f"{', '.join(self.supported)}; or name the integration: {forms}"
        )
