"""Background capture of the [`Memory`][memtrellis.Memory] facade: from a caller's turn to the
spool, and from a spooled entry to the store.

The capture worker calls `store_captured` for each entry and `store_captured_fallback`
when every try failed; both store under ids derived from the entry's id, so a replay
after a crash replaces what it stored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memtrellis._memory_writing import store_result
from memtrellis.capture import CaptureService
from memtrellis.capture.entry import build_entry
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.model import Mode
from memtrellis.extraction.normalize import check_labels, normalize
from memtrellis.types import Scope, utcnow

if TYPE_CHECKING:
    from memtrellis.memory import Memory


def capture_service(memory: Memory) -> CaptureService:
    """The spool and worker that store a ``Memory``'s captured turns in the background."""
    config = memory.extractor.config
    return CaptureService(
        memory.path / "spool",
        memory._store_captured,
        attempts=config.capture_attempts,
        backoff=config.capture_backoff,
        max_backoff=config.capture_max_backoff,
        fallback=memory._store_captured_fallback,
    )


def capture(
    memory: Memory,
    data: str | Mapping[str, Any] | Sequence[Any],
    scope: Scope,
    *,
    mode: Mode | str | None,
    tags: Sequence[str],
    metadata: Mapping[str, Any] | None,
) -> str:
    """Check a turn, spool and queue it; its capture id."""
    chosen = memory.extractor.resolve_mode(mode)
    at = utcnow()
    if isinstance(data, os.PathLike):
        raise InvalidInputError("capture() takes messages or text; add() reads documents")
    normalize(data, now=at)  # bad input fails here, in the caller, with a typed error
    tags, _, metadata = check_labels(tags, (), metadata)
    entry = build_entry(data, scope, mode=chosen.value, at=at, tags=tags, metadata=metadata)
    memory._store.check_open()
    memory._capture.submit(entry)
    return str(entry["id"])


def store_captured(memory: Memory, entry: dict[str, Any]) -> None:
    """Extract and store a spooled turn, strictly."""
    # Strict: a timeout, an error or a reply not usable whole raises, and the worker
    # tries the whole turn again later; nothing of a half-understood turn is stored.
    result = memory.extractor.extract(
        entry["data"],
        Scope.model_validate(entry["scope"]),
        mode=entry["mode"],
        now=datetime.fromisoformat(entry["at"]),
        tags=entry.get("tags", ()),
        metadata=entry.get("metadata") or None,
        strict=True,
    )
    store_result(memory, result, ids=str(entry["id"]))


def store_captured_fallback(memory: Memory, entry: dict[str, Any]) -> None:
    """Store a turn whose extraction failed on every try in fast mode, tagged as such."""
    result = memory.extractor.extract(
        entry["data"],
        Scope.model_validate(entry["scope"]),
        mode=Mode.FAST,
        now=datetime.fromisoformat(entry["at"]),
        tags=[*entry.get("tags", ()), FALLBACK_TAG],
        metadata=entry.get("metadata") or None,
    )
    result.fallbacks = len(result.items)
    store_result(memory, result, ids=str(entry["id"]))
