"""Fail-open: a memory failure is logged and counted, and never breaks the user's call.

Every adapter runs its memory work (recall, rendering, capture) inside
`FailOpen.guard`. With ``strict=True`` the failure is raised instead, which is
what tests and applications that would rather stop than answer without memory want.
Each failure is also reported to the memory (``Memory.report_failure``, source
``"llama_index"``), so that ``Memory.health()`` counts it with every other adapter's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from memtrellis import Memory

__all__ = ["FailOpen"]

log = logging.getLogger("llama_index.memory.memtrellis")

Step = Literal["recall", "capture", "truncate"]
#: What ``Memory.report_failure`` is told for each guarded step (truncating re-renders).
_REPORTED: dict[Step, Literal["recall", "capture", "context"]] = {
    "recall": "recall",
    "capture": "capture",
    "truncate": "context",
}


class FailOpen:
    """Counts and logs the memory failures of one adapter.

    Args:
        owner: The adapter's name, for the log.
        strict: Raise failures after counting them.
        memory: The ``Memory`` to report each failure to (``report_failure``), if any.

    Examples:
        >>> guard = FailOpen("demo", strict=False)
        >>> with guard.guard("recall"):
        ...     raise RuntimeError("store offline")
        >>> guard.failures, guard.last_error
        (1, 'recall: RuntimeError: store offline')
    """

    def __init__(self, owner: str, *, strict: bool, memory: Memory | None = None) -> None:
        self.owner = owner
        self.strict = strict
        self.memory = memory
        self.failures = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()

    @contextmanager
    def guard(self, what: Step) -> Iterator[None]:
        """Run the block; on an exception log it, count it, and re-raise only if strict."""
        try:
            yield
        except Exception as exc:
            with self._lock:
                self.failures += 1
                self.last_error = f"{what}: {type(exc).__name__}: {exc}"
            if self.memory is not None:
                self.memory.report_failure(_REPORTED[what], source="llama_index", error=exc)
            log.warning(
                "memtrellis %s failed in %s (%s): %s",
                what,
                self.owner,
                "raised: strict" if self.strict else "the call goes on without memory",
                exc,
                exc_info=log.isEnabledFor(logging.DEBUG),
            )
            if self.strict:
                raise
