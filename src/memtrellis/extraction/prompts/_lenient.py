"""Reading answers the way models write them: key spellings, value shapes, synonyms.

The answer models in this package call these helpers from their ``before`` validators,
so that a memory written as ``{"Text": "...", "type": "Preferences", "tags": "a, b"}``
validates like the canonical ``{"value": ..., "memory_type": "preference", "tags": [...]}``.

Examples:
    >>> canonical_memory({"Text": "Ana likes tea", "type": "x", "sourceIds": "m1"})
    {'memory_type': 'x', 'value': 'Ana likes tea', 'source_ids': 'm1'}
    >>> canonical_type("Action Item"), canonical_type("偏好"), canonical_type("mood")
    ('action_item', 'preference', 'mood')
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memtrellis.extraction.prompts._common import norm_key
from memtrellis.types import MemoryType

__all__ = [
    "MEMORY_LIST_KEYS",
    "NULL_WORDS",
    "SUMMARY_KEYS",
    "NumberedAnswer",
    "bool_value",
    "canonical_fields",
    "canonical_memory",
    "canonical_type",
    "confidence_value",
    "fold",
    "index_value",
    "locate_memories",
    "locate_records",
    "scalar_text",
    "string_list",
]

#: Keys under which models put the memory list (compared after `norm_key`).
MEMORY_LIST_KEYS = (
    "memories", "memory_list", "memory_items", "memory", "items", "facts", "记忆", "记忆列表",
)  # fmt: skip
#: Keys under which models put the summary.
SUMMARY_KEYS = ("summary", "background", "摘要", "总结", "概要")
#: Date hints that mean "no date".
NULL_WORDS = frozenset({"null", "none", "n/a", "na", "unknown", "-", "无", "未知", "不详"})

# First alias present wins; the canonical name is always tried first.
_FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "key": ("key", "attribute", "label", "键"),
    "memory_type": ("memory_type", "type", "kind", "category", "memorytype", "类型"),
    "value": ("value", "text", "content", "memory", "fact", "statement", "内容", "记忆"),
    "tags": ("tags", "tag", "topics", "标签"),
    "entities": ("entities", "entity", "people", "names", "实体"),
    "confidence": ("confidence", "certainty", "confidence_hint", "置信度"),
    "valid_from": ("valid_from", "validity_from", "valid_since", "since", "start", "开始"),
    "valid_until": ("valid_until", "valid_to", "validity_until", "until", "end", "expires", "结束"),
    "source_ids": (
        "source_ids", "source_id", "sources", "message_ids", "message_id", "ids", "evidence",
        "来源",
    ),
}  # fmt: skip
_TYPE_ALIASES = {
    "preferences": "preference", "like": "preference", "dislike": "preference",
    "events": "event", "facts": "fact", "decisions": "decision", "states": "state",
    "status": "state", "plan": "action_item", "todo": "action_item", "task": "action_item",
    "action": "action_item", "actionitem": "action_item", "skills": "skill",
    "predictions": "prediction", "episodes": "episode", "action_items": "action_item",
    "事实": "fact", "偏好": "preference", "事件": "event", "决定": "decision",
    "决策": "decision", "状态": "state", "预测": "prediction", "技能": "skill",
    "经历": "episode", "情节": "episode", "待办": "action_item", "待办事项": "action_item",
}  # fmt: skip
_CONFIDENCE_WORDS = {
    "very high": 0.95, "high": 0.9, "medium": 0.7, "moderate": 0.7, "mid": 0.7, "low": 0.5,
    "very low": 0.3, "高": 0.9, "中": 0.7, "中等": 0.7, "低": 0.5,
}  # fmt: skip
_LIST_SPLIT = re.compile(r"[,;，；、\n]+")
_MAX_FIELDS = 64
_MAX_LIST = 50
_MAX_ELEMENT_CHARS = 200


def scalar_text(value: object) -> str | None:
    """A JSON scalar as stripped text; ``None`` for null, empty text, lists and objects.

    Examples:
        >>> scalar_text(" tea "), scalar_text(2024), scalar_text(None), scalar_text([1])
        ('tea', '2024', None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = str(value).strip()
    return text or None


def string_list(value: object) -> list[str]:
    """Tags, entities or ids as a list of strings, from a list or from ``"a, b"``.

    Objects in a list contribute their ``id``/``message_id``/``name`` when they have one;
    other containers are dropped. At most 50 elements of at most 200 characters.

    Examples:
        >>> string_list("travel, food；旅行"), string_list(["a", 3, None, {"id": "m1"}])
        (['travel', 'food', '旅行'], ['a', '3', 'm1'])
    """
    if value is None:
        return []
    elements: list[object]
    if isinstance(value, str):
        elements = list(_LIST_SPLIT.split(value[: _MAX_LIST * _MAX_ELEMENT_CHARS]))
    elif isinstance(value, (list, tuple)):
        elements = list(value[: _MAX_LIST * 2])
    else:
        elements = [value]
    out: list[str] = []
    for element in elements:
        if isinstance(element, Mapping):
            element = next((element[k] for k in ("id", "message_id", "name") if k in element), None)
        text = scalar_text(element)
        if text is not None:
            out.append(text[:_MAX_ELEMENT_CHARS])
    return out[:_MAX_LIST]


def confidence_value(value: object) -> float | None:
    """A confidence hint as a number, not yet clamped; ``None`` when it cannot be read.

    ``high``/``medium``/``low`` (and 高/中/低) read as 0.9/0.7/0.5, ``"80%"`` as 0.8.

    Examples:
        >>> confidence_value("Medium"), confidence_value("80%"), confidence_value("sure")
        (0.7, 0.8, None)
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        word = " ".join(value.strip().lower().split())[:32]
        if word in _CONFIDENCE_WORDS:
            return _CONFIDENCE_WORDS[word]
        try:
            number = float(word.rstrip("%").strip())
        except ValueError:
            return None
        number = number / 100 if word.endswith("%") else number
    else:
        return None
    return number if math.isfinite(number) else None


def canonical_type(value: object) -> str:
    """A memory type folded to snake_case with common synonyms mapped; unknown kept as is."""
    found = scalar_text(value)
    if found is None:
        return MemoryType.FACT.value
    folded = norm_key(found)
    return _TYPE_ALIASES.get(folded, _TYPE_ALIASES.get(folded.replace("_", ""), folded))


def fold(data: Mapping[Any, Any]) -> dict[str, Any]:
    """``data`` with keys folded by `norm_key` (first spelling wins; 64 keys at most)."""
    folded: dict[str, Any] = {}
    for count, (key, value) in enumerate(data.items()):
        if count >= _MAX_FIELDS:
            break
        folded.setdefault(norm_key(key), value)
    return folded


def canonical_fields(
    data: Mapping[Any, Any], aliases: Mapping[str, tuple[str, ...]], text_fields: tuple[str, ...]
) -> dict[str, Any]:
    """``data`` with its keys mapped to canonical field names (other keys dropped).

    For each field the first alias present wins; a list or object never stands for one of
    ``text_fields`` (``{"memory": [...]}`` is not a memory's text).
    """
    folded = fold(data)
    out: dict[str, Any] = {}
    for name, names in aliases.items():
        for alias in names:
            if alias in folded and not (
                name in text_fields and isinstance(folded[alias], (list, Mapping))
            ):
                out[name] = folded[alias]
                break
    return out


def canonical_memory(data: Mapping[Any, Any]) -> dict[str, Any]:
    """A memory object with its field names mapped to the canonical ones (others dropped)."""
    return canonical_fields(data, _FIELD_ALIASES, ("value",))


def _is_memory_like(folded: Mapping[str, Any]) -> bool:
    return any(isinstance(folded.get(alias), str) for alias in _FIELD_ALIASES["value"])


def locate_memories(obj: object, _depth: int = 0) -> tuple[list[Any] | None, object, bool]:
    """Find the memory entries and the summary in a decoded answer, whatever its shape.

    Returns ``(entries, summary, explicit)``: ``entries`` is ``None`` when no memory list
    was found; ``explicit`` says it sat under a memory-list key, so that an empty list
    there is a real "nothing to remember". Bare strings count as memories only there.

    Examples:
        >>> locate_memories({"memoryList": [{"fact": "x"}], "Summary": "s"})
        ([{'fact': 'x'}], 's', True)
        >>> locate_memories({"text": "Ana is 30"})
        ([{'text': 'Ana is 30'}], None, False)
        >>> locate_memories({"result": {"items": []}})
        ([], None, True)
    """
    if isinstance(obj, Mapping):
        folded = fold(obj)
        summary = next((folded[k] for k in SUMMARY_KEYS if k in folded), None)
        for key in MEMORY_LIST_KEYS:
            found = folded.get(key)
            if isinstance(found, list):
                return found, summary, True
            if isinstance(found, Mapping):
                return [found], summary, True
        if _is_memory_like(folded):
            return [obj], summary, False
        inner = [v for v in folded.values() if isinstance(v, (Mapping, list))]
        if _depth < 2 and len(inner) == 1:  # a wrapper such as {"result": {...}}
            entries, inner_summary, explicit = locate_memories(inner[0], _depth + 1)
            if entries is not None or inner_summary is not None:
                return entries, summary if summary is not None else inner_summary, explicit
        return None, summary, False
    if isinstance(obj, list):
        nested = [locate_memories(e, 2) for e in obj[:_MAX_FIELDS] if isinstance(e, Mapping)]
        if any(explicit for _, _, explicit in nested):  # a list of whole answers
            entries = [entry for found, _, explicit in nested if explicit for entry in found or []]
            summary = next((s for _, s, _ in nested if isinstance(s, str)), None)
            return entries, summary, True
        # Outside an explicit memory list, only objects count: a list of bare strings is
        # as likely json-repair's reading of prose as an answer.
        return [e for e in obj if isinstance(e, Mapping)], None, False
    return None, None, False


_TRUE_WORDS = frozenset({"true", "yes", "y", "keep", "supported", "1", "是", "保留", "支持"})
_FALSE_WORDS = frozenset({"false", "no", "n", "drop", "unsupported", "0", "否", "删除", "不支持"})


def index_value(value: object) -> int | None:
    """A list index as models write it: ``2``, ``2.0``, ``"2"``, ``"[2]"``; else ``None``.

    Examples:
        >>> index_value("[2]"), index_value(2.0), index_value(True), index_value("two")
        (2, 2, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().strip("[]#").strip()[:12]
        return int(text) if text.isdigit() else None
    return None


def bool_value(value: object) -> bool | None:
    """A yes/no as models write it (``true``, ``"no"``, ``"keep"``, ``"保留"``...); else ``None``.

    Examples:
        >>> bool_value(False), bool_value(" Drop "), bool_value("maybe")
        (False, False, None)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()[:16]
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


def locate_records(obj: object, keys: tuple[str, ...]) -> list[Any] | None:
    """The list of records under one of ``keys`` (or a bare list, or one record).

    Examples:
        >>> locate_records({"Rewrites": [{"index": 0}]}, ("rewrites",))
        [{'index': 0}]
        >>> locate_records({"index": 1, "keep": False}, ("verdicts",))
        [{'index': 1, 'keep': False}]
    """
    if isinstance(obj, list):
        return list(obj)
    if not isinstance(obj, Mapping):
        return None
    folded = fold(obj)
    for key in keys:
        found = folded.get(key)
        if isinstance(found, list):
            return found
        if isinstance(found, Mapping):
            return [found]
    if "index" in folded:
        return [obj]
    inner = [v for v in folded.values() if isinstance(v, (Mapping, list))]
    if len(inner) == 1 and isinstance(inner[0], list):  # {"result": [...]}
        return list(inner[0])
    return None


class NumberedAnswer(BaseModel):
    """Base of an answer about the memory numbered ``index``, lenient about key names.

    Subclasses set ``ALIASES`` (canonical key -> accepted spellings) and ``TEXT_KEYS``
    (keys whose values may be given as free text).
    """

    model_config = ConfigDict(extra="ignore")

    ALIASES: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    TEXT_KEYS: ClassVar[tuple[str, ...]] = ()

    index: int = Field(ge=0, description="The number shown before the memory")

    @model_validator(mode="before")
    @classmethod
    def _canonical(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return canonical_fields(data, cls.ALIASES, cls.TEXT_KEYS)
        return data

    @field_validator("index", mode="before")
    @classmethod
    def _index(cls, value: Any) -> int:
        found = index_value(value)
        if found is None:
            raise ValueError("index must be a memory number")
        return found
