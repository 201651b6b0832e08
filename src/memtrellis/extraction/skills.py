"""Fine mode's skill stage: a ``skill`` memory from a successful tool trajectory.

A *trajectory* is one task done with tools: a user's request, the assistant's tool
calls and the tools' results, and the assistant's answer after them. In fine mode each
trajectory of a conversation that ends in an answer is shown to the LLM once
(`memtrellis.extraction.prompts.skill`); when it judges the task done, the skill
becomes one memory of type ``skill`` (``How to look up the weather for a city: 1. call
get_weather with the city's name; 2. ...``) whose sources are the trajectory's messages
(the request, each call and result, the answer), tagged ``skill`` and ``tool:<name>``.

Only successful trajectories make skills: one whose every tool result failed, or that
ends in a call with no answer, is not shown to the model, and one the model calls
unsuccessful is left out. A reply that cannot be read is repaired when it can
(json-repair) and otherwise skipped and counted (``ExtractionResult.skills_skipped``,
and the ``garbage`` failures of ``Memory.health()``): a skill is never a fallback memory.

Examples:
    >>> from datetime import datetime, timezone
    >>> from memtrellis.tool_calls import ToolUse
    >>> from memtrellis.types import Scope
    >>> at = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    >>> call = ToolUse(name="get_weather", call_id="c1", arguments='{"city": "Porto"}')
    >>> chat = [Turn(0, 0, "user", "Weather in Porto?", "m1", at),
    ...         Turn(0, 1, "assistant", '[tool call] get_weather({"city": "Porto"})', "m2", at,
    ...              tool_calls=(call,)),
    ...         Turn(0, 2, "tool", "18 °C", "m3", at, tool=call),
    ...         Turn(0, 3, "assistant", "It is 18 °C in Porto.", "m4", at)]
    >>> [trajectory] = trajectories([chat])
    >>> reply = ('{"succeeded": true, "task": "look up the weather for a city", '
    ...          '"steps": ["call get_weather with the city"], "tools": ["get_weather"]}')
    >>> outcome = skill_from_reply(reply, trajectory, Scope(entity_id="ana"), now=at)
    >>> outcome.item.text, outcome.item.memory_type.value
    ('How to look up the weather for a city: 1. call get_weather with the city.', 'skill')
    >>> [s.kind.value for s in outcome.item.sources]
    ['chat', 'tool_call', 'tool_result', 'chat']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memtrellis.extraction.exchanges import calls_only
from memtrellis.extraction.jsonload import How, load_json
from memtrellis.extraction.language import detect_window_language
from memtrellis.extraction.model import Language, Turn
from memtrellis.extraction.prompts._lenient import fold
from memtrellis.extraction.prompts.skill import SkillAnswer, build_skill_messages, skill_text
from memtrellis.types import MemoryItem, MemoryType, Scope, SourceRef

__all__ = [
    "SKILL_TAG",
    "SkillOutcome",
    "Trajectory",
    "skill_from_reply",
    "skill_messages",
    "trajectories",
]

#: Tag of every skill memory.
SKILL_TAG = "skill"
_CONFIDENCE = 0.7


@dataclass(frozen=True)
class Trajectory:
    """One task done with tools: the request, the calls and results, the answer."""

    turns: tuple[Turn, ...]
    language: Language

    def sources(self) -> list[SourceRef]:
        """The trajectory's messages as sources: each message, each call, each result."""
        out: list[SourceRef] = []
        for turn in self.turns:
            if turn.role == "assistant" and turn.tool_calls:
                if turn.content.strip() and not calls_only(turn):
                    out.append(turn.source())
                out.extend(turn.call_sources())
            else:
                out.append(turn.source())
        return out


def _trajectory(segment: Sequence[Turn]) -> Trajectory | None:
    turns = [t for t in segment if t.role != "system"]
    if not turns or turns[0].role != "user":
        return None  # no request: what was the task?
    last = turns[-1]
    if last.role != "assistant" or last.tool_calls or last.context:
        return None  # no answer yet, or one an earlier capture already read
    calls = [c for t in turns for c in t.tool_calls]
    results = [t for t in turns if t.role == "tool"]
    if not calls or not results or all(t.tool is not None and t.tool.failed for t in results):
        return None
    language = detect_window_language(turns)
    return Trajectory(tuple(turns), language)


def trajectories(conversations: Sequence[Sequence[Turn]]) -> list[Trajectory]:
    """The trajectories of each conversation a skill may be learnt from: from a user's
    request to the assistant's answer, with at least one tool call and one result that
    did not fail in between."""
    found: list[Trajectory] = []
    for conversation in conversations:
        segments: list[list[Turn]] = [[]]
        for turn in conversation:
            if turn.role == "user" and segments[-1] and segments[-1][-1].role != "user":
                segments.append([])
            segments[-1].append(turn)
        found.extend(t for segment in segments if (t := _trajectory(segment)) is not None)
    return found


def skill_messages(trajectory: Trajectory) -> list[dict[str, str]]:
    """The messages asking the LLM how ``trajectory`` did its task
    (`memtrellis.extraction.prompts.skill`)."""
    return build_skill_messages(trajectory.turns, trajectory.language)


@dataclass
class SkillOutcome:
    """What one trajectory's reply gave: the skill (or none), whether the reply could
    not be used (``bad``, then ``error`` says why) or had to be repaired."""

    item: MemoryItem | None = None
    bad: bool = False
    repaired: bool = False
    error: str | None = None


def _accept(value: Any, how: How) -> bool:
    return isinstance(value, Mapping) and any(
        key in fold(value) for key in ("succeeded", "success", "successful", "task", "成功")
    )


def _answer(raw: str | Mapping[str, Any] | None) -> tuple[SkillAnswer | None, bool, str | None]:
    if raw is None:
        return None, False, "the LLM call failed"
    value: Any = raw
    repaired = False
    if isinstance(raw, str):
        loaded = load_json(raw, _accept)
        value, repaired = loaded.value, loaded.repaired
    if not isinstance(value, Mapping):
        return None, repaired, "the reply is not a JSON object"
    try:
        return SkillAnswer.model_validate(value), repaired, None
    except ValueError as exc:  # pydantic's ValidationError
        return None, repaired, f"not a skill answer ({type(exc).__name__})"


def skill_from_reply(
    raw: str | Mapping[str, Any] | None,
    trajectory: Trajectory,
    scope: Scope,
    *,
    now: datetime,
) -> SkillOutcome:
    """The skill memory ``raw`` describes, if the trajectory succeeded; never raises.

    ``None`` (the call failed), a reply that is no skill answer, or a successful answer
    without a task or steps is ``bad``; an answer that the task did not succeed is no
    skill and not bad.
    """
    answer, repaired, error = _answer(raw)
    if answer is None:
        return SkillOutcome(bad=True, repaired=repaired, error=error)
    if not answer.succeeded:
        return SkillOutcome(repaired=repaired)
    if not answer.usable:
        return SkillOutcome(bad=True, repaired=repaired, error="a skill without task or steps")
    used = list(dict.fromkeys(c.name for t in trajectory.turns for c in t.tool_calls))
    tools = list(dict.fromkeys([*answer.tools, *used]))
    item = MemoryItem(
        text=skill_text(answer, trajectory.language),
        memory_type=MemoryType.SKILL,
        tags=[SKILL_TAG, "mode:fine", *(f"tool:{name}" for name in used)],
        sources=trajectory.sources(),
        scope=scope,
        confidence=_CONFIDENCE,
        created_at=now,
        valid_from=trajectory.turns[-1].timestamp,
        metadata={
            "extraction": {"mode": "fine", "language": trajectory.language.value},
            "skill": {
                "task": answer.task,
                "steps": answer.steps,
                "tools": tools,
                "outcome": answer.outcome,
            },
        },
    )
    return SkillOutcome(item=item, repaired=repaired)
