"""ExtractionConfig(instructions=..., prompt=...): the application's words reach the LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtrellis import ExtractionConfig, InvalidInputError, Memory
from memtrellis.extraction.prompts.extract import SYSTEM_EN
from memtrellis.testing import HashingEmbedder, ScriptedLLM

TURN = [
    {"role": "user", "content": "I bake sourdough every Sunday", "id": "m1"},
    {"role": "user", "content": "It's raining again", "id": "m2"},
]
REPLY = json.dumps(
    {
        "memories": [
            {
                "value": "The user bakes sourdough every Sunday.",
                "memory_type": "fact",
                "source_ids": ["m1"],
            }
        ],
        "summary": "Baking.",
    }
)


def _extract(tmp_path: Path, config: ExtractionConfig) -> tuple[list[str], str]:
    llm = ScriptedLLM(lambda messages: REPLY)
    with Memory(tmp_path, embedder=HashingEmbedder(), llm=llm, extraction=config) as memory:
        stored = memory.add(TURN, mode="fine")
    [call] = llm.calls
    system, user = call
    assert system["role"] == "system" and "It's raining again" in user["content"]
    return [item.text for item in stored], system["content"]


def test_instructions_are_appended_to_the_built_in_prompt(tmp_path: Path) -> None:
    texts, system = _extract(tmp_path, ExtractionConfig(instructions="Only remember baking."))
    assert system.startswith(SYSTEM_EN.rstrip())
    assert system.endswith("\nOnly remember baking.")
    assert "Instructions of the application" in system
    assert "The user bakes sourdough every Sunday." in texts


def test_a_whole_prompt_replaces_the_built_in_one_and_keeps_the_reply_format(
    tmp_path: Path,
) -> None:
    prompt = "You keep a baker's notebook. Literal {{braces}} stay.\n\n{reply_format}"
    config = ExtractionConfig(prompt=prompt, instructions="Skip the weather.")
    texts, system = _extract(tmp_path, config)
    assert system.startswith("You keep a baker's notebook. Literal {braces} stay.")
    assert "extract long-term memories" not in system  # the built-in rules are gone
    assert '"source_ids"' in system and '{"memories": [' in system  # the format is kept
    assert system.endswith("Skip the weather.")
    assert "The user bakes sourdough every Sunday." in texts


def test_the_default_prompt_is_unchanged(tmp_path: Path) -> None:
    _, system = _extract(tmp_path, ExtractionConfig())
    assert system == SYSTEM_EN


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prompt": "Remember recipes."}, r"must contain the \{reply_format\} placeholder"),
        ({"prompt": "{reply_format} for {user}"}, r"unknown placeholders \['user'\]"),
        ({"prompt": '{reply_format} {"a": 1}'}, "unknown placeholders"),
        ({"prompt": "{reply_format} }"}, "not a valid template"),
        ({"prompt": "  "}, "prompt must be non-empty text"),
        ({"instructions": 3}, "instructions must be non-empty text"),
    ],
)
def test_a_bad_prompt_is_refused_when_the_config_is_made(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        ExtractionConfig(**options)  # type: ignore[arg-type]
