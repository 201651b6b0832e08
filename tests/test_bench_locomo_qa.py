"""benchmarks/locomo_qa.py end to end on a tiny conversation in the LoCoMo schema (written
here), against a scripted OpenAI-compatible endpoint on loopback, so that the script cannot
rot; the real-model run is `nox -s local_llm`. No figure is asserted, only what the script
sends and reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_endpoint import Endpoint, chat
from locomo_tiny import write_tiny_locomo

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "locomo_qa.py"


def reply(body: dict[str, Any]) -> tuple[int, Any]:
    """Answers with the first memory-ish word; the judge says CORRECT for Porto."""
    user = body["messages"][-1]["content"]
    if "Candidate answer:" in user:
        candidate = user.split("Candidate answer:", 1)[1]
        return chat('{"label": "CORRECT"}' if "Porto" in candidate else "WRONG, I think")
    return chat("Porto\nbecause the notes say so" if "Porto" in user else "Not mentioned")


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint(reply)
    yield server
    server.close()


def test_the_benchmark_runs_three_systems_and_judges_every_answer(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    data = write_tiny_locomo(tmp_path / "tiny_locomo.json")
    out = tmp_path / "qa.json"
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\n## Other\n\nkept\n", encoding="utf-8")
    env = dict(os.environ, TMPDIR=str(tmp_path), ANONYMIZED_TELEMETRY="False")
    env.pop("OPENAI_API_KEY", None)
    args = [
        "--data", str(data), "--json", str(out), "--base-url", endpoint.base_url,
        "--model", "scripted", "--questions", "0", "--context-tokens", "360",
        "--budget", "200", "--docs", str(docs),
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    # three systems, three questions each (category 5 left out), every answer judged
    answers = result["answers"]
    assert sorted({a["system"] for a in answers}) == ["dense", "full context", "memtrellis"]
    assert len(answers) == 9 and {a["category"] for a in answers} == {2, 4}
    for system in ("memtrellis", "full context", "dense"):
        figures = result[system]
        assert figures["questions"] == 3
        assert 0.0 <= figures["J"] <= 1.0 and 0.0 <= figures["F1"] <= 1.0
        assert figures["answer_errors"] == 0
    # the answer's first line only; the judge's verdicts read from JSON and from prose
    assert {a["answer"] for a in answers} <= {"Porto", "Not mentioned"}
    assert {a["verdict"] for a in answers} <= {"CORRECT", "WRONG"}
    porto = [a for a in answers if a["answer"] == "Porto"]
    assert all(a["verdict"] == "CORRECT" for a in porto)
    # 56 tokens (360 less the prompt's reserve) cannot hold the transcript: the full
    # context keeps the latest lines
    cut = result["meta"]["full_context_cut"]["conv-t"]
    assert cut["lines"] == 7 and 0 < cut["lines_left_out"] < 7
    # the requests: answer prompts carry each system's context, then the judge prompts
    prompts = [body["messages"][-1]["content"] for _, body in endpoint.requests]
    assert sum(p.startswith("Memory context:") for p in prompts) == 3
    assert sum(p.startswith("Conversation:") for p in prompts) == 3
    assert sum(p.startswith("Retrieved messages:") for p in prompts) == 3
    assert sum("Candidate answer:" in p for p in prompts) == 9
    assert all(body["model"] == "scripted" for _, body in endpoint.requests)
    memory_prompt = next(p for p in prompts if p.startswith("Memory context:"))
    assert "<memory_context>" in memory_prompt
    # the docs section is written beside the other sections, which stay
    page = docs.read_text(encoding="utf-8")
    assert "## LoCoMo answer quality (LLM judge)" in page and "## Other\n\nkept" in page
    assert "| **memtrellis** |" in page
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("memtrellis-locomo-qa-")]
