"""Durable file primitives: atomic replace and fsync'd appends."""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from memtrellis.errors import InvalidInputError, StoreLockedError

__all__ = [
    "atomic_write_bytes",
    "atomic_write_chunks",
    "flushed_at_exit",
    "fsync_dir",
    "given_path",
]

_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("deferred", default=False)


def given_path(value: object, what: str) -> Path:
    """The file path a caller gave for ``what``, or `InvalidInputError`: text or
    ``os.PathLike`` text, not empty, without NUL or lone surrogates (which the OS refuses
    with a ``ValueError`` or ``UnicodeEncodeError`` of its own). ``OSError`` from opening
    it is still the OS's."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise InvalidInputError(
            f"{what} must be a str or os.PathLike path, not {type(value).__name__}"
        )
    if not text.strip():
        raise InvalidInputError(f"{what} must not be an empty path")
    if "\x00" in text or any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise InvalidInputError(f"{what} must not contain NUL or lone surrogates")
    return Path(text)


@contextmanager
def flushed_at_exit() -> Iterator[None]:
    """Write many files with one flush of the disk at the end instead of one per file.

    Inside the block (this thread or task only), `atomic_write_chunks` and `fsync_dir`
    skip their fsyncs, and leaving the block normally flushes everything with one
    ``sync()``: a fsync costs milliseconds, and staging one shard per entity of a store
    with thousands of entities does four each. Only for files that nothing names before
    the block has ended (a staging directory). Where ``sync()`` may return before the
    data is on disk (anything but Linux), the fsyncs are kept.
    """
    if not sys.platform.startswith("linux"):
        yield
        return
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)
    os.sync()


def fsync_dir(directory: Path) -> None:
    """Flush a directory entry so a rename inside it survives a power cut."""
    if _DEFERRED.get():
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never half.

    Writes a temporary file beside the target, fsyncs it, renames it over the target with
    `os.replace` and fsyncs the directory.
    """
    atomic_write_chunks(path, [data])


def atomic_write_chunks(path: Path, chunks: Iterable[bytes]) -> None:
    """`atomic_write_bytes` for content produced piece by piece.

    Only one chunk is held at a time, so a large file never exists whole in memory. If
    producing a chunk fails, the temporary file is removed and the target is untouched.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            if not _DEFERRED.get():
                os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    fsync_dir(path.parent)


@contextmanager
def holding(lock: FileLock, timeout: float, what: Path | str, advice: str = "") -> Iterator[None]:
    """Hold a file lock, or raise `StoreLockedError` naming ``what`` after ``timeout`` s.

    ``advice`` ends the message (what the user can do about it).
    """
    try:
        lock.acquire(timeout=timeout)
    except Timeout as exc:
        raise StoreLockedError(
            f"another process held the lock on {what} for longer than {timeout} s{advice}"
        ) from exc
    try:
        yield
    finally:
        lock.release()
