"""The memory graph pictured in docs/concepts.md is the one the code draws today.

tools/graph_picture.py draws docs/assets/graph-ana.png and records beside it, in
graph-ana.json, what the picture shows (nodes and edges without their random ids), the
PNG's SHA-256 and the renderer's versions (matplotlib, FreeType). This test rebuilds the
same store and compares: a change of extraction, lifecycle or export that changes the
graph fails here with the command that redraws the picture.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("matplotlib")

TOOL = Path(__file__).resolve().parent.parent / "tools" / "graph_picture.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("graph_picture", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pictured_graph_is_the_one_the_code_builds(tmp_path: Path) -> None:
    tool = _tool()
    record = json.loads(tool.RECORD.read_text(encoding="utf-8"))
    stale = f"docs/assets/graph-ana.png is stale: {tool.COMMAND}"

    drawn = tool.draw(tmp_path / "graph-ana.png")

    # the superseded move is in the picture, as docs/concepts.md describes it
    edges = {(source, kind, target) for source, kind, target in drawn["edges"]}
    porto, lyon = "I moved to Porto last week!", "I live in Lyon with my partner Sam."
    assert (porto, "supersedes", lyon) in edges
    assert drawn == record["graph"], stale
    # the PNG beside the record is the one that run wrote, not an older drawing
    assert tool.sha256(tool.OUT) == record["png_sha256"], stale
    if tool.renderer() == record["renderer"]:
        # the drawing is byte-for-byte deterministic with one renderer (the layout is
        # seeded); another matplotlib or FreeType may differ in pixels only, not compared
        assert tool.sha256(tmp_path / "graph-ana.png") == record["png_sha256"], stale


def test_structure_leaves_out_what_changes_between_runs() -> None:
    node_link = {
        "nodes": [
            {"id": "a1", "kind": "memory", "label": "new", "created_at": "today"},
            {"id": "b2", "kind": "memory", "label": "old", "superseded": True},
        ],
        "edges": [{"source": "a1", "target": "b2", "kind": "supersedes", "key": "k"}],
    }

    assert _tool().structure(node_link) == {
        "nodes": [
            {"kind": "memory", "label": "new"},
            {"kind": "memory", "label": "old", "superseded": True},
        ],
        "edges": [["new", "supersedes", "old"]],
    }
