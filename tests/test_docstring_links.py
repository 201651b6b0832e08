"""Docstrings link the way the API reference renders them (mkdocstrings autorefs:
``[`Memory`][memtrellis.Memory]``, or plain backticks where no page exists), never with
Sphinx roles such as ``:class:`Memory```, which the site would print as raw text."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Every tree the site's mkdocstrings `paths` documents (mkdocs.yml).
DOCUMENTED = (
    ROOT / "src" / "memtrellis",
    ROOT / "integrations" / "langchain" / "src" / "langchain_memtrellis",
    ROOT / "integrations" / "llama-index" / "llama_index" / "memory" / "memtrellis",
)
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|data|attr|mod|exc|obj|const):`")

_DEFINITIONS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of the module's, every class's and every function's docstring."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, _DEFINITIONS) and (text := ast.get_docstring(node, clean=False)):
            yield (node.body[0].lineno, text)


def test_the_role_pattern_finds_sphinx_roles(tmp_path: Path) -> None:
    module = tmp_path / "sample.py"
    module.write_text('"""See :class:`~memtrellis.Memory`."""\n\ndef f():\n    """Fine."""\n')
    found = [text for _, text in docstrings(module) if SPHINX_ROLE.search(text)]
    assert found == ["See :class:`~memtrellis.Memory`."]


def test_no_docstring_uses_a_sphinx_role() -> None:
    sources = [path for tree in DOCUMENTED for path in sorted(tree.rglob("*.py"))]
    assert len(sources) > 50  # the trees are where this test thinks they are
    offending = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources
        for line, text in docstrings(path)
        if SPHINX_ROLE.search(text)
    ]
    assert offending == [], "use [`Name`][dotted.path] (or `Name` without a page)"
