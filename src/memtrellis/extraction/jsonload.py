"""Bounded JSON loading for model replies: strict first, then json-repair, then salvage.

Shared by every LLM answer the package reads: extraction's replies and passes, and the
lifecycle's relation judge (public within the package; not part of the API).

Repairing is delegated to ``json-repair``; what this module adds is *where* to look
(inside code fences, between the first bracket and the last, at each opening bracket
of prose) and *how much* work to allow. json-repair is superlinear on some malformed
inputs (an unclosed string followed by many fragments took minutes at 200k characters
here; see mangiucugna/json_repair#203), so it only ever sees short texts: the whole
reply when it is short, otherwise the flat ``{...}`` objects cut out of it one by one,
each capped, under a total budget. Nothing here raises on any input.

Examples:
    >>> load_json("Sure:\\n```json\\n{'a': [1, 2,],}\\n```", lambda value, how: True)
    Loaded(value={'a': [1, 2]}, repaired=True)
    >>> flat_objects('junk {"index": 0, "value": "x"} more {index: 1, "keep": false,')
    [{'index': 0, 'value': 'x'}, {'index': 1, 'keep': False}]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal

import json_repair

__all__ = [
    "CHUNK_CHARS",
    "MAX_INPUT_CHARS",
    "REPAIR_BUDGET_CHARS",
    "WHOLE_REPAIR_CHARS",
    "Loaded",
    "clip",
    "flat_objects",
    "load_json",
]

#: Longest reply looked at; the rest is cut off (and reported by the callers).
MAX_INPUT_CHARS = 200_000
#: Longest text handed to json-repair in one piece.
WHOLE_REPAIR_CHARS = 8_000
#: Longest single ``{...}`` object handed to json-repair during salvage.
CHUNK_CHARS = 4_000
#: Total characters json-repair may see while salvaging one reply.
REPAIR_BUDGET_CHARS = 48_000

_FENCE = re.compile(r"```[ \t]*[\w-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_OPENERS = re.compile(r"[\[{]")
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}?")
_MAX_FENCES = 8
_MAX_STARTS = 32
_MAX_OBJECTS = 1_000
_MISSING = object()

#: How a value was decoded: the whole candidate strictly, strictly from an opening bracket
#: inside prose, or by json-repair.
How = Literal["strict", "scan", "repaired"]
#: ``accept(value, how)``: whether a decoded value is the answer being looked for. Be
#: stricter for ``scan`` (it finds inner objects of a broken answer: take only a whole
#: answer) and ``repaired`` (json-repair makes *some* value of any garbage).
Accept = Callable[[Any, How], bool]


@dataclass(frozen=True)
class Loaded:
    """The first decoded value that was accepted (``None`` if none), and how it was got."""

    value: Any
    repaired: bool


def clip(text: str) -> tuple[str, bool]:
    """``text`` cut to `MAX_INPUT_CHARS`, and whether it was cut."""
    if len(text) > MAX_INPUT_CHARS:
        return text[:MAX_INPUT_CHARS], True
    return text, False


def _strict(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _MISSING


def _repair(text: str) -> Any:
    try:
        return json_repair.loads(text, skip_json_loads=True)
    except Exception:  # json-repair raises ValueError, RecursionError, IndexError...
        return _MISSING


def _candidates(text: str) -> list[str]:
    found = [m.group(1).strip() for m in islice(_FENCE.finditer(text), _MAX_FENCES)]
    first = _OPENERS.search(text)
    if first is not None:
        last = max(text.rfind("}"), text.rfind("]"))
        found.append(
            text[first.start() : last + 1] if last > first.start() else text[first.start() :]
        )
    found.append(text.strip())
    return [c for c in dict.fromkeys(found) if c]


def load_json(text: str, accept: Accept) -> Loaded:
    """Decode the answer in ``text``: strict JSON first, json-repair on short texts.

    Tries, in order: each candidate (fenced blocks, first-to-last bracket span, the whole
    text) with `json.loads`; a JSON value starting at each of the first opening
    brackets (prose around a valid object); then json-repair on the first two candidates
    no longer than `WHOLE_REPAIR_CHARS`. The first value ``accept`` takes wins.
    """
    text, _ = clip(text)
    candidates = _candidates(text)
    for candidate in candidates:
        value = _strict(candidate)
        if value is not _MISSING and accept(value, "strict"):
            return Loaded(value, False)
    decoder = json.JSONDecoder()
    for opener in islice(_OPENERS.finditer(text), _MAX_STARTS):
        try:
            value, _ = decoder.raw_decode(text, opener.start())
        except (ValueError, RecursionError):
            continue
        if accept(value, "scan"):
            return Loaded(value, False)
    short = [c for c in candidates if len(c) <= WHOLE_REPAIR_CHARS][:2]
    for candidate in short:
        value = _repair(candidate)
        if value is not _MISSING and accept(value, "repaired"):
            return Loaded(value, True)
    return Loaded(None, False)


def flat_objects(text: str) -> list[dict[str, Any]]:
    """Every flat ``{...}`` object of ``text`` (one without nested objects) that decodes.

    The salvage path for long or badly broken replies: memories, rewrites and verdicts
    are all flat objects, so they can be cut out and decoded one at a time. An object
    cut short by the next ``{`` or by the end of the text is repaired. json-repair sees
    at most `CHUNK_CHARS` per object and `REPAIR_BUDGET_CHARS` in all.
    """
    text, _ = clip(text)
    budget = REPAIR_BUDGET_CHARS
    found: list[dict[str, Any]] = []
    for match in islice(_FLAT_OBJECT.finditer(text), _MAX_OBJECTS):
        chunk = match.group(0)
        value = _strict(chunk)
        if value is _MISSING and budget > 0:
            chunk = chunk[:CHUNK_CHARS]
            budget -= len(chunk)
            value = _repair(chunk)
        if isinstance(value, dict) and value:
            found.append(value)
    return found
