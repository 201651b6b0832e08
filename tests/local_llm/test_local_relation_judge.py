"""The lifecycle's relation judge on a real small model: whatever it answers, every verdict
is a relation or None (the rules decide), an unreadable reply is counted and logged, and
no memory is lost when it is stored."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from memtrellis import Memory, MemoryItem, Scope
from memtrellis.lifecycle.plan import Candidate
from memtrellis.lifecycle.relate import Relation, RelationKind
from memtrellis.lifecycle.relation_judge import LLMRelationJudge
from memtrellis.openai_compatible import OpenAICompatibleLLM
from memtrellis.testing import HashingEmbedder

#: A busy machine makes a small model slow: far more than the default 300 s a test.
pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(1800)]

SCOPE = Scope(entity_id="mira")
#: (existing memories, new memory): a move, a postponement, a budget cut (Chinese), a
#: compatible addition, an unrelated fact about the same person.
CASES: list[tuple[list[str], str]] = [
    (["Mira lives in Lisbon.", "Mira works as a nurse."], "Mira moved to Porto in March."),
    (["The project launch date is 2024-06-15."], "The launch was postponed to 2024-07-10."),
    (["项目预算为五千元。"], "因审查，项目预算削减到三千元。"),
    (["Mira has a daughter who is 7."], "Mira's son is 4 years old."),
    (["Mira is allergic to peanuts."], "Mira's favourite colour is green."),
]


def item(text: str) -> MemoryItem:
    return MemoryItem(text=text, scope=SCOPE)


@pytest.mark.parametrize("structured", [False, True], ids=["plain", "json_schema"])
def test_every_verdict_is_a_relation_or_left_to_the_rules(
    llama_server: Any, structured: bool, caplog: pytest.LogCaptureFixture
) -> None:
    llm = OpenAICompatibleLLM(
        "gemma-3-270m",
        base_url=llama_server.base_url,
        max_tokens=96,
        timeout=900,
        response_format="json_schema" if structured else None,
    )
    judge = LLMRelationJudge(llm, timeout=900)
    caplog.set_level(logging.WARNING, logger="memtrellis.lifecycle")
    unreadable = 0
    readable = 0
    for existing, new in CASES[:3]:
        candidates = [Candidate(item(text), 0.8) for text in existing]
        verdicts = judge(item(new), candidates)
        assert verdicts is not None  # the call itself went through
        assert len(verdicts) == len(candidates)
        for verdict in verdicts:
            assert verdict is None or (
                isinstance(verdict, Relation) and isinstance(verdict.kind, RelationKind)
            )
        if any(verdicts):
            readable += 1
        else:
            unreadable += 1
    assert judge.failures == unreadable
    warned = [r for r in caplog.records if "relation judge reply unreadable" in r.getMessage()]
    assert len(warned) == unreadable
    print(f"relation judge ({'json_schema' if structured else 'plain'}): {readable} readable")


def test_storing_through_the_judge_loses_nothing(
    llama_server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Memory(llm=...) asks the judge about the closest stored memories: whatever it says,
    every memory stored is still there with its own text (current, or superseded and kept
    in the history), and each judge failure is counted in health and logged."""
    llm = OpenAICompatibleLLM(
        "gemma-3-270m", base_url=llama_server.base_url, max_tokens=96, timeout=900
    )
    caplog.set_level(logging.WARNING, logger="memtrellis.lifecycle")
    with Memory(tmp_path / "store", embedder=HashingEmbedder(), llm=llm) as memory:
        for existing, new in CASES:
            for text in [*existing, new]:
                memory.store(MemoryItem(text=text, scope=SCOPE))
        everything = memory.list(entity_id="mira", limit=1000, filters={"include_superseded": True})
        health = memory.health()
    texts = {m.text for m in everything}
    missing = [text for existing, new in CASES for text in [*existing, new] if text not in texts]
    assert missing == []
    warned = [r for r in caplog.records if r.getMessage().startswith("relation judge")]
    assert health.relation_judge_failures == len(warned)
    print(
        f"stored {len(texts)}, superseded {health.superseded}, merged {health.merged_duplicates}, "
        f"judge failures {health.relation_judge_failures}"
    )
