"""Background capture of the [`Memory`][memtrellis.Memory] facade: from a caller's turn to the
spool, and from a spooled entry to the store.

The capture worker calls `store_captured_batch` for what it took from its queue at once,
`store_captured` for a lone entry or one tried again, and `store_captured_fallback` when
every try failed; all of them store under ids derived from the entry's id, so a replay
after a crash replaces what it stored.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from memtrellis._memory_writing import commit_results, derive_ids, store_result
from memtrellis.capture import CaptureService
from memtrellis.capture.entry import build_entry
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.model import Mode
from memtrellis.extraction.normalize import check_labels, normalize
from memtrellis.extraction.pipeline import ExtractionResult
from memtrellis.types import Scope, utcnow

if TYPE_CHECKING:
    from memtrellis.memory import Memory


def capture_service(memory: Memory) -> CaptureService:
    """The spool and worker that store a ``Memory``'s captured turns in the background."""
    config = memory.capture_config
    return CaptureService(
        memory.path / "spool",
        memory._store_captured,
        attempts=config.attempts,
        backoff=config.backoff,
        max_backoff=config.max_backoff,
        fallback=memory._store_captured_fallback,
        handle_batch=partial(store_captured_batch, memory),
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


def _extract(memory: Memory, entry: dict[str, Any]) -> ExtractionResult:
    # Strict: a timeout, an error or a reply not usable whole raises, and the worker
    # tries the whole turn again later; nothing of a half-understood turn is stored.
    return memory.extractor.extract(
        entry["data"],
        Scope.model_validate(entry["scope"]),
        mode=entry["mode"],
        now=datetime.fromisoformat(entry["at"]),
        tags=entry.get("tags", ()),
        metadata=entry.get("metadata") or None,
        strict=True,
    )


def store_captured(memory: Memory, entry: dict[str, Any]) -> None:
    """Extract and store a spooled turn, strictly."""
    store_result(memory, _extract(memory, entry), ids=str(entry["id"]))


#: A batch whose extraction has taken this long (fine mode: LLM calls) stores what it has
#: extracted so far before it goes on, so that its first turns are not held back for long.
FLUSH_AFTER = 1.0

Extracted = list[tuple[str, str, ExtractionResult]]  # (capture id, entity id, result)


def store_captured_batch(memory: Memory, entries: Sequence[dict[str, Any]]) -> dict[str, Exception]:
    """Extract and store several spooled turns; the error of each one not stored, by id.

    Each turn is extracted on its own (strictly); the memories of all of them are embedded
    in one call and committed with one plan-and-commit per entity and mode. A turn whose
    extraction fails, or whose entity's commit fails, is reported and left to the worker
    to try again alone; the others are stored. When extracting takes longer than
    `FLUSH_AFTER` (LLM calls), what is extracted is stored before the rest is extracted.
    """
    failed: dict[str, Exception] = {}
    extracted: Extracted = []
    started = time.monotonic()
    for entry in entries:
        capture_id = str(entry["id"])
        try:
            result = _extract(memory, entry)
        except Exception as exc:
            failed[capture_id] = exc
        else:
            memory._stats.record_extraction(result.skipped, result.fallbacks)
            derive_ids(result, capture_id)
            extracted.append((capture_id, str(entry["scope"]["entity_id"]), result))
        if time.monotonic() - started > FLUSH_AFTER:
            _store_extracted(memory, extracted, failed)
            extracted = []
            started = time.monotonic()
    _store_extracted(memory, extracted, failed)
    return failed


def _store_extracted(memory: Memory, extracted: Extracted, failed: dict[str, Exception]) -> None:
    """One embedding call for all, then one commit per entity and mode; errors to ``failed``."""
    texts = [item.search_text() for _, _, result in extracted for item in result.items]
    if not texts:
        return
    try:
        vectors = memory.embedder.embed_documents(texts)
    except Exception as exc:
        failed.update({capture_id: exc for capture_id, _, _ in extracted})
        return
    groups: dict[tuple[str, str], list[tuple[ExtractionResult, str | None]]] = {}
    vectors_of: dict[tuple[str, str], list[Sequence[float]]] = {}
    position = 0
    for capture_id, entity_id, result in extracted:
        count = len(result.items)
        if count:
            key = (entity_id, result.mode.value)
            groups.setdefault(key, []).append((result, capture_id))
            vectors_of.setdefault(key, []).extend(vectors[position : position + count])
        position += count
    for key, group in groups.items():
        try:
            commit_results(memory, group, vectors_of[key])
        except Exception as exc:
            failed.update({str(capture_id): exc for _, capture_id in group})


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
