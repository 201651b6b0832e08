"""mkdocs hooks: put the benchmark figures (kept in benchmarks/results/) on the site.

docs/benchmarks.md links them as ``../benchmarks/results/NAME.png`` so that the page also
reads on GitHub; the site copies them to ``assets/benchmarks/`` and the links follow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
SITE_DIR = "assets/benchmarks"


def on_files(files: Files, config: Any) -> Files:
    for figure in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"{SITE_DIR}/{figure.name}", abs_src_path=str(figure)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return markdown.replace("](../benchmarks/results/", f"]({SITE_DIR}/")
