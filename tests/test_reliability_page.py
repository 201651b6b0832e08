"""docs/reliability.md names, for each guarantee of issue 10, the tests that prove it.

Those names must keep pointing at real tests: a renamed or deleted test fails here rather
than leaving the page citing a proof that no longer runs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reliability.md"
CITED = re.compile(r"`((?:tests|integrations/[\w-]+/tests)/[\w/]+\.py)::(\w+)`")
GUARANTEES = [
    "Crash safety",
    "Concurrency",
    "Bad and hostile input",
    "The memory context is data",
    "Tenant isolation",
    "Secrets",
    "Corruption and repair",
    "Migration from 0.1",
    "Extraction failures",
]


def sections() -> dict[str, str]:
    parts = re.split(r"^## (.+)$", PAGE.read_text("utf-8"), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def defined_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    defined = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    # a Hypothesis state machine becomes a test by assignment: test_x = Machine.TestCase
    assigned = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return defined | assigned


@pytest.mark.parametrize("guarantee", GUARANTEES)
def test_each_guarantee_cites_tests_that_exist(guarantee: str) -> None:
    text = sections()[guarantee]
    cited = CITED.findall(text)
    assert cited, f"reliability.md: '{guarantee}' names no test"
    missing = [
        f"{path}::{name}"
        for path, name in cited
        if not (ROOT / path).is_file() or name not in defined_names(ROOT / path)
    ]
    assert not missing, f"reliability.md cites tests that do not exist: {missing}"


def test_no_placeholder_is_left() -> None:
    assert "<!--" not in PAGE.read_text("utf-8")


def test_a_backtick_left_open_would_hide_a_citation() -> None:
    # every `tests/...::name` opening backtick on the page closes on the same name
    opened = re.findall(
        r"`(?:tests|integrations/[\w-]+/tests)/[^`\n]*$", PAGE.read_text("utf-8"), re.M
    )
    assert not opened, opened
