"""A PNG picture of a graph export, drawn with matplotlib (the optional ``viz`` extra).

The layout is a small Fruchterman-Reingold simulation in numpy, the same forces as the
HTML page's script: ``networkx.spring_layout`` needs scipy above 500 nodes, which
memtrellis does not depend on.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from memtrellis._graph_view import EDGE_COLOURS, MEMORY_COLOURS, SUBJECT_COLOUR, Selection
from memtrellis.errors import MissingDependencyError
from memtrellis.store.graph import MemoryGraph
from memtrellis.types import MemoryItem

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["layout", "png_bytes"]

#: Entity names written next to their square; more would cover the picture.
MAX_ENTITY_LABELS = 60

Positions = npt.NDArray[np.float64]


def layout(count: int, links: list[tuple[int, int]], *, iterations: int = 200) -> Positions:
    """Deterministic force-directed positions for ``count`` nodes joined by ``links``.

    Examples:
        >>> layout(3, [(0, 1), (1, 2)]).shape
        (3, 2)
    """
    index = np.arange(count, dtype=np.float64)
    radius, angle = np.sqrt(index + 0.5), index * 2.39996323  # a sunflower spiral start
    pos = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    if count < 2:
        return pos
    k = 1.0
    src = np.array([a for a, b in links if a != b], dtype=np.intp)
    dst = np.array([b for a, b in links if a != b], dtype=np.intp)
    temperature = math.sqrt(count)
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist2 = np.maximum((delta**2).sum(axis=-1), 1e-4)
        disp = (delta * (k * k / dist2)[:, :, None]).sum(axis=1) - 0.02 * pos
        if src.size:
            pull = pos[dst] - pos[src]
            force = pull * (np.sqrt((pull**2).sum(axis=-1)) / k)[:, None]
            np.add.at(disp, src, force)
            np.add.at(disp, dst, -force)
        length = np.maximum(np.sqrt((disp**2).sum(axis=-1)), 1e-9)
        pos += disp * (np.minimum(length, temperature) / length)[:, None]
        temperature *= 0.97
    return pos


def _memory_layers(
    ax: Axes, items: list[MemoryItem], xy: Positions, sizes: list[float]
) -> list[str]:
    present: list[str] = []
    for kind, colour in MEMORY_COLOURS.items():
        for superseded in (False, True):
            rows = [
                i
                for i, item in enumerate(items)
                if item.memory_type.value == kind and (item.superseded_by is not None) == superseded
            ]
            if not rows:
                continue
            if kind not in present:
                present.append(kind)
            ax.scatter(
                xy[rows, 0],
                xy[rows, 1],
                s=[sizes[i] for i in rows],
                c=colour,
                alpha=0.35 if superseded else 1.0,
                edgecolors="#333333" if superseded else "white",
                linestyles="dashed" if superseded else "solid",
                linewidths=0.8,
                zorder=2,
            )
    return present


def _legend_handles(present: list[str]) -> list[Any]:
    from matplotlib.lines import Line2D

    def dot(label: str, colour: str, **style: Any) -> Line2D:
        style = {"marker": "o", **style}
        return Line2D([], [], linestyle="", color=colour, label=label, **style)

    handles = [dot(f"memory: {kind}", MEMORY_COLOURS[kind]) for kind in present]
    handles.append(dot("subject", SUBJECT_COLOUR, marker="s"))
    handles.append(dot("superseded memory", "#999999", alpha=0.35, markeredgecolor="#333333"))
    for kind, colour in EDGE_COLOURS.items():
        dashed = kind == "supersedes"
        handles.append(Line2D([], [], color=colour, linestyle="--" if dashed else "-", label=kind))
    return handles


def png_bytes(graph: MemoryGraph, selection: Selection) -> bytes:
    """The selection drawn as a PNG image.

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import LineCollection
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError("matplotlib", extra="viz") from exc

    order = [*selection.memories, *selection.subjects]
    slot = {node: i for i, node in enumerate(order)}
    links = [(slot[s], slot[t]) for s, t, _ in selection.edges]
    xy = layout(len(order), links)
    items: list[MemoryItem] = [graph.g.nodes[m]["item"] for m in selection.memories]

    figure = Figure(figsize=(12, 9), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.set_axis_off()
    for kind, colour in EDGE_COLOURS.items():
        segments = [(xy[slot[s]], xy[slot[t]]) for s, t, k in selection.edges if k == kind]
        if segments:
            ax.add_collection(
                LineCollection(
                    segments,
                    colors=colour,
                    linewidths=0.8 if kind == "mentions" else 1.4,
                    linestyles="dashed" if kind == "supersedes" else "solid",
                    alpha=0.7,
                    zorder=1,
                )
            )
    sizes = [20 + 60 * item.confidence for item in items]
    present = _memory_layers(ax, items, xy[: len(items)], sizes)
    subjects = xy[len(items) :]
    if len(subjects):
        ax.scatter(subjects[:, 0], subjects[:, 1], s=40, c=SUBJECT_COLOUR, marker="s", zorder=3)
    for row, node in enumerate(selection.subjects[:MAX_ENTITY_LABELS]):
        name = str(graph.g.nodes[node].get("name", ""))
        x, y = subjects[row]
        ax.annotate(
            name, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7, parse_math=False
        )
    scope = "all entities" if selection.entity_id is None else f"entity {selection.entity_id}"
    title = f"memtrellis graph: {scope} ({len(items)} memories, {len(subjects)} subjects)"
    if selection.omitted:
        title += f"\nnewest {len(items)} of {selection.total} shown; {selection.omitted} left out"
    ax.set_title(title, fontsize=10, parse_math=False)
    if not order:
        ax.text(0.5, 0.5, "No memories in this scope.", ha="center", transform=ax.transAxes)
    ax.autoscale_view()
    ax.set_aspect("equal", adjustable="datalim")
    handles = _legend_handles(present)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1, 1), fontsize=8, frameon=False)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()
