"""Running the real ``memtrellis`` console script in a child process, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = ["SCRIPT", "run_script", "script_env"]

SCRIPT = Path(sys.executable).with_name("memtrellis")


def script_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("MEMTRELLIS_HOME", None)
    env["COLUMNS"] = "160"
    env["HOME"] = str(tmp_path / "home")
    return env


# Loaded by the child interpreter at start-up (through PYTHONPATH): records every attempt
# to resolve a host name or open a network connection, so a test can prove there was none.
NETWORK_GUARD = """
import os, socket, sys

_LOG = os.environ["MEMTRELLIS_TEST_NETLOG"]

def _hook(event, args):
    if event == "socket.getaddrinfo" or (
        event == "socket.connect" and args[0].family in (socket.AF_INET, socket.AF_INET6)
    ):
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(f"{event} {args[1:]!r}\\n")
        raise OSError("network access attempted during a test")

sys.addaudithook(_hook)
"""


def run_script(
    tmp_path: Path,
    *args: str,
    input: str | None = None,
    guard_network: bool = False,
    env: dict[str, str] | None = None,
) -> Any:
    """Run the console script in ``tmp_path`` (its HOME there too); ``env`` adds variables."""
    if not SCRIPT.exists():
        pytest.skip("the memtrellis console script is not installed in this environment")
    env = {**script_env(tmp_path), **(env or {})}
    if guard_network:
        guard = tmp_path / "guard"
        guard.mkdir(exist_ok=True)
        (guard / "sitecustomize.py").write_text(NETWORK_GUARD, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(guard), env.get("PYTHONPATH")]))
        env["MEMTRELLIS_TEST_NETLOG"] = str(tmp_path / "network.log")
    return subprocess.run(
        [str(SCRIPT), *args],
        input=input,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=280,
        check=False,
    )
