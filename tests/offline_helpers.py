"""Run Python in a fresh interpreter that reports (and refuses) any network attempt.

The audit hook is installed before anything else runs, so it also sees what imports do.
Each attempt prints a ``NETWORK ATTEMPT`` line to stderr before raising, because a
library may swallow the exception.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

NETWORK_MARKER = "NETWORK ATTEMPT"

_GUARD = f"""\
import sys

def _memtrellis_no_network(event, args):
    if event in ("socket.connect", "socket.connect_ex", "socket.getaddrinfo",
                 "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr",
                 "socket.sendto", "socket.sendmsg"):
        sys.stderr.write("{NETWORK_MARKER} " + event + " " + repr(args)[:200] + "\\n")
        sys.stderr.flush()
        raise RuntimeError("network attempt in an offline test: " + event)

sys.addaudithook(_memtrellis_no_network)
"""

# Variables memtrellis sets or reads; a test starts from none of them unless it says so.
_SCRUBBED = (
    "TIKTOKEN_CACHE_DIR",
    "DATA_GYM_CACHE_DIR",
    "MEMTRELLIS_CACHE_DIR",
    "ORT_DISABLE_TELEMETRY",
    "ANONYMIZED_TELEMETRY",
)


def run_offline(
    code: str,
    *,
    env: dict[str, str | None] | None = None,
    timeout: float = 180,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` under the no-network guard; ``env`` values of None unset a variable."""
    full_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    return subprocess.run(
        [sys.executable, "-c", _GUARD + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


def assert_ok_offline(result: subprocess.CompletedProcess[str]) -> None:
    """The child exited 0 and never tried the network."""
    assert NETWORK_MARKER not in result.stderr, result.stderr
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
