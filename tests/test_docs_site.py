"""The documentation site builds with ``mkdocs build --strict``: a broken link, a missing
API reference target or a docstring griffe cannot parse fails the test run, not only the
``docs`` nox session. Offline: no plugin of the site reaches the network."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-4000:]
    # the API reference was generated from the docstrings, examples included
    memory_page = (site / "reference" / "memory" / "index.html").read_text("utf-8")
    assert "memtrellis.Memory" in memory_page and "export_graph" in memory_page
    assert "HashingEmbedder" in memory_page  # a docstring example, rendered
    # both integration packages have their reference, from their own source trees
    for page, names in {
        "langchain": ("langchain_memtrellis.ChatMemoryWrapper", "langchain_memtrellis.as_llm"),
        "llama-index": (
            "llama_index.memory.memtrellis.MemtrellisMemoryBlock",
            "llama_index.memory.memtrellis.MemtrellisLLM",
        ),
    }.items():
        html = (site / "reference" / page / "index.html").read_text("utf-8")
        assert all(f'id="{name}"' in html for name in names), page
    # docstring cross references became links, never raw Sphinx roles
    assert 'class="autorefs autorefs-internal"' in memory_page
    for html in sorted((site / "reference").rglob("index.html")):
        text = html.read_text("utf-8")
        assert not any(f":{role}:`" in text for role in ("class", "meth", "func")), html
    # every page of the nav is there, and nothing asks for remote fonts
    for page in ("getting-started", "langchain", "llamaindex", "graph", "benchmarks"):
        assert (site / page / "index.html").is_file(), page
    assert (site / "assets" / "benchmarks" / "latency.png").is_file()
    assert "fonts.googleapis.com" not in (site / "index.html").read_text("utf-8")
