"""benchmarks/locomo_qa.py end to end on the local model: ingest, recall, context, answer
and judge, for the three systems, on a tiny conversation written for the test. The
figures are whatever a 270M model makes of it; only the run's shape is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from locomo_tiny import write_tiny_locomo

#: A busy machine makes a small model slow: far more than the default 300 s a test.
pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(1800)]

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "locomo_qa.py"


def test_the_qa_benchmark_runs_on_the_local_model(llama_server: Any, tmp_path: Path) -> None:
    data = write_tiny_locomo(tmp_path / "tiny_locomo.json")
    out = tmp_path / "qa.json"
    args = [
        "--data", str(data), "--json", str(out), "--base-url", llama_server.base_url,
        "--model", "gemma-3-270m", "--questions", "2", "--context-tokens", "4096",
        "--answer-tokens", "24",
    ]  # fmt: skip
    env = dict(os.environ, TMPDIR=str(tmp_path), ANONYMIZED_TELEMETRY="False")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    answers = result["answers"]
    assert len(answers) == 6
    assert all(a["error"] is None for a in answers), [a["error"] for a in answers]
    for system in ("memtrellis", "full context", "dense"):
        figures = result[system]
        assert figures["questions"] == 2
        assert 0.0 <= figures["J"] <= 1.0
        # every answer has a verdict or is counted as unreadable
        assert figures["judge_unreadable"] == sum(
            a["verdict"] is None for a in answers if a["system"] == system
        )
    # the whole tiny conversation fits 4,096 tokens: nothing cut
    assert result["meta"]["full_context_cut"]["conv-t"]["lines_left_out"] == 0
    print(done.stdout[-2000:])
