"""The README's LlamaIndex example, docs/llamaindex.md and the cookbook notebook run offline,
as written (with the default offline embedder)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import llama_index.memory.memtrellis

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "cookbook" / "llamaindex_quickstart.ipynb"
CODE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_readme_llamaindex_example_runs(tmp_path: Path) -> None:
    section = (ROOT / "README.md").read_text("utf-8").split("\n## LlamaIndex\n", 1)[1]
    [code] = CODE.findall(section.split("\n## ", 1)[0])
    env = {k: v for k, v in os.environ.items() if k != "MEMTRELLIS_HOME"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**env, "ANONYMIZED_TELEMETRY": "False"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "<memory_context>" in done.stdout and "allergic to peanuts" in done.stdout
    # The fact, then the question the chat engine's block captured.
    *_, fact, question = done.stdout.splitlines()
    assert "Alice is allergic to peanuts" in fact and "Which snack" in question
    assert list(tmp_path.iterdir()) == []  # its store was a temporary folder


def test_guide_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    out = io.StringIO()
    page = (ROOT / "docs" / "llamaindex.md").read_text("utf-8")
    with contextlib.redirect_stdout(out):
        for number, block in enumerate(CODE.findall(page)):
            exec(compile(block, f"llamaindex.md#block{number}", "exec"), namespace)
    assert out.getvalue().splitlines() == [
        "True",
        '["Which snack should I bring to Alice\'s party?"]',
        "True",
        "['user', 'assistant']",
        "Saved memory ",
        "True",
        "My sister Clara moved to Lisbon. m1",
        "True",
        "['I moved to Porto last week']",
        "True",
        "MemtrellisLLM",
        "LlamaIndexExtractionLLM MockEmbedding:unknown",
    ]


def test_cookbook_notebook_is_stored_without_outputs() -> None:
    notebook = json.loads(NOTEBOOK.read_text("utf-8"))
    first = notebook["cells"][0]
    assert first["cell_type"] == "markdown" and "This notebook shows" in "".join(first["source"])
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


def test_cookbook_notebook_runs(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    printed = "".join(
        output.get("text", "") or output.get("data", {}).get("text/plain", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "<memory_context>" in printed and "window seat" in printed
    assert "Booked: window seat." in printed
    assert "('user', 'My frequent flyer number is TP-4711.')" in printed
    assert "('user', 'Pick a seat for me.')" in printed


def test_public_names_have_a_docstring_with_an_example() -> None:
    """Every class and function of the package's ``__all__`` shows itself at work in a
    Google ``Examples:`` doctest: the API reference renders it, ``--doctest-modules`` runs
    it here (the rule of tools/docstring_examples.py, as in the core)."""
    lacking = runpy.run_path(str(ROOT / "tools" / "docstring_examples.py"))["lacking_examples"]
    assert lacking([llama_index.memory.memtrellis]) == []
