"""Fine mode's skill stage: a ``skill`` memory from a successful tool trajectory, from its
prompt to the stored memory, with the scripted LLM (issue 23)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from memtrellis import ExtractionConfig, Memory, MemoryType, Scope, SourceKind
from memtrellis.context import new_turn
from memtrellis.extraction import Extractor
from memtrellis.testing import HashingEmbedder, ScriptedLLM

SCOPE = Scope(entity_id="ana")
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Porto"}'}}  # fmt: skip
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What's the weather in Porto?", "id": "u1"},
    {"role": "assistant", "content": None, "tool_calls": [CALL], "id": "a1"},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, sunny", "id": "t1"},
    {"role": "assistant", "content": "It is 18 °C and sunny in Porto.", "id": "a2"},
]
EXTRACTED = json.dumps(
    {
        "memories": [
            {
                "value": "It was 18 °C and sunny in Porto",
                "memory_type": "event",
                "source_ids": ["a2"],
            }
        ]
    }
)
SKILL = json.dumps(
    {
        "succeeded": True,
        "task": "look up the weather for a city",
        "steps": ["call get_weather with the city's name as city", "give the temperature"],
        "tools": ["get_weather"],
        "outcome": "the temperature and the sky in Porto",
        "source_ids": ["u1", "a1", "t1", "a2"],
    }
)


def _llm(skill: Any, extracted: str = EXTRACTED) -> ScriptedLLM:
    """Answers the skill pass with ``skill`` (text or exception), extraction with
    ``extracted``."""

    def answer(messages: list[dict[str, str]]) -> str:
        if "tool" in messages[0]["content"] and "trajectory" in messages[1]["content"]:
            if isinstance(skill, Exception):
                raise skill
            return str(skill)
        return extracted

    return ScriptedLLM(answer)


def _purposes(llm: ScriptedLLM) -> list[str]:
    return ["skill" if "<trajectory>" in call[1]["content"] else "extract" for call in llm.calls]


def test_a_successful_trajectory_makes_a_skill_memory() -> None:
    llm = _llm(SKILL)
    result = Extractor(llm).extract(HISTORY, SCOPE, mode="fine")
    assert _purposes(llm) == ["extract", "skill"]
    prompt = llm.calls[1][1]["content"]
    assert "[a1] " in prompt and 'assistant: [tool call] get_weather({"city": "Porto"})' in prompt
    assert "[t1] " in prompt and "18 °C, sunny" in prompt
    [event, skill] = result.items
    assert result.skills == 1 and result.skills_skipped == 0
    assert skill.memory_type is MemoryType.SKILL
    assert skill.text == (
        "How to look up the weather for a city: 1. call get_weather with the city's name as "
        "city; 2. give the temperature. Outcome: the temperature and the sky in Porto."
    )
    assert "skill" in skill.tags and "tool:get_weather" in skill.tags
    assert [(s.kind, s.message_id) for s in skill.sources] == [
        (SourceKind.CHAT, "u1"),
        (SourceKind.TOOL_CALL, "a1"),
        (SourceKind.TOOL_RESULT, "t1"),
        (SourceKind.CHAT, "a2"),
    ]
    assert skill.metadata["skill"]["steps"][0] == "call get_weather with the city's name as city"
    # the fine memory citing the answer carries the tools the answer came from
    assert [s.kind for s in event.sources] == [
        SourceKind.CHAT,
        SourceKind.TOOL_CALL,
        SourceKind.TOOL_RESULT,
    ]


def test_an_unsuccessful_trajectory_makes_no_skill_and_is_no_failure() -> None:
    llm = _llm('{"succeeded": false}')
    extractor = Extractor(llm)
    result = extractor.extract(HISTORY, SCOPE, mode="fine")
    assert [i.memory_type for i in result.items] == [MemoryType.EVENT]
    assert (result.skills, result.skills_skipped, extractor.failures.garbage) == (0, 0, 0)


def test_a_garbled_reply_is_repaired_or_skipped_and_counted(tmp_path: Path) -> None:
    repaired = "{'succeeded': true, 'task': 'look up the weather', 'steps': ['call get_weather'],"
    result = Extractor(_llm(repaired)).extract(HISTORY, SCOPE, mode="fine")
    assert [i.text for i in result.items if i.memory_type is MemoryType.SKILL] == [
        "How to look up the weather: 1. call get_weather."
    ]
    garbled = _llm("I would rather not say how that went.")
    with Memory(tmp_path, entity_id="ana", embedder=HashingEmbedder(), llm=garbled) as memory:
        stored = memory.add(HISTORY)
        assert [i.memory_type for i in stored] == [MemoryType.EVENT]  # the rest is kept
        assert memory.health().extraction_garbage == 1
    without_steps = _llm('{"succeeded": true, "task": "look up the weather"}')
    result = Extractor(without_steps).extract(HISTORY, SCOPE, mode="fine")
    assert (result.skills, result.skills_skipped) == (0, 1)
    failed_call = Extractor(
        _llm(TimeoutError("slow")), ExtractionConfig(llm_attempts=1, llm_backoff=0)
    )
    result = failed_call.extract(HISTORY, SCOPE, mode="fine")
    assert (result.skills, result.skills_skipped) == (0, 1)
    assert failed_call.failures.timeouts == 1 and failed_call.failures.garbage == 0


def test_only_trajectories_that_end_in_an_answer_with_a_working_tool_are_shown() -> None:
    failed = [dict(HISTORY[2], status="error", content="weather service down")]
    for chat in (HISTORY[:3], [*HISTORY[:2], *failed, HISTORY[3]], HISTORY[2:]):
        llm = _llm(SKILL)
        Extractor(llm).extract(chat, SCOPE, mode="fine")
        assert "skill" not in _purposes(llm)
    llm = _llm(SKILL)
    Extractor(llm, ExtractionConfig(skills=False)).extract(HISTORY, SCOPE, mode="fine")
    assert _purposes(llm) == ["extract"]


def test_a_chinese_trajectory_gets_the_chinese_prompt() -> None:
    chat = [
        {"role": "user", "content": "波尔图今天天气怎么样？", "id": "u1"},
        HISTORY[1],
        {"role": "tool", "tool_call_id": "call_1", "content": "18 度，晴", "id": "t1"},
        {"role": "assistant", "content": "波尔图今天 18 度，晴天。", "id": "a2"},
    ]
    steps = ["用城市名调用 get_weather", "告诉用户温度"]
    skill = json.dumps(
        {"succeeded": True, "task": "查询某个城市的天气", "steps": steps, "outcome": "温度"}
    )
    llm = _llm(skill, extracted='{"memories": []}')
    result = Extractor(llm).extract(chat, SCOPE, mode="fine")
    assert llm.calls[1][0]["content"].startswith("你阅读助手借助工具完成用户任务的过程")
    [item] = result.items
    assert (
        item.text
        == "如何查询某个城市的天气：1. 用城市名调用 get_weather；2. 告诉用户温度。结果：温度。"
    )


def test_a_per_call_capture_learns_from_the_exchange_it_continues() -> None:
    """A patched client captures the tool's result and the answer with the question and
    the call as context: the skill sees the whole trajectory, the context makes no memory."""
    turn = new_turn(HISTORY[:3], HISTORY[3])
    llm = _llm(SKILL, extracted='{"memories": []}')
    result = asyncio.run(Extractor(llm).aextract(turn, SCOPE, mode="fine"))
    assert _purposes(llm) == ["extract", "skill"]
    assert "[u1]" not in llm.calls[0][1]["content"]  # the context is not extracted again
    [skill] = result.items
    assert [s.message_id for s in skill.sources] == ["u1", "a1", "t1", "a2"]
    assert skill.sources[-1].content == "It is 18 °C and sunny in Porto."
    fast = Extractor().extract(turn, SCOPE, mode="fast")
    assert [i.text for i in fast.items] == ["It is 18 °C and sunny in Porto."]
