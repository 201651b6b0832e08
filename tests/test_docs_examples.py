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
    # How the rules decide; a chat turn superseded by a later one, kept as said.
    assert printed[8:11] == ["supersedes", "supersedes", "unrelated"]
    assert printed[11:14] == ["['I moved to Porto!']", "[('superseded', True)]", "None"]
    # Heat renews a state recalled often; health names a low utilisation.
    assert printed[14:16] == ["True", "0.25 ['utilisation']"]


def test_getting_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("getting-started.md", tmp_path, monkeypatch).splitlines()
    assert printed[:2] == ["I'm allergic to peanuts.", "m1"]
    assert list(tmp_path.iterdir()) == []  # its store was a temporary folder


def test_concepts_memory_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("concepts.md", tmp_path, monkeypatch).splitlines()
    # A skill learnt from a tool trajectory, its sources the trajectory's messages.
    assert printed[:2] == [
        "skill How to look up the weather for a city: 1. call get_weather with the city; "
        "2. give the temperature.",
        "[('chat', 'u1'), ('tool_call', 'a1'), ('tool_result', 't1'), ('chat', 'a2')]",
    ]
    assert printed[2:5] == ["not found", "m1", "<memory_context>"]
    # Staged context: the hint picks the dentist; one open item and two recent turns.
    assert printed[5:] == ["The dentist visit is booked for Friday", "1 2"]


def test_configuration_validity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("configuration.md", tmp_path, monkeypatch).splitlines()
    assert printed == [
        "paraphrase-MiniLM-L3-v2-onnx",
        "pinned to paraphrase-MiniLM-L3-v2-onnx",
        "I work night shifts as a nurse True",
        "prompt must contain the {reply_format} placeholder, where memtrellis writes the "
        "reply format",
        "2025-09-08 10:00:00+00:00",
    ]


def test_operations_change_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("operations.md", tmp_path, monkeypatch).splitlines()
    assert printed == [
        "Ana moved to Porto",
        "2 ['alice', 'bob'] []",
        "['Alice prefers green tea']",
    ]


# -- every snippet, alone and in sequence (issue 20 item 5) -------------------------------

ROOT = DOCS.parent
#: The docs pages whose python blocks run here, each page's blocks in order in one
#: namespace (a page is one walkthrough). docs/langchain.md and docs/llamaindex.md are run
#: by the integrations' suites, which have their frameworks installed.
PAGES = [
    "getting-started.md",
    "concepts.md",
    "configuration.md",
    "lifecycle.md",
    "operations.md",
    "graph.md",
    "sdk-clients.md",
]
#: What a README snippet needs beyond the core's dev extra.
NEEDS = {"langchain_memtrellis": "langchain_core", "llama_index.memory": "llama_index.core"}
#: What differs from run to run: ids, times, scores of a hashing-free embedder stay put.
VOLATILE = re.compile(r"[0-9a-f]{32}|\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00)?")


def readme_snippets() -> list[str]:
    return BLOCK.findall((ROOT / "README.md").read_text("utf-8"))


def _exec(code: str, name: str, namespace: dict[str, object]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), namespace)
    return VOLATILE.sub("<volatile>", out.getvalue())


def _skip_without_frameworks(code: str) -> None:
    for module, framework in NEEDS.items():
        if module in code:
            pytest.importorskip(framework)


@pytest.mark.parametrize("number", range(len(readme_snippets())))
def test_readme_snippet_runs_alone_and_leaves_nothing(
    number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = readme_snippets()[number]
    _skip_without_frameworks(code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMTRELLIS_HOME", raising=False)

    printed = _exec(code, f"README.md#block{number}", {"__name__": "__doc_example__"})

    assert printed  # each snippet shows what it did
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("page", PAGES)
def test_docs_page_runs_alone_and_leaves_nothing(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMTRELLIS_HOME", raising=False)
    run_blocks(page, tmp_path, monkeypatch)
    assert list(tmp_path.iterdir()) == []


def test_every_snippet_in_sequence_in_one_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader who pastes the README's snippets one after another into one session, in
    one folder, then works through the docs pages there, sees what each shows alone."""
    monkeypatch.delenv("MEMTRELLIS_HOME", raising=False)
    snippets = readme_snippets()
    for code in snippets:
        _skip_without_frameworks(code)
    alone = []
    for number, code in enumerate(snippets):
        folder = tmp_path / f"alone-{number}"
        folder.mkdir()
        monkeypatch.chdir(folder)
        alone.append(_exec(code, f"README.md#block{number}", {"__name__": "__doc_example__"}))
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.chdir(shared)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}

    in_sequence = [
        _exec(code, f"README.md#block{number}", namespace) for number, code in enumerate(snippets)
    ]
    for page in PAGES:
        for number, block in enumerate(BLOCK.findall((DOCS / page).read_text("utf-8"))):
            _exec(block, f"{page}#block{number}", namespace)

    assert in_sequence == alone
    assert list(shared.iterdir()) == []
