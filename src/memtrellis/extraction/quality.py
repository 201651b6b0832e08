"""Optional quality passes, conservative and sans I/O: rewrite, then judge.

Both are off by default (the pipeline's ``ExtractionConfig.rewrite`` / ``judge``). The
pipeline sends the messages built here and hands the reply back:

* `apply_rewrite` replaces a memory's text only for a valid index with a non-empty,
  plausible new text; the old text is kept in ``metadata["extraction"]["rewritten_from"]``.
* `apply_judgement` drops a memory only on an explicit, uncontradicted
  ``keep: false``; fallback items are never dropped.

Any failure (no reply, garbage, wrong shape, bad index) leaves the items as they were.

Examples:
    >>> from memtrellis.types import Scope
    >>> items = [MemoryItem(text=t, scope=Scope(entity_id="a")) for t in ("He is 30", "x")]
    >>> [i.text for i in apply_rewrite(items, '{"rewrites": [{"index": 0, "value": "Bo is 30"}]}')]
    ['Bo is 30', 'x']
    >>> [i.text for i in apply_judgement(items, '{"verdicts": [{"index": 1, "keep": false}]}')]
    ['He is 30']
    >>> apply_judgement(items, "the model timed out") == items
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.jsonload import How, flat_objects, load_json
from memtrellis.extraction.prompts._lenient import fold, locate_records
from memtrellis.extraction.prompts.judge import (
    JUDGE_LIST_KEYS,
    JUDGE_SCHEMA,
    Verdict,
    build_judge_messages,
)
from memtrellis.extraction.prompts.rewrite import (
    REWRITE_LIST_KEYS,
    REWRITE_SCHEMA,
    Rewrite,
    build_rewrite_messages,
)
from memtrellis.types import MemoryItem

__all__ = [
    "JUDGE_SCHEMA",
    "REWRITE_SCHEMA",
    "apply_judgement",
    "apply_rewrite",
    "build_judge_messages",
    "build_rewrite_messages",
    "judge_verdicts",
    "rewrite_texts",
]

_Record = TypeVar("_Record", bound=BaseModel)
_MAX_RECORDS = 500
_MIN_REWRITE_LIMIT = 1000  # a rewrite may be 4x the original, and at least this long


def _records(raw: object, keys: tuple[str, ...], model: type[_Record]) -> list[_Record]:
    def usable(value: Any, how: How) -> bool:
        found = locate_records(value, keys)
        if how == "scan":  # from a bracket inside prose: only a whole answer object
            return isinstance(value, Mapping) and any(k in fold(value) for k in keys)
        return found is not None and (bool(found) or how == "strict")

    try:
        value: object
        if isinstance(raw, (Mapping, list)):
            value = raw
        elif isinstance(raw, str):
            value = load_json(raw, usable).value
            if value is None:
                value = flat_objects(raw)
        else:
            return []
        records: list[_Record] = []
        for entry in (locate_records(value, keys) or [])[:_MAX_RECORDS]:
            try:
                records.append(model.model_validate(entry))
            except Exception:  # an invalid record is as good as a missing one
                continue
        return records
    except Exception:  # a quality pass must never take extraction down
        return []


def rewrite_texts(count: int, raw: str | Mapping[str, Any] | None) -> dict[int, str]:
    """The new texts a rewrite reply gives, by index (first one wins; bad indexes dropped)."""
    texts: dict[int, str] = {}
    for rewrite in _records(raw, REWRITE_LIST_KEYS, Rewrite):
        if rewrite.index < count:
            texts.setdefault(rewrite.index, rewrite.value)
    return texts


def judge_verdicts(count: int, raw: str | Mapping[str, Any] | None) -> dict[int, bool | None]:
    """The verdict for each judged index: ``True``/``False``, or ``None`` if contradictory."""
    verdicts: dict[int, bool | None] = {}
    for verdict in _records(raw, JUDGE_LIST_KEYS, Verdict):
        if verdict.index < count:
            seen = verdicts.get(verdict.index, verdict.keep)
            verdicts[verdict.index] = verdict.keep if seen == verdict.keep else None
    return verdicts


def _plausible(old: str, new: str) -> bool:
    # Guards against a model that answers with the whole conversation or repeats itself.
    return bool(new.strip()) and new != old and len(new) <= max(_MIN_REWRITE_LIMIT, 4 * len(old))


def apply_rewrite(
    items: Sequence[MemoryItem], raw: str | Mapping[str, Any] | None
) -> list[MemoryItem]:
    """``items`` with the texts the rewrite reply gives; the rest unchanged (same objects).

    Rewritten items are copies; their previous text is kept in
    ``metadata["extraction"]["rewritten_from"]``. Indexes are the 0-based numbers the
    prompt shows.
    """
    texts = rewrite_texts(len(items), raw)
    out: list[MemoryItem] = []
    for index, item in enumerate(items):
        new = texts.get(index)
        if new is None or not _plausible(item.text, new):
            out.append(item)
            continue
        try:
            copy = item.detached()
            copy.text = new
            extraction = copy.metadata.get("extraction")
            extraction = dict(extraction) if isinstance(extraction, Mapping) else {}
            copy.metadata = {
                **copy.metadata,
                "extraction": {**extraction, "rewritten_from": item.text},
            }
        except ValueError:  # the new text did not validate: keep the original
            out.append(item)
            continue
        out.append(copy)
    return out


def apply_judgement(
    items: Sequence[MemoryItem], raw: str | Mapping[str, Any] | None
) -> list[MemoryItem]:
    """``items`` without those the judge explicitly rejected (``keep: false``).

    A missing, invalid or contradictory verdict keeps the item, as does any failure to
    read the reply; an item tagged `FALLBACK_TAG` is
    always kept.
    """
    verdicts = judge_verdicts(len(items), raw)
    return [
        item
        for index, item in enumerate(items)
        if verdicts.get(index) is not False or FALLBACK_TAG in item.tags
    ]
