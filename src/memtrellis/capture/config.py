"""How captured turns are retried: `CaptureConfig`, passed as ``Memory(capture=...)``.

Capture's settings used to live in `memtrellis.ExtractionConfig` (``capture_attempts``,
``capture_backoff``, ``capture_max_backoff``); those fields still work there, with a
``DeprecationWarning``, when no ``CaptureConfig`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from memtrellis.errors import InvalidInputError
from memtrellis.extraction.pipeline import ExtractionConfig

__all__ = ["CaptureConfig", "resolve_capture_config"]


@dataclass(frozen=True)
class CaptureConfig:
    """How the background worker retries a captured turn; ``Memory(capture=...)``.

    Attributes:
        attempts: Tries of a captured turn's extraction (each a fresh LLM call) before the
            turn is stored in fast mode, tagged ``extraction:fallback``.
        backoff: Seconds before a captured turn is tried again; doubles each try.
        max_backoff: Longest wait between two tries of a captured turn.
        turn_budget: Seconds one captured turn may take (its tries included; a batch of
            n turns gets n times as long) before the worker leaves it behind and goes on
            with the turns after it; ``None``: no limit. The turn stays in the spool and
            is tried again on the next open.
        quarantine_after: Opens of the store on which a captured turn may be started
            without being stored (it failed every try, ran over budget, or the process
            died during it); on the next open it goes to ``spool/quarantine/`` instead of
            being tried again, and ``Health.capture_quarantined`` counts it.

    Examples:
        >>> import tempfile
        >>> from memtrellis import CaptureConfig, Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder(),
        ...             capture=CaptureConfig(attempts=2, backoff=0.1)) as memory:
        ...     memory.capture_config.attempts
        2
        >>> CaptureConfig(attempts=0)
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: attempts must be at least 1
    """

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 30.0
    turn_budget: float | None = 900.0
    quarantine_after: int = 3

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise InvalidInputError("attempts must be at least 1")
        if min(self.backoff, self.max_backoff) < 0:
            raise InvalidInputError("backoff times cannot be negative")
        if self.turn_budget is not None and not self.turn_budget > 0:
            raise InvalidInputError("turn_budget must be positive or None")
        if self.quarantine_after < 1:
            raise InvalidInputError("quarantine_after must be at least 1")


def resolve_capture_config(
    capture: CaptureConfig | None, extraction: ExtractionConfig
) -> CaptureConfig:
    """``capture``, or the deprecated ``capture_*`` fields ``extraction`` was given.

    Examples:
        >>> resolve_capture_config(None, ExtractionConfig()) == CaptureConfig()
        True
    """
    if capture is not None:
        if not isinstance(capture, CaptureConfig):
            raise InvalidInputError("capture must be a CaptureConfig")
        if extraction.legacy_capture:
            raise InvalidInputError(
                "give capture=CaptureConfig(...) or ExtractionConfig(capture_*=...), not both"
            )
        return capture
    default = CaptureConfig()
    return CaptureConfig(
        attempts=extraction.capture_attempts or default.attempts,
        backoff=default.backoff
        if extraction.capture_backoff is None
        else extraction.capture_backoff,
        max_backoff=(
            default.max_backoff
            if extraction.capture_max_backoff is None
            else extraction.capture_max_backoff
        ),
    )
