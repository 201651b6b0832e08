"""The core cookbook notebooks run offline end to end, each in its own temporary working
directory, and print what they say they show; every notebook in cookbook/ is stored
without outputs and opens with a markdown cell saying what it shows."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

COOKBOOK = Path(__file__).resolve().parent.parent / "cookbook"
NOTEBOOKS = sorted(COOKBOOK.glob("*.ipynb"))


def run_notebook(name: str, workdir: Path) -> tuple[str, list[str]]:
    """Execute a notebook in ``workdir``; returns what it printed and its image outputs' types."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(COOKBOOK / name, as_version=4)
    temp = Path(tempfile.gettempdir())
    before = set(temp.iterdir())
    nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    ).execute()
    assert set(temp.iterdir()) == before, f"{name} left files in the temp dir"  # its stores too
    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    printed = "".join(out.get("text", "") for out in outputs)
    images = [kind for out in outputs for kind in out.get("data", {}) if kind.startswith("image/")]
    return printed, images


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(notebook: Path) -> None:
    data = json.loads(notebook.read_text("utf-8"))
    first = data["cells"][0]
    assert first["cell_type"] == "markdown"
    assert "This notebook shows" in "".join(first["source"])
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, notebook.name


def test_quickstart(tmp_path: Path) -> None:
    printed, _ = run_notebook("quickstart.ipynb", tmp_path)
    lines = printed.splitlines()

    assert "episode | m1 | My sister Clara moved to Lisbon." in lines
    assert "top: My sister Clara moved to Lisbon." in lines
    assert "<memory_context>" in lines and "</memory_context>" in lines
    assert any("allergic to peanuts" in line and line.startswith("- ") for line in lines)
    assert "fact | Alice's sister Clara lives in Lisbon | cites ['c1'] | confidence 0.9" in lines
    assert "fact | Alice is allergic to peanuts | cites ['c2'] | confidence 0.95" in lines
    assert "memories: 3 entities: 2" in lines


def test_contradictions_and_time_travel(tmp_path: Path) -> None:
    printed, images = run_notebook("contradictions_and_time_travel.ipynb", tmp_path)
    lines = printed.splitlines()

    assert "superseded by Porto: True" in lines
    assert "valid until: 2025-09-14 18:30:00+00:00" in lines
    assert "now: I moved to Porto last week!" in lines
    assert "skipped: [('superseded', True)]" in lines
    assert "June 2025: I live in Lyon." in lines
    assert "versions: ['I live in Lyon.', 'I moved to Porto last week!']" in lines
    assert any(line.startswith("superseded {'by': ") for line in lines)
    assert "ana.png True ana.html" in lines and "contradicts: 1 supersedes: 1" in lines
    assert images == ["image/png"]
    assert (tmp_path / "ana.png").stat().st_size > 1000
    assert "<script" in (tmp_path / "ana.html").read_text("utf-8")


def test_ingesting_documents(tmp_path: Path) -> None:
    printed, _ = run_notebook("ingesting_documents.ipynb", tmp_path)  # leaves no temp files
    lines = printed.splitlines()

    assert lines[0].startswith("doc handbook.md#0 |")
    assert "from handbook.md#0 | True" in lines
    assert "The deploy freeze starts every Friday at 15:00 | from doc handbook.md#0" in lines
    assert "answer: Travel over 500 euros needs a director's approval" in lines
    # the handbook and both stores were in a temporary folder the notebook removed
    assert list(tmp_path.iterdir()) == []


def test_openai_sdk_client(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("httpx2")
    printed, _ = run_notebook("openai_sdk_client.ipynb", tmp_path)
    lines = printed.splitlines()

    assert lines[:3] == [
        "reply: Noted, no peanuts!",
        "roles sent: ['user']",
        "stored: [\"I'm allergic to peanuts.\", 'Noted, no peanuts!']",
    ]
    # the second request carried the captured turn in a system message
    assert lines[3] == "roles sent: ['system', 'user']"
    context = lines[lines.index("<memory_context>") : lines.index("</memory_context>")]
    # a captured message, shown as said (time, speaker), not as a fact
    assert any(line.endswith(", user] I'm allergic to peanuts.") for line in context)
    assert "reply: Try hummus with carrot sticks." in lines
    assert lines[-1] == "roles sent after unregister: ['user']"
