"""The README's LangChain example and the cookbook notebook run offline, as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

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
    assert (tmp_path / ".memtrellis").is_dir()


def test_cookbook_notebook_is_stored_without_outputs() -> None:
    notebook = json.loads(NOTEBOOK.read_text())

    first = notebook["cells"][0]
    assert first["cell_type"] == "markdown" and "This notebook shows" in "".join(first["source"])
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


def test_cookbook_notebook_runs(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=240,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )

    client.execute()

    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "<memory_context>" in printed
    assert "window seat" in printed
