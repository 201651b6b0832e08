"""Telling a damaged embedded Chroma index from a busy or new one (used by `VectorIndex`).

Chroma reports a damaged ``chroma.sqlite3`` or HNSW segment as an ``InternalError`` from
whichever call first meets the damage, starts a new, empty database over one that was
deleted or emptied, and keeps a client that failed to start cached for its path (the
next client for that path reuses it half started). These helpers turn each into what a
memtrellis user can act on: a `StoreCorruptError` naming ``memtrellis repair``.
"""

from __future__ import annotations

from pathlib import Path

from memtrellis.store._corrupt import FROM_GRAPH, damaged

__all__ = ["chroma_says", "forget_failed_client", "is_damage", "refuse_a_lost_database"]

#: What Chroma says of damaged files: SQLite's errors for ``chroma.sqlite3``
#: (SQLITE_CORRUPT is code 11, SQLITE_NOTADB code 26) and its own for a collection's HNSW
#: segment files that cannot be loaded.
_DAMAGED = (
    "(code: 11)",
    "(code: 26)",
    "disk image is malformed",
    "file is not a database",
    "Error loading hnsw index",
    "Error constructing hnsw segment reader",
)


def is_damage(exc: BaseException) -> bool:
    """Whether a Chroma error reports damaged files (not, say, a busy database).

    Examples:
        >>> from chromadb.errors import InternalError
        >>> is_damage(InternalError("(code: 11) database disk image is malformed"))
        True
        >>> is_damage(InternalError("(code: 5) database is locked"))
        False
    """
    return chroma_says(exc, _DAMAGED)


def chroma_says(exc: BaseException, signs: tuple[str, ...]) -> bool:
    """Whether ``exc`` is one of Chroma's own errors and its message holds one of
    ``signs`` (Chroma tells its failures apart only in words).

    Examples:
        >>> from chromadb.errors import InternalError
        >>> chroma_says(InternalError("(code: 5) database is locked"), ("(code: 5)",))
        True
        >>> chroma_says(ValueError("(code: 5) database is locked"), ("(code: 5)",))
        False
    """
    from chromadb.errors import ChromaError

    return isinstance(exc, ChromaError) and any(sign in str(exc) for sign in signs)


def forget_failed_client(directory: Path) -> None:
    """Drop what a failed ``PersistentClient`` left in Chroma's per-path cache: the next
    client for that path would reuse it, half started (``'RustBindingsAPI' object has
    no attribute 'bindings'``), even after the directory was replaced.

    Examples:
        >>> from pathlib import Path
        >>> forget_failed_client(Path("nowhere"))  # nothing cached: nothing to do
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient._identifier_to_system.pop(str(directory), None)
    SharedSystemClient._identifier_to_refcount.pop(str(directory), None)


def refuse_a_lost_database(directory: Path) -> None:
    """Raise `StoreCorruptError` for a Chroma directory whose ``chroma.sqlite3`` is missing
    or empty while it holds Chroma's other files: Chroma would start a new, empty database
    over the lost one and so hide every vector. A new (empty) directory passes.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> directory = Path(tempfile.mkdtemp())
        >>> refuse_a_lost_database(directory)  # new: fine
        >>> (directory / "0e4b").mkdir()  # a collection's segment, its database gone
        >>> try:
        ...     refuse_a_lost_database(directory)
        ... except Exception as exc:
        ...     print(type(exc).__name__, exc.command.endswith("--from-graph"))
        StoreCorruptError True
    """
    database = directory / "chroma.sqlite3"
    try:
        size: int | None = database.stat().st_size
    except FileNotFoundError:
        size = None
    if size or not directory.is_dir():
        return
    if any(p.name != database.name for p in directory.iterdir()):
        raise damaged(
            database, "is missing" if size is None else "is empty", directory.parent, FROM_GRAPH
        )
