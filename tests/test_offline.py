"""No phoning home: environment defaults, Chroma settings, and whole-process network checks."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memtrellis._offline import OFFLINE_ENV_DEFAULTS, chroma_settings, prepare_offline_env
from offline_helpers import assert_ok_offline, run_offline

FULL_CYCLE = """
import time
from memtrellis.embeddings import MiniLMEmbeddingFunction, default_embedder
from memtrellis.tokens import count_tokens, truncate_to_tokens
import chromadb
from memtrellis._offline import chroma_settings

assert count_tokens("hello world") == 2
assert truncate_to_tokens("one two three", 1) == "one"
assert len(default_embedder().embed_documents(["I like tea", "The train leaves"])) == 2
client = chromadb.PersistentClient(path={db!r}, settings=chroma_settings())
col = client.create_collection("cycle", embedding_function=MiniLMEmbeddingFunction())
col.add(ids=["tea", "train"], documents=["I like tea", "The train leaves at nine"])
assert col.query(query_texts=["a hot drink"], n_results=1)["ids"] == [["tea"]]
time.sleep({linger})  # onnxruntime's telemetry fired ~3 s after the first session
print("done")
"""


def test_prepare_sets_defaults_in_a_fresh_process() -> None:
    result = run_offline(
        """
        import os, sys
        from memtrellis._offline import prepare_offline_env
        prepare_offline_env(); prepare_offline_env()
        print(os.environ["ORT_DISABLE_TELEMETRY"], os.environ["ANONYMIZED_TELEMETRY"])
        print("onnxruntime" in sys.modules)
        """
    )
    assert_ok_offline(result)
    assert result.stdout.split() == ["1", "False", "False"]


def test_prepare_keeps_values_the_user_set() -> None:
    result = run_offline(
        """
        import os
        from memtrellis._offline import prepare_offline_env
        prepare_offline_env()
        print(os.environ["ORT_DISABLE_TELEMETRY"], os.environ["ANONYMIZED_TELEMETRY"])
        """,
        env={"ORT_DISABLE_TELEMETRY": "0", "ANONYMIZED_TELEMETRY": "True"},
    )
    assert_ok_offline(result)
    assert result.stdout.split() == ["0", "True"]


def test_warns_when_onnxruntime_was_imported_first() -> None:
    # ORT reads the variable when its library loads; too late to set it afterwards.
    result = run_offline(
        """
        import warnings
        import onnxruntime
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import memtrellis._offline
        print([str(w.message) for w in caught if w.category is RuntimeWarning])
        """
    )
    assert_ok_offline(result)
    assert "ORT_DISABLE_TELEMETRY" in result.stdout


def test_in_process_env_is_prepared() -> None:
    prepare_offline_env()
    import os

    for name in OFFLINE_ENV_DEFAULTS:
        assert name in os.environ


def test_chroma_settings() -> None:
    settings = chroma_settings()
    assert settings.anonymized_telemetry is False
    custom = chroma_settings(allow_reset=True, is_persistent=True)
    assert custom.allow_reset is True
    assert custom.is_persistent is True
    assert custom.anonymized_telemetry is False


def test_full_cycle_makes_no_python_level_network_attempt(tmp_path: Path) -> None:
    """The audit hook is installed before memtrellis, chromadb or onnxruntime load."""
    code = FULL_CYCLE.format(db=str(tmp_path / "db"), linger=0)
    result = run_offline(code, env={"MEMTRELLIS_CACHE_DIR": str(tmp_path / "cache")})
    assert_ok_offline(result)
    assert result.stdout.strip() == "done"


def _strace_connects(tmp_path: Path, code: str, name: str) -> list[str]:
    log = tmp_path / f"{name}.strace"
    env = {"MEMTRELLIS_CACHE_DIR": str(tmp_path / "cache")}
    import os

    full_env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    full_env.update(env)
    proc = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(log), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = log.read_text().splitlines() if log.exists() else []
    # DNS goes to port 53 or through nscd; any AF_INET/AF_INET6 connect is the network.
    return [ln for ln in lines if re.search(r"AF_INET6?|nscd", ln)]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_full_cycle_makes_no_native_network_attempt(tmp_path: Path) -> None:
    """onnxruntime's telemetry resolves its host from C++, where audit hooks cannot see."""
    control = _strace_connects(
        tmp_path,
        "import socket\ntry:\n    socket.getaddrinfo('memtrellis-probe.invalid', 443)\n"
        "except OSError:\n    pass\n",
        "control",
    )
    if not control:
        pytest.skip("strace sees no resolver traffic here, so it could not catch a lookup")
    code = FULL_CYCLE.format(db=str(tmp_path / "db"), linger=8)
    assert _strace_connects(tmp_path, code, "cycle") == []


def test_the_guard_itself_catches_a_lookup() -> None:
    result = run_offline(
        "import socket\ntry:\n    socket.getaddrinfo('memtrellis-probe.invalid', 443)\n"
        "except RuntimeError as exc:\n    print(exc)\n"
    )
    assert "network attempt" in result.stdout
    assert "NETWORK ATTEMPT socket.getaddrinfo" in result.stderr


def test_importing_memtrellis_prepares_env_without_loading_heavy_libraries() -> None:
    result = run_offline(
        """
        import os, sys
        import memtrellis.embeddings, memtrellis.tokens, memtrellis.testing
        print(os.environ.get("ORT_DISABLE_TELEMETRY"))
        print(sorted(m for m in ("onnxruntime", "tokenizers", "tiktoken") if m in sys.modules))
        """
    )
    assert_ok_offline(result)
    assert result.stdout.splitlines() == ["1", "[]"]


def test_demo_runs_with_the_network_cut_off(tmp_path: Path) -> None:
    """`memtrellis demo` inside a network namespace that has no network at all."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--net", "true"]).returncode != 0:
        pytest.skip("needs `unshare --net` (root or user namespaces)")
    script = Path(sys.executable).parent / "memtrellis"
    result = subprocess.run(
        [unshare, "--net", str(script), "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "I moved to Porto" in result.stdout and "superseded by s2-m1" in result.stdout
