"""Durable file primitives: atomic replace and fsync'd appends."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write_bytes", "fsync_dir"]


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
    :func:`os.replace` and fsyncs the directory.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)
