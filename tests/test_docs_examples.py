"""The Python examples in docs/ run as written (offline, default embedder), so they cannot rot."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def run_blocks(page: str, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run every python block of a page in order, in one namespace; returns what it printed."""
    monkeypatch.chdir(workdir)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for number, block in enumerate(BLOCK.findall((DOCS / page).read_text("utf-8"))):
            exec(compile(block, f"{page}#block{number}", "exec"), namespace)
    return out.getvalue()


def test_lifecycle_walkthrough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("lifecycle.md", tmp_path, monkeypatch).splitlines()
    assert printed[0] == "True 2025-09-14 18:30:00+00:00"
    assert printed[1] == "['I moved to Porto last week!']"
    assert printed[2] == "[('superseded', True)]"
    assert printed[3] == "True"
    assert printed[4] == "['I live in Lyon.']"
    assert printed[5] == "['I live in Lyon.', 'I moved to Porto last week!']"
    assert printed[6].startswith("created") and printed[7].startswith("superseded {'by': ")


def test_getting_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("getting-started.md", tmp_path, monkeypatch).splitlines()
    assert printed[:2] == ["I'm allergic to peanuts.", "m1"]
    assert (tmp_path / ".memtrellis" / "manifest.json").is_file()


def test_concepts_memory_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("concepts.md", tmp_path, monkeypatch).splitlines()
    assert printed == ["not found", "m1", "<memory_context>"]


def test_configuration_validity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("configuration.md", tmp_path, monkeypatch).splitlines()
    assert printed == [
        "prompt must contain the {reply_format} placeholder, where memtrellis writes the "
        "reply format",
        "2025-09-08 10:00:00+00:00",
    ]


def test_operations_change_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("operations.md", tmp_path, monkeypatch).splitlines()
    assert printed == ["2 ['alice', 'bob'] []", "['Alice prefers green tea']"]
