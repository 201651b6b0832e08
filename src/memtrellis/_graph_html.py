"""The self-contained HTML view of a graph export: page data and its safe embedding.

The page (``_graph_page.html`` beside this module) loads nothing from anywhere: its style
and script are inline, its Content-Security-Policy forbids every fetch, and the graph
rides along as JSON in a ``<script type="application/json">`` block that the inline
script reads. Memory text is user data, so the JSON has ``<``, ``>`` and ``&`` written
as ``\\u003c``-style escapes: nothing in it can close the block or open a tag, and the
script only ever puts text into the page through ``textContent``.
"""

from __future__ import annotations

import html
import json
import re
from importlib.resources import files
from typing import Any

from memtrellis._graph_view import (
    EDGE_COLOURS,
    MEMORY_COLOURS,
    SUBJECT_COLOUR,
    Selection,
    memory_attrs,
    subject_attrs,
)
from memtrellis.store.graph import MemoryGraph
from memtrellis.types import HistoryEvent, MemoryItem

__all__ = ["page_data", "render_html", "script_json"]

#: Characters of a source message shown in the page (the memory text is shown whole).
EXCERPT_CHARS = 300

_SCRIPT_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")
_PLACEHOLDER = re.compile("__(TITLE|NOTE|DATA)__")


def script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` at all.

    Examples:
        >>> script_json({"text": "</script><b>&"})
        '{"text":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _SCRIPT_UNSAFE.sub(lambda match: _SCRIPT_ESCAPES[match.group()], text)


def _sources(item: MemoryItem) -> list[dict[str, Any]]:
    return [
        {
            "kind": source.kind.value,
            "message_id": source.message_id,
            "role": source.role,
            "speaker": source.speaker,
            "timestamp": source.timestamp.isoformat() if source.timestamp else None,
            "document": source.document,
            "excerpt": source.content[:EXCERPT_CHARS],
        }
        for source in item.sources
    ]


def _history(events: list[HistoryEvent]) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json") for event in events]


def page_data(graph: MemoryGraph, selection: Selection) -> dict[str, Any]:
    """Everything the page shows: nodes with their details, edges, counts and colours.

    Memory nodes carry the flattened attributes of every export plus ``sources`` (message
    id, speaker, role, timestamp, excerpt) and ``history`` (the memory's events).
    """
    nodes: list[dict[str, Any]] = []
    for memory_id in selection.memories:
        item: MemoryItem = graph.g.nodes[memory_id]["item"]
        nodes.append(
            {
                "id": memory_id,
                **memory_attrs(item),
                "sources": _sources(item),
                "history": _history(graph.history(memory_id)),
            }
        )
    for node in selection.subjects:
        nodes.append({"id": node, **subject_attrs(graph.g.nodes[node])})
    return {
        "entity_id": selection.entity_id,
        "total_memories": selection.total,
        "omitted_memories": selection.omitted,
        "nodes": nodes,
        "edges": [{"source": s, "target": t, "kind": k} for s, t, k in selection.edges],
        "colours": {"memory": MEMORY_COLOURS, "subject": SUBJECT_COLOUR, "edge": EDGE_COLOURS},
    }


def _note(selection: Selection) -> str:
    if selection.omitted:
        return (
            f"Showing the newest {len(selection.memories)} of {selection.total} memories; "
            f"{selection.omitted} older ones are left out."
        )
    if not selection.total:
        return "No memories in this scope."
    return ""


def render_html(graph: MemoryGraph, selection: Selection) -> str:
    """The whole page for ``selection``, one self-contained HTML document."""
    scope = "all entities" if selection.entity_id is None else f"entity {selection.entity_id}"
    values = {
        "TITLE": html.escape(f"memtrellis graph: {scope}"),
        "NOTE": html.escape(_note(selection)),
        "DATA": script_json(page_data(graph, selection)),
    }
    template = files("memtrellis").joinpath("_graph_page.html").read_text(encoding="utf-8")
    # One pass, so that a value containing a placeholder is never substituted again.
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)
