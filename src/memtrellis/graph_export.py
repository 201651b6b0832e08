"""Export the memory graph of one scope as GraphML, node-link JSON, an HTML page or a PNG.

An export holds one entity's (``entity_id``'s) memory nodes, the subject nodes they
mention and every edge among them; nothing of another entity. ``entity_id=None`` exports
every entity, for an administrator. (``tenant=``, the old name of ``entity_id=``, still
works and warns.)

These functions read [`MemoryGraph`][memtrellis.store.MemoryGraph] directly and do not lock it:
the caller holds the store's read lock for the whole call::

    store.refresh()
    with store.reading():
        export_graph(store.graph, "alice.html", format="html", entity_id="alice")

Examples:
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from memtrellis.store import MemoryGraph
    >>> from memtrellis.types import MemoryItem, Scope
    >>> graph = MemoryGraph()
    >>> graph.put(MemoryItem(text="Alice likes tea", entities=["tea"], scope=Scope(entity_id="a")))
    >>> out = export_graph(graph, Path(tempfile.mkdtemp()) / "a.json", format="json", entity_id="a")
    >>> sorted(node["kind"] for node in json.loads(out.read_text())["nodes"])
    ['memory', 'subject']
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any, Literal, get_args

import networkx as nx

from memtrellis._deprecated import renamed_argument
from memtrellis._graph_html import render_html
from memtrellis._graph_png import png_bytes
from memtrellis._graph_view import Selection, flat_graph, select
from memtrellis.errors import InvalidInputError
from memtrellis.store._files import atomic_write_bytes, given_path
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.store import Store

__all__ = [
    "HTML_MAX_MEMORIES",
    "PNG_MAX_MEMORIES",
    "ExportFormat",
    "export_graph",
    "export_store_graph",
    "node_link_data",
    "render_png",
]

ExportFormat = Literal["graphml", "json", "html", "png"]

#: Memories an HTML page shows by default (the newest); the page says how many it left out.
HTML_MAX_MEMORIES = 500
#: Memories a PNG shows by default (the newest): more make an unreadable picture.
PNG_MAX_MEMORIES = 200

# Characters XML 1.0 cannot hold at all, even escaped; GraphML readers reject the file.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def export_graph(
    graph: MemoryGraph,
    path: str | os.PathLike[str],
    *,
    format: ExportFormat,
    entity_id: str | None = None,
    max_memories: int | None = None,
    **deprecated: Any,
) -> Path:
    """Write one entity's part of the graph (every entity's for ``entity_id=None``) to
    ``path``.

    The caller holds ``store.reading()`` for the whole call. The file is replaced
    atomically. Attributes are flattened to scalars in every format: ``text``,
    ``memory_type``, ``confidence``, ``created_at``/``valid_from``/``valid_until`` as ISO
    strings, ``superseded_by``, ``tags`` joined with ``", "``, ``source_count`` and
    ``source_message_ids``; edges carry ``kind`` (also their key).

    Args:
        graph: The store's graph (``store_of(memory).graph_of(entity)`` in tests).
        path: File to write.
        format: ``"graphml"`` (reads back with ``networkx.read_graphml``), ``"json"``
            (node-link data for ``networkx.node_link_graph(data, edges="edges")``),
            ``"html"`` (one self-contained page with no network access) or ``"png"``
            (needs matplotlib: the ``viz`` extra).
        entity_id: The entity to export; ``None`` for all entities.
        max_memories: Keep only the newest this many memories. ``None``: all for GraphML
            and JSON, `HTML_MAX_MEMORIES` for HTML, `PNG_MAX_MEMORIES` for PNG.

    Returns:
        The path written.

    Raises:
        InvalidInputError: Unknown format, a ``max_memories`` that is not a non-negative
            integer, or a path that is not a usable file name (empty, NUL, not text).
        MissingDependencyError: PNG asked for without matplotlib installed.
        OSError: The file cannot be written.

    Examples:
        >>> import tempfile
        >>> from memtrellis.store import MemoryGraph
        >>> page = export_graph(MemoryGraph(), tempfile.mkdtemp() + "/g.html", format="html")
        >>> page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        True
    """
    entity_id = renamed_argument("export_graph", deprecated, "tenant", "entity_id", entity_id)
    if format not in get_args(ExportFormat):
        choices = ", ".join(get_args(ExportFormat))
        named = repr(format[:40]) if isinstance(format, str) else type(format).__name__
        raise InvalidInputError(f"unknown graph export format {named}; use one of {choices}")
    if max_memories is not None and (
        isinstance(max_memories, bool) or not isinstance(max_memories, int) or max_memories < 0
    ):
        raise InvalidInputError("max_memories must be a non-negative integer or None")
    target = given_path(path, "the graph file")
    if format == "png":
        return render_png(graph, target, entity_id=entity_id, max_memories=max_memories)
    default = HTML_MAX_MEMORIES if format == "html" else None
    selection = select(graph, entity_id, default if max_memories is None else max_memories)
    if format == "html":
        data = _utf8(render_html(graph, selection))
    elif format == "graphml":
        data = _graphml_bytes(graph, selection)
    else:
        data = _utf8(json.dumps(node_link_data(graph, selection), ensure_ascii=False, indent=1))
    atomic_write_bytes(target, data)
    return target


def node_link_data(graph: MemoryGraph, selection: Selection) -> dict[str, Any]:
    """The selection as node-link data, as ``networkx.node_link_data(g, edges="edges")``.

    Written out here rather than by networkx, whose ``edges=`` argument needs 3.4.

    Examples:
        >>> import json, tempfile
        >>> from memtrellis.store import MemoryGraph
        >>> path = export_graph(MemoryGraph(), tempfile.mkdtemp() + "/g.json", format="json")
        >>> sorted(json.loads(path.read_text(encoding="utf-8")))  # what format="json" writes
        ['directed', 'edges', 'graph', 'multigraph', 'nodes']
    """
    flat = flat_graph(graph, selection)
    return {
        "directed": True,
        "multigraph": True,
        "graph": dict(flat.graph),
        "nodes": [{"id": node, **data} for node, data in flat.nodes(data=True)],
        "edges": [
            {"source": s, "target": t, "key": k, **data}
            for s, t, k, data in flat.edges(keys=True, data=True)
        ],
    }


def _utf8(text: str) -> bytes:
    # Entity names are not cleaned of lone surrogates as memory text is; never fail on one.
    return text.encode("utf-8", "replace")


def _xml_safe(value: Any) -> Any:
    return _XML_ILLEGAL.sub("\ufffd", value) if isinstance(value, str) else value


def _graphml_bytes(graph: MemoryGraph, selection: Selection) -> bytes:
    flat = flat_graph(graph, selection)
    for attrs in [flat.graph, *(d for _, d in flat.nodes(data=True))]:
        attrs.update({name: _xml_safe(value) for name, value in attrs.items()})
    renamed = {node: _xml_safe(node) for node in flat if _xml_safe(node) != node}
    if renamed:
        nx.relabel_nodes(flat, renamed, copy=False)
    buffer = io.BytesIO()
    nx.write_graphml(flat, buffer, encoding="utf-8")
    return buffer.getvalue()


def render_png(
    graph: MemoryGraph,
    path: str | os.PathLike[str],
    *,
    entity_id: str | None = None,
    max_memories: int | None = None,
    **deprecated: Any,
) -> Path:
    """Draw one entity's graph to a PNG with matplotlib, in the HTML page's colours.

    The caller holds ``store.reading()`` for the whole call.

    Args:
        graph: The store's graph.
        path: PNG file to write.
        entity_id: The entity to draw; ``None`` for all entities.
        max_memories: Newest memories drawn; ``None`` for `PNG_MAX_MEMORIES`.

    Returns:
        The path written.

    Raises:
        MissingDependencyError: matplotlib is not installed (the ``viz`` extra).

    Examples:
        >>> import tempfile
        >>> from memtrellis.store import MemoryGraph
        >>> png = render_png(MemoryGraph(), tempfile.mkdtemp() + "/g.png")  # doctest: +SKIP
        >>> png.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"  # doctest: +SKIP
        True
    """
    entity_id = renamed_argument("render_png", deprecated, "tenant", "entity_id", entity_id)
    limit = PNG_MAX_MEMORIES if max_memories is None else max_memories
    target = Path(path)
    atomic_write_bytes(target, png_bytes(graph, select(graph, entity_id, limit)))
    return target


def export_store_graph(
    store: Store,
    path: str | os.PathLike[str],
    format: ExportFormat,
    entity_id: str | None,
    max_memories: int | None = None,
) -> Path:
    """[`export_graph`][memtrellis.graph_export.export_graph] of one entity's shard of
    ``store`` (held still while it is written), or of every entity's for ``entity_id=None``.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder, store_of
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as m:
        ...     _ = m.add("Ana moved to Porto", entity_id="ana")
        ...     export_store_graph(store_of(m), m.path / "ana.json", "json", "ana").name
        'ana.json'
    """
    if entity_id is None:
        combined = store.combined_graph()
        return export_graph(combined, path, format=format, max_memories=max_memories)
    store.refresh(entity_id)
    with store.reading(entity_id) as shard:
        return export_graph(
            shard.graph, path, format=format, entity_id=entity_id, max_memories=max_memories
        )
