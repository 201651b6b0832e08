"""The process-wide default store, opened on first use when no ``Memory`` is given."""

from __future__ import annotations

import atexit
import threading

from memtrellis import Memory

__all__ = ["default_memory"]

_lock = threading.Lock()
_memory: Memory | None = None


def default_memory() -> Memory:
    """One [`Memory`][memtrellis.Memory] on the default store, shared by every adapter.

    The store is ``$MEMTRELLIS_HOME`` or ``./.memtrellis`` with the offline default
    embedder; it is closed (captured turns drained) when the interpreter exits.
    """
    global _memory
    with _lock:
        if _memory is None:
            _memory = Memory()
            atexit.register(_memory.close)
        return _memory
