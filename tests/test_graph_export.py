"""Graph export: GraphML, node-link JSON, the self-contained HTML page, PNG and the CLI."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from typer.testing import CliRunner

from memtrellis import EdgeKind, Memory, MemoryItem
from memtrellis.cli import app
from memtrellis.errors import InvalidInputError, MissingDependencyError
from memtrellis.graph_export import ExportFormat, export_graph, render_png
from memtrellis.testing import HashingEmbedder, store_of

HOSTILE = (
    "</script><script>alert(1)</script> <img src=x onerror=alert(2)> "
    "\"double\" 'single' ]]> <!-- & &amp; </SCRIPT > café 😀 \u2028 end"
)
BOB_SECRET = "Bob's secret: the vault code is 4417"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DATA_BLOCK = re.compile(r'<script type="application/json" id="graph-data">(.*?)</script>', re.S)


@dataclass
class Built:
    memory: Memory
    ids: dict[str, str]


def build(memory: Memory) -> Built:
    """Alice's memories with every edge kind, and one memory of Bob's."""
    store = store_of(memory)
    [paris] = memory.add("Alice lives in Paris", entities=["Alice", "Paris"], tags=["home", "city"])
    [lyon] = memory.add("Alice moved to Lyon", entities=["Alice", "Lyon"])
    first, second = memory.add(
        [
            {"role": "user", "content": "I run every morning", "id": "d1:1", "name": "Alice"},
            {"role": "assistant", "content": "Running daily is great", "id": "d1:2"},
        ],
        entities=["running"],
    )
    [hostile] = memory.add(HOSTILE, entities=["<b>Tag</b>"])
    [bob] = memory.add(BOB_SECRET, entity_id="bob", entities=["Alice", "vault"])
    store.add_edge("alice", first.id, lyon.id, EdgeKind.SUPPORTS)
    store.add_edge("alice", hostile.id, first.id, EdgeKind.CONTRADICTS)
    store.add_edge("alice", second.id, first.id, EdgeKind.EXTENDS)
    store.supersede("alice", {paris.id: lyon.id})
    ids = {
        "paris": paris.id,
        "lyon": lyon.id,
        "first": first.id,
        "second": second.id,
        "hostile": hostile.id,
        "bob": bob.id,
    }
    return Built(memory, ids)


@pytest.fixture
def built(memory: Memory) -> Built:
    return build(memory)


def hostile_text(built: Built) -> str:
    """The hostile text as stored (and still hostile)."""
    text = built.memory.get(built.ids["hostile"]).text
    assert "</script>" in text and "<img src=x onerror=alert(2)>" in text and "]]>" in text
    return text


def expected(memory: Memory, tenant: str) -> tuple[set[str], set[tuple[str, str, str]]]:
    """Every node and edge of one tenant, read straight from the store's graph."""
    g = store_of(memory).graph_of(tenant).g
    nodes = set(store_of(memory).graph_of(tenant).memory_ids(tenant))
    nodes |= {
        n for n, d in g.nodes(data=True) if d["kind"] == "subject" and d["entity_id"] == tenant
    }
    edges = {(s, t, k) for s, t, k in g.edges(keys=True) if s in nodes and t in nodes}
    return nodes, edges


def export(
    built: Built, tmp_path: Path, fmt: ExportFormat, tenant: str | None = "alice", **kw: int
) -> Path:
    store = store_of(built.memory)
    graph = store.graph_of(tenant) if tenant is not None else store.combined_graph()
    return export_graph(graph, tmp_path / f"graph.{fmt}", format=fmt, entity_id=tenant, **kw)


def page_json(page: str) -> dict[str, Any]:
    [block] = DATA_BLOCK.findall(page)
    data: dict[str, Any] = json.loads(block)
    return data


# -- GraphML and JSON ----------------------------------------------------------------------
def test_graphml_round_trips_nodes_edge_kinds_and_attributes(built: Built, tmp_path: Path) -> None:
    path = export(built, tmp_path, "graphml")
    g = nx.read_graphml(path, force_multigraph=True)
    nodes, edges = expected(built.memory, "alice")
    assert set(g.nodes) == nodes
    assert {(s, t, k) for s, t, k in g.edges(keys=True)} == edges
    assert {kind for _, _, kind in g.edges(data="kind")} == {kind.value for kind in EdgeKind}

    paris = built.memory.get(built.ids["paris"])
    attrs = g.nodes[paris.id]
    assert attrs["kind"] == "memory"
    assert attrs["text"] == "Alice lives in Paris"
    assert attrs["memory_type"] == paris.memory_type.value
    assert attrs["confidence"] == pytest.approx(paris.confidence)
    assert attrs["created_at"] == paris.created_at.isoformat()
    assert attrs["superseded_by"] == built.ids["lyon"]
    assert attrs["superseded"] is True
    assert attrs["tags"] == ", ".join(paris.tags)
    assert attrs["tags"].startswith("home, city")
    first = g.nodes[built.ids["first"]]
    assert first["source_count"] == 1
    assert first["source_message_ids"] == "d1:1"
    assert first["source_speakers"] == "Alice"
    assert g.nodes["subject:alice:paris"]["name"] == "Paris"
    assert g.nodes[built.ids["hostile"]]["text"] == hostile_text(built)


def test_graphml_replaces_characters_xml_cannot_hold(memory: Memory, tmp_path: Path) -> None:
    [item] = memory.add("bell \x07 and form feed \x0c here")
    path = export_graph(store_of(memory).combined_graph(), tmp_path / "g.graphml", format="graphml")
    text = nx.read_graphml(path).nodes[item.id]["text"]
    assert text == "bell \ufffd and form feed \ufffd here"


def test_json_is_node_link_data(built: Built, tmp_path: Path) -> None:
    data = json.loads(export(built, tmp_path, "json").read_text(encoding="utf-8"))
    g = nx.node_link_graph(data, edges="edges")
    nodes, edges = expected(built.memory, "alice")
    assert g.is_multigraph() and g.is_directed()
    assert set(g.nodes) == nodes
    assert set(g.edges(keys=True)) == edges
    assert g.nodes[built.ids["hostile"]]["text"] == hostile_text(built)
    assert g.nodes[built.ids["paris"]]["superseded_by"] == built.ids["lyon"]
    assert data["graph"]["entity_id"] == "alice"


# -- HTML ----------------------------------------------------------------------------------
def test_html_is_self_contained_and_carries_the_graph(built: Built, tmp_path: Path) -> None:
    page = export(built, tmp_path, "html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    outside_data = DATA_BLOCK.sub("", page)
    assert "<link" not in outside_data.lower()
    assert not re.search(r"\b(src|href|srcset|action)\s*=", outside_data, re.I)
    assert not re.search(r"https?:|//[a-z0-9]", outside_data, re.I)
    assert not re.search(r"@import|url\(|fetch\(|XMLHttpRequest|WebSocket|import\(", page)
    assert "default-src 'none'" in page  # the browser itself refuses any fetch

    data = page_json(page)
    nodes, edges = expected(built.memory, "alice")
    assert {node["id"] for node in data["nodes"]} == nodes
    assert {(e["source"], e["target"], e["kind"]) for e in data["edges"]} == edges
    for memory_id in store_of(built.memory).graph_of("alice").memory_ids("alice"):
        assert memory_id in page
    first = next(node for node in data["nodes"] if node["id"] == built.ids["first"])
    assert first["sources"][0]["message_id"] == "d1:1"
    assert first["sources"][0]["speaker"] == "Alice"
    assert [event["action"] for event in first["history"]] == ["created"]
    paris = next(node for node in data["nodes"] if node["id"] == built.ids["paris"])
    assert paris["superseded"] is True
    assert [event["action"] for event in paris["history"]][-1] == "superseded"
    assert set(data["colours"]["edge"]) == {kind.value for kind in EdgeKind}


def test_hostile_text_cannot_leave_the_data_block(built: Built, tmp_path: Path) -> None:
    page = export(built, tmp_path, "html").read_text(encoding="utf-8")
    # the page's own two script blocks close, nothing else does
    assert len(re.findall(r"</script", page, re.I)) == 2
    assert len(re.findall(r"<script", page, re.I)) == 2
    assert "<img" not in page and "<b>" not in page and "<!--" not in page
    [block] = DATA_BLOCK.findall(page)
    assert not set("<>&") & set(block)
    texts = {node.get("text") for node in page_json(page)["nodes"]}
    names = {node.get("name") for node in page_json(page)["nodes"]}
    assert hostile_text(built) in texts
    assert "<b>Tag</b>" in names


def test_html_escapes_a_hostile_entity_id(memory: Memory, tmp_path: Path) -> None:
    tenant = "<i>eve</i>&co"
    memory.add("Eve likes chess", entity_id=tenant)
    graph = store_of(memory).graph_of(tenant)
    page = export_graph(graph, tmp_path / "e.html", format="html", entity_id=tenant)
    text = page.read_text(encoding="utf-8")
    assert "<i>" not in text
    assert "&lt;i&gt;eve&lt;/i&gt;&amp;co" in text
    assert page_json(text)["entity_id"] == tenant


def test_html_caps_memories_and_says_how_many_were_left_out(built: Built, tmp_path: Path) -> None:
    page = export(built, tmp_path, "html", max_memories=2).read_text(encoding="utf-8")
    data = page_json(page)
    graph = store_of(built.memory).graph_of("alice")
    alice = graph.memory_ids("alice")
    shown = {node["id"] for node in data["nodes"] if node["kind"] == "memory"}
    assert len(shown) == 2
    hidden = set(alice) - shown
    oldest_shown = min(graph.g.nodes[i]["item"].created_at for i in shown)
    assert all(graph.g.nodes[i]["item"].created_at <= oldest_shown for i in hidden)
    assert data["omitted_memories"] == len(alice) - 2
    assert f"Showing the newest 2 of {len(alice)} memories" in page
    kept = {node["id"] for node in data["nodes"]}
    assert all(e["source"] in kept and e["target"] in kept for e in data["edges"])


def test_html_of_an_empty_scope(memory: Memory, tmp_path: Path) -> None:
    page = export_graph(
        store_of(memory).graph_of("nobody"), tmp_path / "x.html", format="html", entity_id="nobody"
    )
    text = page.read_text(encoding="utf-8")
    assert "No memories in this scope." in text
    assert page_json(text)["nodes"] == []


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_page_script_is_valid_javascript(built: Built, tmp_path: Path) -> None:
    page = export(built, tmp_path, "html").read_text(encoding="utf-8")
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(script) == 1
    (tmp_path / "page.js").write_text(script[0], encoding="utf-8")
    node = shutil.which("node")
    assert node is not None
    result = subprocess.run([node, "--check", str(tmp_path / "page.js")], capture_output=True)
    assert result.returncode == 0, result.stderr


# -- tenant isolation ----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["graphml", "json", "html"])
def test_another_tenants_memories_never_appear(
    built: Built, tmp_path: Path, fmt: ExportFormat
) -> None:
    content = export(built, tmp_path, fmt).read_text(encoding="utf-8")
    assert "vault" not in content
    assert built.ids["bob"] not in content
    assert "subject:bob:" not in content
    # Not the bare digits "4417": random ids and timestamps in the file may contain them.
    assert "vault code is 4417" not in content


def test_all_tenants_export_has_both(built: Built, tmp_path: Path) -> None:
    data = json.loads(export(built, tmp_path, "json", tenant=None).read_text(encoding="utf-8"))
    ids = {node["id"] for node in data["nodes"]}
    assert {built.ids["bob"], built.ids["paris"], "subject:bob:alice", "subject:alice:alice"} <= ids
    assert BOB_SECRET in {node.get("text") for node in data["nodes"]}


def test_unknown_format_is_a_typed_error(memory: Memory, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="graphml"):
        export_graph(store_of(memory).graph_of("alice"), tmp_path / "x", format="svg")  # type: ignore[arg-type]


# -- PNG -----------------------------------------------------------------------------------
def test_png_is_a_png(built: Built, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    memory = built.memory
    memory.add("Costs $x^2$ dollars", entities=["$weird_{name}$"])
    path = render_png(store_of(memory).graph_of("alice"), tmp_path / "g.png", entity_id="alice")
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert path.stat().st_size > 5_000


def test_png_without_matplotlib_names_the_extra(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"memtrellis\[viz\]"):
        export_graph(store_of(memory).graph_of("alice"), tmp_path / "g.png", format="png")
    assert not (tmp_path / "g.png").exists()


# -- CLI -----------------------------------------------------------------------------------
def make_store(path: Path) -> dict[str, MemoryItem]:
    with Memory(path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        [old] = memory.add("Alice lives in Paris", entities=["Alice", "Paris"])
        [new] = memory.add("Alice moved to Lyon", entities=["Alice", "Lyon"])
        store_of(memory).supersede("alice", {old.id: new.id})
        [bob] = memory.add(BOB_SECRET, entity_id="bob", entities=["vault"])
    return {"old": old, "new": new, "bob": bob}


def test_cli_graph_writes_every_format(tmp_path: Path) -> None:
    store = tmp_path / "store"
    items = make_store(store)
    out = {fmt: tmp_path / f"g.{fmt}" for fmt in ("html", "graphml", "json")}
    result = CliRunner().invoke(
        app,
        ["--embedder", "hashing", "graph", "--path", str(store), "--entity-id", "alice"]
        + [arg for fmt, path in out.items() for arg in (f"--{fmt}", str(path))],
    )
    assert result.exit_code == 0, result.output
    assert "Wrote the html graph of entity 'alice' (2 memories)" in result.output
    g = nx.read_graphml(out["graphml"], force_multigraph=True)
    assert {items["old"].id, items["new"].id, "subject:alice:paris"} <= set(g.nodes)
    assert (items["new"].id, items["old"].id, "supersedes") in set(g.edges(keys=True))
    for path in out.values():
        assert "vault" not in path.read_text(encoding="utf-8")
    data = page_json(out["html"].read_text(encoding="utf-8"))
    assert {node["id"] for node in data["nodes"]} == set(g.nodes)


def test_cli_graph_of_the_global_entity_and_of_all(tmp_path: Path) -> None:
    store = tmp_path / "store"
    items = make_store(store)
    runner = CliRunner()
    base = ["--path", str(store), "--embedder", "hashing"]
    result = runner.invoke(app, [*base, "--entity", "bob", "graph", "--json", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    bob = json.loads((tmp_path / "b").read_text(encoding="utf-8"))
    assert {node["id"] for node in bob["nodes"]} == {items["bob"].id, "subject:bob:vault"}

    everything = tmp_path / "all.json"
    result = runner.invoke(
        app, [*base, "--json", "graph", "--all-entities", "--json", str(everything)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "entity_id": None,
        "memories": 3,
        "written": [{"format": "json", "file": str(everything)}],
    }
    assert len(json.loads(everything.read_text(encoding="utf-8"))["nodes"]) == 7


def test_cli_graph_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    store = tmp_path / "store"
    make_store(store)
    png = tmp_path / "g.png"
    args = ["--path", str(store), "--embedder", "hashing", "graph", "--png", str(png)]
    result = CliRunner().invoke(app, [*args, "--entity-id", "alice"])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_cli_graph_needs_an_output(tmp_path: Path) -> None:
    store = tmp_path / "store"
    make_store(store)
    runner = CliRunner()
    result = runner.invoke(app, ["--path", str(store), "--embedder", "hashing", "graph"])
    assert result.exit_code == 2
    assert "--html" in result.stderr
    result = runner.invoke(
        app,
        [
            "--path",
            str(store),
            "--embedder",
            "hashing",
            "graph",
            "--json",
            str(tmp_path / "no" / "x"),
        ],
    )
    assert result.exit_code == 2
    assert "cannot write" in result.stderr
