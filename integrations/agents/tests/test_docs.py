"""docs/agent-frameworks.md runs offline as written; every public name shows an example."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path

import pytest

import memtrellis_agents
import memtrellis_agents.openai_agents
import memtrellis_agents.pydantic_ai

ROOT = Path(__file__).resolve().parents[3]
CODE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_guide_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    out = io.StringIO()
    page = (ROOT / "docs" / "agent-frameworks.md").read_text("utf-8")
    with contextlib.redirect_stdout(out):
        for number, block in enumerate(CODE.findall(page)):
            name = f"agent-frameworks.md#block{number}"
            # dont_inherit: the page is run as written, without this file's __future__
            exec(compile(block, name, "exec", dont_inherit=True), namespace)

    assert out.getvalue().splitlines() == [
        "True",
        "['Bring apple slices.', 'I am allergic to peanuts', 'Noted: no peanuts.', "
        "'Which snack should I bring?']",
        "['I play the cello', 'A cello, lovely.']",
        "True",
        "['In Oslo.', 'My sister is Jo', 'Nice name.', 'Oslo is lovely.', 'She lives in Oslo', "
        "'Where does Jo live?']",
    ]
    assert list(tmp_path.iterdir()) == []


def test_public_names_have_a_docstring_with_an_example() -> None:
    lacking = runpy.run_path(str(ROOT / "tools" / "docstring_examples.py"))["lacking_examples"]
    modules = [memtrellis_agents, memtrellis_agents.openai_agents, memtrellis_agents.pydantic_ai]
    assert lacking(modules) == []
