"""Rich renderings of memories, recall results, history and health."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from memtrellis.cli._state import plural
from memtrellis.store.graph import SUBJECT_NODE_PREFIX
from memtrellis.types import HistoryEvent, MemoryItem, RecallExplanation, RecallResult

__all__ = [
    "fmt_time",
    "health_table",
    "history_table",
    "item_details",
    "memories_table",
    "recall_table",
    "short_id",
]

#: Characters of an id shown in tables; ``get``/``forget``/``history`` accept this prefix.
ID_PREFIX = 8
_NONE = "—"


def short_id(ident: str) -> str:
    """The id prefix shown in tables."""
    return ident[:ID_PREFIX]


def fmt_time(value: datetime | None) -> str:
    """A timestamp to the minute, in the zone it was stored in (UTC unless told otherwise)."""
    if value is None:
        return _NONE
    offset = value.utcoffset()
    suffix = "" if offset is None else ("Z" if not offset else value.strftime("%z"))
    return value.strftime("%Y-%m-%d %H:%M") + suffix


def _score(value: float | None, rank: int | None = None) -> str:
    if value is None:
        return _NONE
    return f"{value:.3f}" if rank is None else f"{value:.3f} (#{rank})"


def _source(item: MemoryItem) -> tuple[str, datetime | None]:
    """The first source's message id and the best timestamp for the memory."""
    for source in item.sources:
        if source.message_id or source.timestamp:
            return source.message_id or _NONE, source.timestamp or item.created_at
    return _NONE, item.created_at


def memories_table(items: Iterable[MemoryItem], *, title: str | None = None) -> Table:
    """A table of memories: id prefix, type, text, source message id and timestamp."""
    table = Table(title=title, box=box.SIMPLE_HEAD, expand=True)
    table.add_column("id", no_wrap=True, style="cyan")
    table.add_column("type", no_wrap=True)
    table.add_column("text", ratio=1)
    table.add_column("source", no_wrap=True, style="dim")
    table.add_column("when", no_wrap=True, style="dim")
    for item in items:
        message_id, when = _source(item)
        text = Text(item.text)
        if item.superseded_by:
            text.stylize("strike")
            text.append(f"  (superseded by {short_id(item.superseded_by)})", style="yellow")
        table.add_row(
            short_id(item.id), item.memory_type.value, text, Text(message_id), fmt_time(when)
        )
    return table


def _graph_path(path: list[str]) -> str:
    if not path:
        return _NONE
    return " → ".join(
        step if step.startswith(SUBJECT_NODE_PREFIX) else short_id(step) for step in path
    )


def explanation_text(explanation: RecallExplanation) -> Text:
    """The scores behind one recalled memory, on two short lines."""
    text = Text(style="dim")
    text.append(f"dense {_score(explanation.dense_score, explanation.dense_rank)}")
    text.append(f" · keyword {_score(explanation.keyword_score, explanation.keyword_rank)}")
    text.append(f" · final {explanation.final_score:.4f}")
    text.append(f"\ngraph {_graph_path(explanation.graph_path)}")
    return text


def recall_table(result: RecallResult) -> RenderableType:
    """Recalled memories best first, each with its score explanation, and a summary line."""
    table = Table(box=box.SIMPLE_HEAD, expand=False, title=f"recall: {escape(result.query)}")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("memory", ratio=1)
    for rank, entry in enumerate(result.items, start=1):
        cell = Text(entry.memory.text + "\n", style="bold")
        message_id, when = _source(entry.memory)
        origin = f" · from {message_id}" if message_id != _NONE else ""
        speaker = next(
            (s.speaker or s.role for s in entry.memory.sources if s.speaker or s.role), None
        )
        origin += f" ({speaker}, {fmt_time(when)})" if speaker else f" ({fmt_time(when)})"
        cell.append(
            f"{short_id(entry.memory.id)} · {entry.memory.memory_type.value}{origin}\n",
            style="cyan",
        )
        cell.append_text(explanation_text(entry.explanation))
        table.add_row(str(rank), cell)
    tokens = (
        plural(result.tokens, "token")
        if result.token_budget is None
        else f"{result.tokens} of {plural(result.token_budget, 'token')}"
    )
    summary = Text(
        f"{plural(len(result.items), 'memory', 'memories')} · {tokens}"
        f"{' (truncated to budget)' if result.truncated else ''} · {result.latency_ms:.1f} ms",
        style="dim",
    )
    if not result.items:
        return Group(Text("no memories recalled", style="yellow"), summary)
    return Group(table, summary)


def _value(key: str, value: Any) -> str:
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Enum):
        return str(value.value)
    if key.endswith("_bytes") and isinstance(value, int):
        return _human_bytes(value)
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, datetime):
        return fmt_time(value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_value(str(k), v)}" for k, v in value.items()) or _NONE
    if isinstance(value, (list, tuple)):
        return ", ".join(_value(key, v) for v in value) or _NONE
    return str(value)


def _human_bytes(size: int) -> str:
    amount = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def health_table(fields: Mapping[str, Any]) -> Table:
    """Every field of a health report, one per row, whatever fields the report has."""
    table = Table(title="health", box=box.SIMPLE_HEAD, show_header=False)
    table.add_column("field", style="cyan", no_wrap=True)
    table.add_column("value")
    for key, value in fields.items():
        table.add_row(key.replace("_", " "), Text(_value(key, value)))
    return table


def item_details(item: MemoryItem) -> Table:
    """Every field of one memory, with its sources listed one per line."""
    table = Table(box=box.SIMPLE_HEAD, show_header=False, title=f"memory {escape(item.id)}")
    table.add_column("field", style="cyan", no_wrap=True)
    table.add_column("value")
    for key, value in item.model_dump(exclude={"sources"}).items():
        if key == "scope":
            value = {k: v for k, v in value.items() if v is not None}
        table.add_row(key.replace("_", " "), Text(_value(key, value)))
    for number, source in enumerate(item.sources, start=1):
        head = " ".join(
            part
            for part in (
                source.kind.value,
                source.message_id,
                source.role,
                source.speaker,
                fmt_time(source.timestamp) if source.timestamp else None,
            )
            if part
        )
        table.add_row(f"source {number}", Text(f"{head}\n", style="dim") + Text(source.content))
    return table


def history_table(events: Iterable[HistoryEvent], *, memory_id: str) -> Table:
    """A memory's life, oldest event first."""
    table = Table(title=f"history of {escape(memory_id)}", box=box.SIMPLE_HEAD)
    table.add_column("at", no_wrap=True, style="dim")
    table.add_column("action", no_wrap=True, style="cyan")
    table.add_column("detail")
    for event in events:
        detail = json.dumps(event.detail, ensure_ascii=False, default=str) if event.detail else ""
        table.add_row(fmt_time(event.at), Text(event.action), Text(detail))
    return table
