"""Draw the memory graph pictured in the docs: python3 tools/graph_picture.py

Builds a small store in a temporary directory (offline default embedder), a life in
which one fact changes, and writes docs/assets/graph-ana.png with ``Memory.export_graph``:
the same picture as ``memtrellis graph --entity-id ana --png``. Needs the ``viz`` extra.

Beside the picture, docs/assets/graph-ana.json records what it shows (each node and edge,
without the random ids), the PNG's SHA-256 and the renderer that drew it (matplotlib, FreeType);
tests/test_graph_picture.py rebuilds the graph and fails when the picture is out of date.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from memtrellis import Memory

ASSETS = Path(__file__).resolve().parent.parent / "docs" / "assets"
OUT = ASSETS / "graph-ana.png"
RECORD = ASSETS / "graph-ana.json"
COMMAND = "python3 tools/graph_picture.py"

CONVERSATION = [
    ("I live in Lyon with my partner Sam.", "fact", "2025-03-01T09:00:00Z"),
    ("Sam and I drink green tea every morning.", "preference", "2025-03-01T09:01:00Z"),
    ("Sam and I adopted a cat called Miso.", "fact", "2025-04-12T20:15:00Z"),
    ("I decided to learn Portuguese before the summer.", "decision", "2025-05-03T08:30:00Z"),
    ("I moved to Porto last week!", "fact", "2025-09-14T18:30:00Z"),
    ("Miso loves the balcony in Porto.", "fact", "2025-09-20T19:00:00Z"),
]
# What the picture shows of a node (the rest, such as ids and creation times, changes
# with every run).
SHOWN = ("kind", "label", "memory_type", "superseded", "valid_from", "valid_until", "confidence")


def structure(node_link: dict[str, Any]) -> dict[str, Any]:
    """The drawn graph without its random ids: nodes by label, edges between labels."""
    labels = {node["id"]: node["label"] for node in node_link["nodes"]}
    nodes = [{k: node[k] for k in SHOWN if k in node} for node in node_link["nodes"]]
    edges = [[labels[e["source"]], e["kind"], labels[e["target"]]] for e in node_link["edges"]]
    return {
        "nodes": sorted(nodes, key=lambda node: (node["kind"], node["label"])),
        "edges": sorted(edges),
    }


def draw(png: Path) -> dict[str, Any]:
    """Build Ana's store, write its picture to ``png``; returns the structure drawn."""
    with (
        tempfile.TemporaryDirectory() as store,
        Memory(store, entity_id="ana") as memory,
    ):
        for number, (text, kind, when) in enumerate(CONVERSATION, 1):
            message = {"role": "user", "content": text, "id": f"m{number}", "timestamp": when}
            memory.add([message], memory_type=kind)
        png.parent.mkdir(parents=True, exist_ok=True)
        memory.export_graph(png, format="png")
        node_link = memory.export_graph(Path(store) / "graph-ana.json", format="json")
        return structure(json.loads(node_link.read_text(encoding="utf-8")))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def renderer() -> str:
    """matplotlib's version and the FreeType it draws text with: the PNG's bytes depend on
    both (the layout is seeded, so nothing else varies)."""
    import matplotlib
    from matplotlib import ft2font

    return f"matplotlib {matplotlib.__version__}, freetype {ft2font.__freetype_version__}"


def main() -> Path:
    drawn = draw(OUT)
    record = {
        "regenerate": COMMAND,
        "png_sha256": sha256(OUT),
        "renderer": renderer(),
        "graph": drawn,
    }
    RECORD.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return OUT


if __name__ == "__main__":
    print(main())
