"""The service stays a layer on top: the core never imports it or its web and MCP packages."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import memtrellis

SRC = Path(memtrellis.__file__).parent
SERVICE_PACKAGES = ("fastapi", "starlette", "uvicorn", "mcp", "prometheus_client")
# Where the service's packages may be imported: the service itself, and the CLI commands
# that start it (inside the command functions).
ALLOWED = ("service", "cli/_service.py")


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_only_the_service_imports_web_and_mcp_packages() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        imports = _imported(path)
        if not rel.startswith(ALLOWED):
            leaked = {m for m in imports if m.split(".")[0] in SERVICE_PACKAGES}
            assert not leaked, (rel, leaked)
            assert not any(m.startswith("memtrellis.service") for m in imports), rel


def test_importing_memtrellis_and_its_cli_loads_no_service_package() -> None:
    code = (
        "import sys, memtrellis, memtrellis.cli, memtrellis.service;"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SERVICE_PACKAGES!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
