"""The README's LangChain example and the cookbook notebook run offline, as written."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import runpy
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import langchain_memtrellis

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOK = ROOT / "cookbook" / "langchain_quickstart.ipynb"


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## LangChain\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[:1]
    return code


def test_readme_langchain_example_runs(tmp_path: Path) -> None:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    env.pop("MEMTRELLIS_HOME", None)
    done = subprocess.run(
        [sys.executable, "-c", _readme_example()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "peanuts" in done.stdout
    assert list(tmp_path.iterdir()) == []  # its store was a temporary folder


def test_cookbook_notebook_is_stored_without_outputs() -> None:
    notebook = json.loads(NOTEBOOK.read_text())

    first = notebook["cells"][0]
    assert first["cell_type"] == "markdown" and "This notebook shows" in "".join(first["source"])
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


def _run_notebook(path: Path, workdir: Path) -> str:
    """Execute a notebook in ``workdir``; returns what its cells printed."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=240,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    ).execute()
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )


def test_cookbook_notebook_runs(tmp_path: Path) -> None:
    printed = _run_notebook(NOTEBOOK, tmp_path)
    assert "<memory_context>" in printed
    assert "window seat" in printed


def test_cookbook_rag_graph_runs(tmp_path: Path) -> None:
    lines = _run_notebook(ROOT / "cookbook" / "langgraph_rag.ipynb", tmp_path).splitlines()

    assert lines[0] == "runner: LangGraph"  # langgraph is in this package's dev extra
    # the retriever found the two memories that matter, with their sources
    assert {line.split(" ", 1)[1] for line in lines[1:3]} == {
        "My favourite cuisine is Lebanese. m2",
        "I'm allergic to peanuts. m1",
    }
    # and the generate node put them in the system message
    assert "- I'm allergic to peanuts. (message m1)" in lines
    assert lines[-1] == "answer: Try a peanut-free mezze: hummus, tabbouleh and falafel."


def test_public_names_have_a_docstring_with_an_example() -> None:
    """Every class and function of the package's ``__all__`` shows itself at work in a
    Google ``Examples:`` doctest: the API reference renders it, ``--doctest-modules`` runs
    it here (the rule of tools/docstring_examples.py, as in the core)."""
    lacking = runpy.run_path(str(ROOT / "tools" / "docstring_examples.py"))["lacking_examples"]
    assert lacking([langchain_memtrellis]) == []


def _section_blocks(page: str, *headings: str) -> list[str]:
    """The python blocks of the named ``## `` sections of a docs page, in order."""
    text = (ROOT / "docs" / page).read_text("utf-8")
    blocks = []
    for heading in headings:
        section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
        blocks += re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return blocks


def test_docs_naming_the_user_and_langgraph_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("__doc_example__")  # dataclasses look their module up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for number, block in enumerate(
            _section_blocks("langchain.md", "Naming the user", "Inside LangGraph")
        ):
            exec(compile(block, f"langchain.md#block{number}", "exec"), namespace)

    lines = out.getvalue().splitlines()
    assert lines[0] == "['I drink oat milk', 'Noted, oat milk.']"
    assert lines[1] == "['I drink soy milk', 'Noted, soy milk.']"
    assert lines[2] == "Oat| |milk,| |as| |usual.|"  # each chunk once
