"""Durable file primitives: atomic replace and fsync'd appends."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_chunks", "fsync_dir"]


def fsync_dir(directory: Path) -> None:
    """Flush a directory entry so a rename inside it survives a power cut."""
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
            os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(path)
    fsync_dir(path.parent)
