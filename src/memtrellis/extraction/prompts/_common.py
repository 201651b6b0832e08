"""Pieces every prompt shares: the window's time span, its source ids, fencing, key names.

Examples:
    >>> from datetime import datetime, timezone
    >>> from memtrellis.extraction.model import Language
    >>> format_time(datetime(2024, 3, 5, 9, 12, tzinfo=timezone.utc), Language.EN)
    '2024-03-05 09:12 UTC (Tuesday)'
    >>> format_time(datetime(2024, 3, 5, 9, 12, tzinfo=timezone.utc), Language.ZH)
    '2024-03-05 09:12 UTC（星期二）'
    >>> fence("a </messages> b", "messages")
    'a <\\\\/messages> b'
    >>> norm_key("memoryList"), norm_key(" Memory list "), norm_key("source-IDs")
    ('memory_list', 'memory_list', 'source_ids')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone

from memtrellis.extraction.model import Language, Window
from memtrellis.types import MemoryItem, SourceKind

__all__ = [
    "fence",
    "format_time",
    "is_chat",
    "norm_key",
    "render_memories",
    "review_messages",
    "source_ids",
    "time_span",
    "window_span_text",
]

_WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_WEEKDAYS_ZH = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s\-]+")
_MAX_KEY_CHARS = 64


def norm_key(key: object) -> str:
    """A JSON key folded to snake_case, so ``memoryList`` and ``memory list`` compare equal."""
    text = _CAMEL.sub("_", str(key)[:_MAX_KEY_CHARS].strip())
    return _SEPARATORS.sub("_", text.lower())


def format_time(moment: datetime, language: Language) -> str:
    """``moment`` in UTC, as the window lines show times, with the weekday named.

    The weekday lets the model resolve "this Friday" without calendar arithmetic.
    """
    moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment
    moment = moment.astimezone(timezone.utc)
    stamp = moment.strftime("%Y-%m-%d %H:%M UTC")
    if language is Language.ZH:
        return f"{stamp}（{_WEEKDAYS_ZH[moment.weekday()]}）"
    return f"{stamp} ({_WEEKDAYS_EN[moment.weekday()]})"


def time_span(window: Window) -> tuple[datetime | None, datetime | None]:
    """The earliest and latest source timestamps of ``window`` (``None`` when it has none)."""
    stamps = [s.timestamp for s in window.sources if s.timestamp is not None]
    if not stamps:
        return None, None
    return min(stamps), max(stamps)


def window_span_text(window: Window) -> tuple[str, str]:
    """The window's time span as two display strings (``"unknown"`` / ``"未知"`` if none)."""
    start, end = time_span(window)
    unknown = "未知" if window.language is Language.ZH else "unknown"
    if start is None or end is None:
        return unknown, unknown
    return format_time(start, window.language), format_time(end, window.language)


def source_ids(window: Window) -> list[str]:
    """The distinct message ids of ``window``'s sources, in order."""
    seen: dict[str, None] = {}
    for source in window.sources:
        if source.message_id:
            seen.setdefault(source.message_id, None)
    return list(seen)


def is_chat(window: Window) -> bool:
    """Whether ``window`` holds chat messages (else a document or plain-text excerpt)."""
    return window.kind is SourceKind.CHAT


def fence(text: str, tag: str) -> str:
    """``text`` made safe to place between ``<tag>`` and ``</tag>``.

    The conversation is data: a message that contains the closing tag must not be able
    to end the block and speak as the prompt.
    """
    return re.sub(rf"</(\s*){re.escape(tag)}", rf"<\\/\1{tag}", text, flags=re.IGNORECASE)


def render_memories(items: Sequence[MemoryItem], tag: str = "memories") -> str:
    """Numbered memory lines ``[i] (type) text``, 0-based, one line each, fenced for ``tag``."""
    lines = []
    for index, item in enumerate(items):
        text = " ".join(item.text.split())
        lines.append(f"[{index}] ({item.memory_type.value}) {text}")
    return fence("\n".join(lines), tag)


def review_messages(
    items: Sequence[MemoryItem],
    window: Window,
    system: tuple[str, str],
    user: tuple[str, str],
) -> list[dict[str, str]]:
    """Messages for a pass over extracted memories (rewrite, judge): the window, then them.

    ``system`` and ``user`` are ``(english, chinese)`` templates; the user template takes
    ``start``, ``end``, ``text`` and ``memories``.
    """
    zh = window.language is Language.ZH
    start, end = window_span_text(window)
    content = user[zh].format(
        start=start, end=end, text=fence(window.text, "messages"), memories=render_memories(items)
    )
    return [{"role": "system", "content": system[zh]}, {"role": "user", "content": content}]
