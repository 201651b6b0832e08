"""Robust parsing of extraction replies: keep every memory that makes sense, never raise.

The reply is decoded by `memtrellis.extraction.jsonload` (strict JSON, then
``json-repair`` on short texts, then the flat objects one by one), the memory list is
found whatever its key (``memories``, ``memory list``, ``memoryList``, ``items``, a bare
list, a single memory), and each memory is validated on its own with
`MemoryDraft`: the valid ones are kept and
the others reported in ``errors``.

``salvaged`` is false only when nothing usable came out: no valid memory, no summary,
and not an explicit, well-formed empty answer such as ``{"memories": []}``. (An empty
list that json-repair *produced*, say from a reply cut off after ``{"memories": [``,
does not count: that is a failure, and the caller stores a fallback.)

Examples:
    >>> out = parse_answer('Here you go:\\n```json\\n{"memory_list": [{"text": "Ana is 30",'
    ...                    ' "type": "fact"}, {"type": "fact"}],}\\n```')
    >>> [d.value for d in out.drafts], out.salvaged
    (['Ana is 30'], True)
    >>> out.errors
    ['the reply was not valid JSON; it was repaired', 'memory 1: value: Field required']
    >>> parse_answer('{"memories": []}').salvaged, parse_answer("no idea").salvaged
    (True, False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from memtrellis.extraction.jsonload import (
    MAX_INPUT_CHARS,
    How,
    clip,
    flat_objects,
    load_json,
)
from memtrellis.extraction.prompts._lenient import locate_memories, scalar_text
from memtrellis.extraction.prompts.extract import MemoryDraft

__all__ = ["MAX_MEMORIES", "ParseOutcome", "describe_validation_error", "parse_answer"]

#: Most memories taken from one reply; a window never holds more facts than this.
MAX_MEMORIES = 200
_MAX_ERRORS = 20
_SUMMARY = re.compile(r"""["']summary["']\s*:\s*"((?:[^"\\\n]|\\.){1,4000})\"""", re.IGNORECASE)


@dataclass
class ParseOutcome:
    """What a reply held: the valid memories, the summary, and what went wrong."""

    drafts: list[MemoryDraft] = field(default_factory=list)
    summary: str | None = None
    errors: list[str] = field(default_factory=list)
    salvaged: bool = False  # anything usable (see the module docstring)
    #: The reply was valid JSON (not repaired, not cut) and every memory in it validated:
    #: nothing in it was lost. A captured turn is stored only from whole replies.
    whole: bool = False


def describe_validation_error(exc: ValidationError, limit: int = 3) -> str:
    """A short, bounded description of ``exc`` (never the offending input itself)."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:limit]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "memory"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid"


def _usable(value: Any, how: How) -> bool:
    entries, summary, explicit = locate_memories(value)
    if isinstance(summary, str) and summary.strip():
        return True
    if how == "strict":
        return entries is not None
    if how == "scan":  # only a whole answer, not a memory or a list inside a broken one
        return explicit and isinstance(value, Mapping)
    # json-repair turns most garbage into *some* value, often an empty list
    return _any_valid(entries or [])


def _any_valid(entries: list[Any]) -> bool:
    for entry in entries[:MAX_MEMORIES]:
        try:
            MemoryDraft.model_validate(entry)
        except Exception:
            continue
        return True
    return False


def _build(
    entries: list[Any], summary: object, *, explicit: bool, strict: bool, errors: list[str]
) -> ParseOutcome:
    capped = len(entries) > MAX_MEMORIES
    if capped:
        errors.append(f"{len(entries)} memories in the reply; only the first {MAX_MEMORIES} kept")
        entries = entries[:MAX_MEMORIES]
    drafts: list[MemoryDraft] = []
    for index, entry in enumerate(entries):
        try:
            drafts.append(MemoryDraft.model_validate(entry))
        except ValidationError as exc:
            errors.append(f"memory {index}: {describe_validation_error(exc)}")
        except Exception as exc:  # e.g. RecursionError on absurdly nested input
            errors.append(f"memory {index}: {type(exc).__name__}")
    text = scalar_text(summary) if isinstance(summary, str) else None
    salvaged = bool(drafts) or text is not None or (explicit and strict and not entries)
    whole = salvaged and strict and not capped and len(drafts) == len(entries)
    return ParseOutcome(drafts, text, errors, salvaged, whole)


def _salvage(text: str, errors: list[str]) -> ParseOutcome:
    entries: list[Any] = []
    summary: str | None = None
    for obj in flat_objects(text):
        found, found_summary, _ = locate_memories(obj)
        entries.extend(found or [])
        if summary is None and isinstance(found_summary, str):
            summary = found_summary
    if summary is None:
        match = _SUMMARY.search(text)
        if match is not None:
            try:
                summary = str(json.loads(f'"{match.group(1)}"'))
            except ValueError:
                summary = match.group(1)
    if entries or summary:
        errors.append("the reply was not valid JSON; memories were salvaged one by one")
    return _build(entries, summary, explicit=False, strict=False, errors=errors)


def _decoded(value: object, *, strict: bool, errors: list[str]) -> ParseOutcome:
    entries, summary, explicit = locate_memories(value)
    if entries is None and summary is None:
        errors.append("the reply holds no memory list")
    # A bare, valid ``[]`` is as clear a "nothing to remember" as ``{"memories": []}``.
    explicit = explicit or value == []
    return _build(entries or [], summary, explicit=explicit, strict=strict, errors=errors)


def _parse(raw: object) -> ParseOutcome:
    errors: list[str] = []
    if raw is None:
        return ParseOutcome(errors=["no reply"])
    if isinstance(raw, (Mapping, list)):
        return _decoded(raw, strict=True, errors=errors)
    if not isinstance(raw, str):
        return ParseOutcome(errors=[f"unsupported reply type {type(raw).__name__}"])
    text, cut = clip(raw)
    if cut:
        errors.append(f"the reply is longer than {MAX_INPUT_CHARS} characters; the rest ignored")
    if not text.strip():
        return ParseOutcome(errors=[*errors, "empty reply"])
    loaded = load_json(text, _usable)
    if loaded.value is not None:
        if loaded.repaired:
            errors.append("the reply was not valid JSON; it was repaired")
        return _decoded(loaded.value, strict=not loaded.repaired and not cut, errors=errors)
    return _salvage(text, errors)


def parse_answer(raw: str | Mapping[str, Any] | None) -> ParseOutcome:
    """Parse an extraction reply (text, or a decoded object from structured output).

    Never raises and never runs long: input beyond 200,000 characters is ignored and
    json-repair only sees bounded pieces. See the module docstring for what is accepted.

    Args:
        raw: The model's reply; ``None`` when there was none.

    Returns:
        The valid drafts, the summary, the errors met, and whether anything was salvaged.
    """
    try:
        outcome = _parse(raw)
    except Exception as exc:  # a last guard: parsing must never take the pipeline down
        outcome = ParseOutcome(errors=[f"the reply could not be parsed: {type(exc).__name__}"])
    if not outcome.salvaged:
        outcome.errors.append("nothing could be salvaged from the reply")
    if len(outcome.errors) > _MAX_ERRORS:
        extra = len(outcome.errors) - _MAX_ERRORS
        outcome.errors = [*outcome.errors[:_MAX_ERRORS], f"... and {extra} more errors"]
    return outcome
