"""How an extraction LLM call can fail, bounded in time and counted by kind.

Three kinds are told apart, because each asks a different fix of the operator:

* ``timeout``: the model did not answer within ``ExtractionConfig.llm_timeout`` (or raised a
  timeout of its own: `TimeoutError`, ``httpx.TimeoutException``, an SDK's
  ``APITimeoutError``...);
* ``error``: the call raised anything else;
* ``garbage``: it answered, but the reply cannot be used whole: not JSON, the wrong
  shape, empty, or JSON that had to be repaired or lost some of its memories.

Examples:
    >>> import time
    >>> call_with_timeout(lambda: "ok", 1.0)
    'ok'
    >>> try:
    ...     call_with_timeout(lambda: time.sleep(5), 0.05)
    ... except TimeoutError as exc:
    ...     failure_kind(exc)
    'timeout'
    >>> failure_kind(ValueError("overloaded"))
    'error'
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

__all__ = [
    "ExtractionFailure",
    "FailureCounts",
    "FailureKind",
    "call_with_timeout",
    "failure_kind",
]

T = TypeVar("T")
FailureKind = Literal["timeout", "error", "garbage"]


class ExtractionFailure(Exception):
    """A turn's extraction failed and should be tried again (raised in strict mode only).

    Attributes:
        kind: ``"timeout"``, ``"error"`` or ``"garbage"``.
    """

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(f"extraction {kind}: {detail}")
        self.kind: FailureKind = kind


def failure_kind(exc: BaseException) -> FailureKind:
    """``"timeout"`` for any timeout exception (by type or class name), else ``"error"``.

    Client libraries have their own timeout classes that do not derive from
    `TimeoutError` (``httpx.TimeoutException``, ``openai.APITimeoutError``,
    ``requests.Timeout``); their names say what they are, and the core imports none of them.
    """
    if isinstance(exc, TimeoutError):
        return "timeout"
    if any("Timeout" in cls.__name__ for cls in type(exc).__mro__):
        return "timeout"
    return "error"


def call_with_timeout(call: Callable[[], T], timeout: float | None) -> T:
    """Run ``call``; raise `TimeoutError` if it has not returned after ``timeout`` s.

    A Python thread cannot be killed, so a call that hangs is left running on a daemon
    thread and its eventual answer dropped; the caller moves on. The call runs in a copy
    of the caller's context, so context variables (a framework's callbacks or tracing)
    still reach it. ``None`` waits forever.
    """
    if timeout is None:
        return call()
    box: dict[str, T | BaseException] = {}
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:  # handed to the waiting thread, re-raised there
            box["error"] = exc

    worker = threading.Thread(target=run, name="memtrellis-llm-call", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"the LLM did not answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


@dataclass
class FailureCounts:
    """Failed extraction calls by kind, and tries repeated after one (thread-safe)."""

    timeouts: int = 0
    errors: int = 0
    garbage: int = 0
    retries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, kind: FailureKind) -> None:
        """Add one failure of ``kind``."""
        with self._lock:
            if kind == "timeout":
                self.timeouts += 1
            elif kind == "error":
                self.errors += 1
            else:
                self.garbage += 1

    def retried(self) -> None:
        """Add one repeated try."""
        with self._lock:
            self.retries += 1
