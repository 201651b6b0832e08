"""The options and counters of an adapter: `AdapterOptions` (the one set of defaults
every adapter's arguments read, checked with `InvalidInputError`) and `AdapterStats`.

`memtrellis.binding` re-exports every name here; adapters import them from there.

Examples:
    >>> AdapterOptions(session_id="s1", session_history=6).scope
    {'session_id': 's1'}
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from memtrellis.context import DEFAULT_TOKEN_BUDGET
from memtrellis.errors import InvalidInputError
from memtrellis.session_history import check_history

__all__ = [
    "DEFAULT_K",
    "DEFAULT_OPEN_ITEMS",
    "DEFAULT_RECENT_TURNS",
    "DEFAULT_TOKEN_BUDGET",
    "AdapterOptions",
    "AdapterStats",
    "Position",
    "Step",
]

#: Memories recalled per model call when an adapter does not say.
DEFAULT_K = 8
#: Most messages of the block's recent-conversation stage when an adapter does not say.
DEFAULT_RECENT_TURNS = 4
#: Open decisions and action items considered per call when an adapter does not say.
DEFAULT_OPEN_ITEMS = 10
Position = Literal["append", "insert"]
#: What a failure broke: reading memories, handing a turn over, or rendering the block.
Step = Literal["recall", "capture", "context"]
_SCOPE_NAMES = ("entity_id", "process_id", "session_id")


@dataclass(frozen=True)
class AdapterOptions:
    """What one adapter asks of memory; the defaults every adapter shares.

    Attributes:
        entity_id: Whose memory (None: the ``Memory``'s own, or what the call names).
        process_id: Which app or agent (None: the ``Memory``'s own).
        session_id: Session recorded on captured turns (recall spans sessions).
        k: Most memories recalled per call (1 to 1000).
        token_budget: Most ``o200k_base`` tokens of the memory-context block.
        position: ``"append"`` the block to the leading system message, or ``"insert"``
            a system message of its own.
        capture_mode: Extraction mode of captured turns (``"fast"``/``"fine"``; None:
            the memory's default).
        strict: Raise memory failures (after counting them) instead of going on
            without memory.
        recent_turns: Most messages the block's recent-conversation stage shows, the
            newest kept (0: none). The stage holds only conversation the call does not
            carry (the session's earlier turns of ``session_history``), never a message
            already in the prompt.
        open_items: Most of the entity's open decisions and action items the block
            keeps room for, recalled or not (0: only those recall returns).
        context_hint: Steer recall with the conversation before the question (the
            prompt's earlier turns and the session history placed;
            ``Memory.recall(context_hint=...)``). The hint is not rendered.
        session_history: Messages of the session's earlier turns that the call lacks
            read for the recent-conversation stage (0: none; opt-in, see
            `memtrellis.session_history`), of which it shows the newest
            ``recent_turns``; needs a session id.

    Raises:
        InvalidInputError: A value is out of range or of the wrong type.

    Examples:
        >>> options = AdapterOptions(entity_id="alice", k=4)
        >>> options.scope, options.token_budget, options.position
        ({'entity_id': 'alice'}, 600, 'append')
        >>> AdapterOptions(k=0)
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: k must be an integer from 1 to 1000
    """

    entity_id: str | None = None
    process_id: str | None = None
    session_id: str | None = None
    k: int = DEFAULT_K
    token_budget: int = DEFAULT_TOKEN_BUDGET
    position: Position = "append"
    capture_mode: str | None = None
    strict: bool = False
    recent_turns: int = DEFAULT_RECENT_TURNS
    open_items: int = DEFAULT_OPEN_ITEMS
    context_hint: bool = True
    session_history: int = 0

    def __post_init__(self) -> None:
        for name in _SCOPE_NAMES:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, str) and value.strip()):
                raise InvalidInputError(f"{name} must be a non-empty string or None")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= 1000:
            raise InvalidInputError("k must be an integer from 1 to 1000")
        budget = self.token_budget
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise InvalidInputError("token_budget must be a non-negative integer")
        if self.position not in ("append", "insert"):
            raise InvalidInputError(f"position must be 'append' or 'insert', not {self.position!r}")
        if self.capture_mode not in (None, "fast", "fine"):
            raise InvalidInputError("capture_mode must be 'fast', 'fine' or None")
        for name in ("recent_turns", "open_items"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
                raise InvalidInputError(f"{name} must be an integer from 0 to 100")
        if not isinstance(self.context_hint, bool):
            raise InvalidInputError("context_hint must be True or False")
        check_history(self.session_history)

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> AdapterOptions:
        """The options named in ``values`` (an adapter's arguments; other keys are left
        out), checked, the defaults for the rest; for adapters whose own validation
        (pydantic's) would not raise `InvalidInputError`.

        Examples:
            >>> AdapterOptions.of({"k": 3, "llm": object()}).k
            3
            >>> AdapterOptions.of({"recent_turns": -1})
            Traceback (most recent call last):
            ...
            memtrellis.errors.InvalidInputError: recent_turns must be an integer from 0 to 100
        """
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in values.items() if name in names})

    @property
    def scope(self) -> dict[str, str]:
        """The entity, process and session given, by name (the others left out)."""
        return {n: v for n in _SCOPE_NAMES if (v := getattr(self, n)) is not None}


@dataclass
class AdapterStats:
    """Counters of what an adapter did with memory; thread-safe.

    Attributes:
        recalls: Recalls run for a call.
        placed: Calls that got a non-empty memory-context block.
        captured: Turns handed to ``Memory.capture``.
        recall_failures: Recalls (and renderings) that failed; the call went on.
        capture_failures: Captures that failed; the call's answer was still returned.
        last_error: ``"step: Type: message"`` of the latest failure, if any.

    Examples:
        >>> stats = AdapterStats()
        >>> stats.count("captured")
        >>> stats.as_dict()["captured"], stats.failures
        (1, 0)
    """

    recalls: int = 0
    placed: int = 0
    captured: int = 0
    recall_failures: int = 0
    capture_failures: int = 0
    last_error: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, name: str) -> None:
        """Add one to the counter ``name``."""
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def failed(self, step: Step, exc: BaseException) -> None:
        """Count one failure of ``step`` and remember it as the last error."""
        with self._lock:
            name = "capture_failures" if step == "capture" else "recall_failures"
            setattr(self, name, getattr(self, name) + 1)
            self.last_error = f"{step}: {type(exc).__name__}: {exc}"

    @property
    def failures(self) -> int:
        """Every failure counted so far."""
        with self._lock:
            return self.recall_failures + self.capture_failures

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        with self._lock:
            return {
                "recalls": self.recalls,
                "placed": self.placed,
                "captured": self.captured,
                "recall_failures": self.recall_failures,
                "capture_failures": self.capture_failures,
            }
