"""Fine mode, sans I/O: from one window and the LLM's reply to memory items.

`items_from_reply` maps each parsed `MemoryDraft` to a
[`MemoryItem`][memtrellis.types.MemoryItem] with provenance (the window's messages it cites),
the summary to a background ``episode`` item, and a reply that yields nothing usable to
one **fallback** item holding the whole window, tagged `FALLBACK_TAG`: a failed
extraction is stored, never dropped.

Examples:
    >>> from memtrellis.extraction.model import Window
    >>> from memtrellis.types import Scope, SourceKind, SourceRef
    >>> w = Window("[m1] 2024-03-05 09:12 Ana (user): I live in Porto",
    ...            (SourceRef(kind="chat", message_id="m1", content="I live in Porto"),),
    ...            SourceKind.CHAT, 14)
    >>> ok = items_from_reply('{"memories": [{"value": "Ana lives in Porto"}]}', w,
    ...                       Scope(entity_id="ana"))
    >>> [(i.text, i.tags, i.sources[0].message_id) for i in ok.items], ok.fallback
    ([('Ana lives in Porto', ['mode:fine'], 'm1')], False)
    >>> bad = items_from_reply("Sorry, I can't help with that.", w, Scope(entity_id="ana"))
    >>> bad.fallback, bad.items[0].tags, "I live in Porto" in bad.items[0].text
    (True, ['mode:fine', 'extraction:fallback'], True)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from memtrellis.extraction.model import Window
from memtrellis.extraction.parse import parse_answer
from memtrellis.extraction.prompts.extract import MemoryDraft
from memtrellis.types import MemoryItem, MemoryType, Scope, SourceRef, utcnow

__all__ = [
    "DEFAULT_CONFIDENCE",
    "FALLBACK_CONFIDENCE",
    "FALLBACK_TAG",
    "MODE_TAG",
    "SUMMARY_TAG",
    "FineResult",
    "fallback_item",
    "items_from_reply",
    "parse_date_hint",
]

#: Tag of every fine-mode item.
MODE_TAG = "mode:fine"
#: Tag of the item that holds a whole window whose extraction failed.
FALLBACK_TAG = "extraction:fallback"
#: Tag of the window summary item.
SUMMARY_TAG = "summary"
DEFAULT_CONFIDENCE = 0.7
FALLBACK_CONFIDENCE = 0.5
_MAX_REASON = 300
_PARTIAL_DATE = re.compile(
    r"^(\d{4})(?:\s*[-/.年]\s*(\d{1,2})(?:\s*[-/.月]\s*(\d{1,2}))?)?\s*[月日]?$"
)


@dataclass
class FineResult:
    """What one window's reply produced.

    ``items`` holds the memories (or the single fallback item when ``fallback``);
    ``summary`` is the background item, stored apart; ``errors`` lists what was wrong
    with the reply, memory by memory. ``partial`` means the items are what could be
    salvaged from a reply that was repaired or lost memories on the way.
    """

    items: list[MemoryItem]
    summary: MemoryItem | None = None
    fallback: bool = False
    errors: list[str] = field(default_factory=list)
    partial: bool = False


def parse_date_hint(text: str | None) -> datetime | None:
    """An ISO date or datetime hint as an aware datetime (naive means UTC, as shown).

    Also reads ``YYYY``, ``YYYY-MM``, ``YYYY/MM/DD`` and ``2024年3月5日``; ``None`` for
    anything else.

    Examples:
        >>> parse_date_hint("2024-03-08").isoformat(), parse_date_hint("2024年3月").isoformat()
        ('2024-03-08T00:00:00+00:00', '2024-03-01T00:00:00+00:00')
        >>> parse_date_hint("2024-03-08T10:00:00Z").hour, parse_date_hint("next week")
        (10, None)
    """
    if not text:
        return None
    text = text.strip()
    iso = text[:-1] + "+00:00" if text[-1:] in "Zz" else text
    moment: datetime | None
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        match = _PARTIAL_DATE.match(text)
        if match is None:
            return None
        year, month, day = (int(g) if g else 1 for g in match.groups())
        try:
            moment = datetime(year, month, day)
        except ValueError:
            return None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def _latest(sources: list[SourceRef]) -> datetime | None:
    stamps = [s.timestamp for s in sources if s.timestamp is not None]
    return max(stamps) if stamps else None


def _metadata(window: Window, **extra: Any) -> dict[str, Any]:
    return {"extraction": {"mode": "fine", "language": window.language.value, **extra}}


def _confidence(value: float | None) -> float:
    if value is None or not math.isfinite(value):
        return DEFAULT_CONFIDENCE
    return min(1.0, max(0.0, value))


def _memory_type(draft: MemoryDraft, where: str, errors: list[str]) -> MemoryType:
    try:
        return MemoryType(draft.memory_type)
    except ValueError:
        errors.append(f"{where}: unknown memory_type {draft.memory_type[:40]!r}; stored as fact")
        return MemoryType.FACT


def _sources(draft: MemoryDraft, window: Window, where: str, errors: list[str]) -> list[SourceRef]:
    known = {s.message_id: s.message_id for s in window.sources if s.message_id}
    folded = {k.casefold(): v for k, v in known.items()}
    cited: set[str] = set()
    unknown: list[str] = []
    for source_id in draft.source_ids:
        found = known.get(source_id) or folded.get(source_id.casefold())
        if found is None:
            unknown.append(source_id)
        else:
            cited.add(found)
    if unknown:
        errors.append(f"{where}: unknown source ids {unknown[:5]} ignored")
    chosen = [s for s in window.sources if s.message_id in cited]
    return chosen or list(window.sources)


def _date(hint: str | None, name: str, where: str, errors: list[str]) -> datetime | None:
    moment = parse_date_hint(hint)
    if hint and moment is None:
        errors.append(f"{where}: {name} {hint[:40]!r} is not a date; ignored")
    return moment


def _item(
    draft: MemoryDraft, index: int, window: Window, scope: Scope, now: datetime, errors: list[str]
) -> MemoryItem:
    where = f"memory {index}"
    sources = _sources(draft, window, where, errors)
    valid_from = _date(draft.valid_from, "valid_from", where, errors) or _latest(sources)
    valid_until = _date(draft.valid_until, "valid_until", where, errors)
    if valid_until is not None and valid_from is not None and valid_until <= valid_from:
        errors.append(f"{where}: valid_until is not after valid_from; ignored")
        valid_until = None
    return MemoryItem(
        text=draft.value,
        key=draft.key,
        memory_type=_memory_type(draft, where, errors),
        tags=[*draft.tags, MODE_TAG],
        entities=draft.entities,
        sources=sources,
        scope=scope,
        confidence=_confidence(draft.confidence),
        created_at=now,
        valid_from=valid_from,
        valid_until=valid_until,
        metadata=_metadata(window),
    )


def fallback_item(
    window: Window, scope: Scope, *, now: datetime | None = None, reason: str | None = None
) -> MemoryItem:
    """The item that keeps a window whose extraction failed: its whole text, all sources.

    Tagged `MODE_TAG` and `FALLBACK_TAG`, type ``episode``, confidence 0.5;
    ``metadata["extraction"]["reason"]`` says why, when known.
    """
    text = window.text.strip() or "\n".join(s.content for s in window.sources if s.content)
    extra: dict[str, Any] = {"fallback": True}
    if reason:
        extra["reason"] = reason[:_MAX_REASON]
    return MemoryItem(
        text=text if text.strip() else "(empty window)",
        memory_type=MemoryType.EPISODE,
        tags=[MODE_TAG, FALLBACK_TAG],
        sources=list(window.sources),
        scope=scope,
        confidence=FALLBACK_CONFIDENCE,
        created_at=now or utcnow(),
        valid_from=_latest(list(window.sources)),
        metadata=_metadata(window, **extra),
    )


def _summary_item(
    summary: str, window: Window, scope: Scope, now: datetime, errors: list[str]
) -> MemoryItem | None:
    try:
        return MemoryItem(
            text=summary,
            memory_type=MemoryType.EPISODE,
            tags=[SUMMARY_TAG, MODE_TAG],
            sources=list(window.sources),
            scope=scope,
            confidence=DEFAULT_CONFIDENCE,
            created_at=now,
            valid_from=_latest(list(window.sources)),
            metadata=_metadata(window),
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        errors.append(f"summary: {type(exc).__name__}")
        return None


def items_from_reply(
    raw: str | Mapping[str, Any] | BaseException | None,
    window: Window,
    scope: Scope,
    *,
    now: datetime | None = None,
) -> FineResult:
    """Turn the LLM's reply for ``window`` into memory items; never raises on the reply.

    Args:
        raw: The reply text (or a decoded object from structured output); ``None`` or the
            exception when the call failed. Either gives a fallback item.
        window: The window the reply is about; its sources are the provenance.
        scope: Whose memories these are.
        now: Creation time of the items (default: now, UTC).

    Returns:
        The items, the summary item, whether the fallback was used, and the errors met.
        An empty but well-formed answer (``{"memories": []}``) is not a failure.
    """
    moment = now or utcnow()
    if isinstance(raw, BaseException):
        reason = f"the LLM call failed: {type(raw).__name__}: {raw}"
        item = fallback_item(window, scope, now=moment, reason=reason)
        return FineResult([item], None, True, [reason[:_MAX_REASON]])
    outcome = parse_answer(raw)
    errors = list(outcome.errors)
    items: list[MemoryItem] = []
    whole = outcome.whole
    for index, draft in enumerate(outcome.drafts):
        try:
            items.append(_item(draft, index, window, scope, moment, errors))
        except ValueError as exc:
            whole = False
            errors.append(f"memory {index}: not a valid memory item ({type(exc).__name__})")
    if not outcome.salvaged or (outcome.drafts and not items):
        reason = errors[-1] if errors else "no usable reply"
        item = fallback_item(window, scope, now=moment, reason=reason)
        return FineResult([item], None, True, errors)
    summary = None
    if outcome.summary:
        summary = _summary_item(outcome.summary, window, scope, moment, errors)
    return FineResult(items, summary, False, errors, partial=not whole)
