"""Background capture: from a caller's turn to the spool, and from a spooled entry through
the writer to the store.

The capture worker calls `Capturer.store_batch` for what it took from its queue at once,
`Capturer.store_one` for a lone entry or one tried again, and `Capturer.store_fallback`
when every try failed; all of them store under ids derived from the entry's id, so a
replay after a crash replaces what it stored.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memtrellis._engine.parts import Parts
from memtrellis._engine.writer import Writer, derive_ids
from memtrellis.attachments import summarised
from memtrellis.capture import CaptureService
from memtrellis.capture.entry import build_entry
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.model import Mode
from memtrellis.extraction.normalize import check_labels, normalize
from memtrellis.extraction.pipeline import ExtractionResult
from memtrellis.store import Expect
from memtrellis.types import Scope, utcnow

__all__ = ["FLUSH_AFTER", "Capturer"]

#: A batch whose extraction has taken this long (fine mode: LLM calls) stores what it has
#: extracted so far before it goes on, so that its first turns are not held back for long.
FLUSH_AFTER = 1.0

Extracted = list[tuple[str, str, ExtractionResult]]  # (capture id, entity id, result)


def captured(entry: dict[str, Any]) -> Expect:
    """What storing a spooled turn expects: no forget of its entity begun after it was
    captured (in any process)."""
    return Expect(began=datetime.fromisoformat(entry["at"]))


class Capturer:
    """The spool and worker of one memory, storing captured turns through its writer."""

    def __init__(self, parts: Parts, writer: Writer) -> None:
        self.parts = parts
        self.writer = writer
        config = parts.capture
        self.service = CaptureService(
            parts.path / "spool",
            self.store_one,
            attempts=config.attempts,
            backoff=config.backoff,
            max_backoff=config.max_backoff,
            fallback=self.store_fallback,
            handle_batch=self.store_batch,
            turn_budget=config.turn_budget,
            quarantine_after=config.quarantine_after,
        )

    def capture(
        self,
        data: str | Mapping[str, Any] | Sequence[Any],
        scope: Scope,
        *,
        mode: Mode | str | None,
        tags: Sequence[str],
        metadata: Mapping[str, Any] | None,
    ) -> str:
        """Check a turn, spool and queue it; its capture id."""
        chosen = self.parts.extractor.resolve_mode(mode)
        at = utcnow()
        if isinstance(data, os.PathLike):
            raise InvalidInputError("capture() takes messages or text; add() reads documents")
        keep = self.parts.extractor.config.attachment_bytes
        data = summarised(data, keep_bytes=keep)  # no inline bytes the app did not opt in to
        normalize(data, now=at)  # bad input fails here, in the caller, with a typed error
        tags, _, metadata = check_labels(tags, (), metadata)
        entry = build_entry(data, scope, mode=chosen.value, at=at, tags=tags, metadata=metadata)
        self.parts.store.check_open()
        self.service.submit(entry)
        return str(entry["id"])

    def _extract(self, entry: dict[str, Any]) -> ExtractionResult:
        # Strict: a timeout, an error or a reply not usable whole raises, and the worker
        # tries the whole turn again later; nothing of a half-understood turn is stored.
        return self.parts.extractor.extract(
            entry["data"],
            Scope.model_validate(entry["scope"]),
            mode=entry["mode"],
            now=datetime.fromisoformat(entry["at"]),
            tags=entry.get("tags", ()),
            metadata=entry.get("metadata") or None,
            strict=True,
            one_turn=True,
        )

    def store_one(self, entry: dict[str, Any]) -> None:
        """Extract and store a spooled turn, strictly (nothing if its entity was forgotten
        after it was captured)."""
        self.writer.store_result(self._extract(entry), ids=str(entry["id"]), since=captured(entry))

    def store_batch(self, entries: Sequence[dict[str, Any]]) -> dict[str, Exception]:
        """Extract and store several spooled turns; the error of each one not stored, by id.

        Each turn is extracted on its own (strictly); the memories of all of them are
        embedded in one call and committed with one plan-and-commit per entity and mode. A
        turn whose extraction fails, or whose entity's commit fails, is reported and left
        to the worker to try again alone; the others are stored. When extracting takes
        longer than `FLUSH_AFTER` (LLM calls), what is extracted is stored before the rest
        is extracted.
        """
        failed: dict[str, Exception] = {}
        extracted: Extracted = []
        at = {str(e["id"]): datetime.fromisoformat(e["at"]) for e in entries}
        started = time.monotonic()
        for entry in entries:
            capture_id = str(entry["id"])
            try:
                result = self._extract(entry)
            except Exception as exc:
                failed[capture_id] = exc
            else:
                self.parts.stats.record_extraction(result.skipped, result.fallbacks)
                derive_ids(result, capture_id)
                extracted.append((capture_id, str(entry["scope"]["entity_id"]), result))
            if time.monotonic() - started > FLUSH_AFTER:
                self._store_extracted(extracted, failed, at)
                extracted = []
                started = time.monotonic()
        self._store_extracted(extracted, failed, at)
        return failed

    def _store_extracted(
        self, extracted: Extracted, failed: dict[str, Exception], at: Mapping[str, datetime]
    ) -> None:
        """One embedding call for all, then one commit per entity and mode; errors to
        ``failed``; ``at``: when each turn was captured, by capture id."""
        texts = [item.search_text() for _, _, result in extracted for item in result.items]
        if not texts:
            return
        try:
            vectors = self.writer.documents(texts)
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
                self.writer.commit_results(group, vectors_of[key], captured=at)
            except Exception as exc:
                failed.update({str(capture_id): exc for _, capture_id in group})

    def store_fallback(self, entry: dict[str, Any]) -> None:
        """Store a turn whose extraction failed on every try in fast mode, tagged as such."""
        result = self.parts.extractor.extract(
            entry["data"],
            Scope.model_validate(entry["scope"]),
            mode=Mode.FAST,
            now=datetime.fromisoformat(entry["at"]),
            tags=[*entry.get("tags", ()), FALLBACK_TAG],
            metadata=entry.get("metadata") or None,
            one_turn=True,
        )
        result.fallbacks = len(result.items)
        self.writer.store_result(result, ids=str(entry["id"]), since=captured(entry))
