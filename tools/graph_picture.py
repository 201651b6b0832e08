"""Draw the memory graph pictured in the docs: python3 tools/graph_picture.py

Builds a small store in a temporary directory (offline default embedder), a life in
which one fact changes, and writes docs/assets/graph-ana.png with ``Memory.export_graph``:
the same picture as ``memtrellis graph --entity-id ana --png``. Needs the ``viz`` extra.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from memtrellis import Memory

OUT = Path(__file__).resolve().parent.parent / "docs" / "assets" / "graph-ana.png"

CONVERSATION = [
    ("I live in Lyon with my partner Sam.", "fact", "2025-03-01T09:00:00Z"),
    ("Sam and I drink green tea every morning.", "preference", "2025-03-01T09:01:00Z"),
    ("Sam and I adopted a cat called Miso.", "fact", "2025-04-12T20:15:00Z"),
    ("I decided to learn Portuguese before the summer.", "decision", "2025-05-03T08:30:00Z"),
    ("I moved to Porto last week!", "fact", "2025-09-14T18:30:00Z"),
    ("Miso loves the balcony in Porto.", "fact", "2025-09-20T19:00:00Z"),
]


def main() -> Path:
    with (
        tempfile.TemporaryDirectory() as store,
        Memory(store, entity_id="ana") as memory,
    ):
        for number, (text, kind, when) in enumerate(CONVERSATION, 1):
            message = {"role": "user", "content": text, "id": f"m{number}", "timestamp": when}
            memory.add([message], memory_type=kind)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        return memory.export_graph(OUT, format="png")


if __name__ == "__main__":
    print(main())
