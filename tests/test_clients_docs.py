"""The README's SDK-client example and docs/sdk-clients.md run offline, as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from offline_helpers import NETWORK_MARKER, run_offline
from test_docs_examples import run_blocks

ROOT = Path(__file__).resolve().parent.parent


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text.split("\n## OpenAI and Anthropic clients\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return code


def test_readme_sdk_client_example_runs_offline(tmp_path: Path) -> None:
    done = run_offline(_readme_example(), env={"MEMTRELLIS_HOME": None}, cwd=tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    assert NETWORK_MARKER not in done.stderr
    assert done.stdout.startswith("<memory_context>")
    assert "allergic to peanuts" in done.stdout
    assert list(tmp_path.iterdir()) == []  # its store was a temporary folder


def test_sdk_clients_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printed = run_blocks("sdk-clients.md", tmp_path, monkeypatch).splitlines()

    assert printed == [
        "system True",
        "I'm allergic to peanuts. openai 14",
        "['Weather in Porto?', 'It is 18 °C and sunny in Porto.']",  # tool calls
        "['chat', 'tool_call', 'tool_result'] "
        '[\'get_weather({"city": "Porto"}) → 18 °C, sunny\']',
        "My new bike!",  # the attachments example: the text names the image
        "[image: a red bicycle by the canal]",
        "https://example.com/bike.jpg",
        "['I like jazz.', 'Noted!']",
        "True True",  # session history: the turn the caller did not send
        "system True",
        "carol 1",
    ]
