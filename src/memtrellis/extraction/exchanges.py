"""Tool exchanges in a conversation: which calls and results a memory rests on.

An agent answers after a run of tool turns: the assistant's calls and the tools' results
(``[tool call] get_weather({"city": "Porto"})``, ``18 °C``), then ``It is 18 °C in
Porto.``. The memory made from that answer carries each call and result of the run as a
source (``tool_call``, ``tool_result``), in order, after the answer's own message; the
memory of a call carries the call, and the memory of a tool's output the call it answers.

In fast mode an assistant message that is only tool calls becomes no memory of its own
when an answer follows its run in the same conversation: it is a source of that answer.
One the turn ends on (a tool-forced structured answer, a call whose result comes in a
later turn) stays a memory, so no call is ever dropped.

Examples:
    >>> from datetime import datetime, timezone
    >>> from memtrellis.tool_calls import ToolUse
    >>> at = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    >>> call = ToolUse(name="get_weather", call_id="c1", arguments='{"city": "Porto"}')
    >>> chat = [Turn(0, 0, "user", "Weather in Porto?", "m1", at),
    ...         Turn(0, 1, "assistant", '[tool call] get_weather({"city": "Porto"})', "m2", at,
    ...              tool_calls=(call,)),
    ...         Turn(0, 2, "tool", "18 °C", "m3", at, tool=call),
    ...         Turn(0, 3, "assistant", "It is 18 °C in Porto.", "m4", at)]
    >>> found = tool_provenance(chat)
    >>> [(s.kind.value, s.content) for s in found.extra["m4"]]
    [('tool_call', 'get_weather({"city": "Porto"})'), ('tool_result', '18 °C')]
    >>> found.folded
    {'m2'}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memtrellis.extraction.model import Turn
from memtrellis.tool_calls import ToolUse, call_line
from memtrellis.types import TOOL_KINDS, MemoryItem, SourceRef

__all__ = ["Provenance", "calls_only", "tool_provenance", "with_tool_sources"]


@dataclass
class Provenance:
    """The tool sources of a conversation's messages, by message id.

    Attributes:
        extra: The sources a memory citing the message gains: an answer's whole run of
            calls and results, a call message's calls, a tool result's call.
        folded: Ids of call-only assistant messages an answer follows (fast mode makes
            no memory of them).
    """

    extra: dict[str, list[SourceRef]] = field(default_factory=dict)
    folded: set[str] = field(default_factory=set)


def calls_only(turn: Turn) -> bool:
    """Whether ``turn`` is an assistant message of tool calls and nothing else."""
    if turn.role != "assistant" or not turn.tool_calls:
        return False
    lines = {call_line(call) for call in turn.tool_calls}
    return all(line in lines for line in turn.content.splitlines() if line.strip())


def _is_step(turn: Turn) -> bool:
    return turn.role == "tool" or (turn.role == "assistant" and bool(turn.tool_calls))


def _run_sources(run: Sequence[Turn]) -> list[SourceRef]:
    out: list[SourceRef] = []
    for turn in run:
        out.extend(turn.call_sources() if turn.role == "assistant" else [turn.source()])
    return out


def tool_provenance(conversation: Sequence[Turn]) -> Provenance:
    """The tool sources of each message of ``conversation`` (see `Provenance`).

    A run is the tool turns and calling assistant turns between two other messages; a
    user message ends it. A call's memory gains the run up to it (the calls and results
    it followed, then its own calls), a tool result's memory its call, and the
    assistant answer after a run the whole run.
    """
    found = Provenance()
    run: list[Turn] = []
    for turn in conversation:
        if _is_step(turn):
            run.append(turn)
            if turn.role == "assistant":
                found.extra[turn.message_id] = _run_sources(run)
            else:
                call = _call_of(turn)
                made = [s for t in run for s in t.call_sources() if s.tool == call]
                if made:
                    found.extra[turn.message_id] = made
        elif turn.role == "assistant":
            if run:
                found.extra[turn.message_id] = _run_sources(run)
                found.folded.update(t.message_id for t in run if calls_only(t))
            run = []
        elif turn.role == "user":
            run = []
    return found


def _call_of(turn: Turn) -> ToolUse | None:
    # The call a result answers, as the calling turn holds it (without the result's flag).
    return turn.tool.model_copy(update={"failed": False}) if turn.tool is not None else None


def _key(source: SourceRef) -> tuple[str, str | None, str, str | None]:
    call_id = source.tool.call_id if source.tool is not None else None
    return (source.kind.value, source.message_id, source.content, call_id)


def with_tool_sources(items: Iterable[MemoryItem], provenance: Sequence[Provenance]) -> None:
    """Give each memory the tool sources of the messages it cites, in place, after its
    own sources (none twice)."""
    extra: dict[str, list[SourceRef]] = {}
    for found in provenance:
        extra.update(found.extra)
    if not extra:
        return
    for item in items:
        cited = [s.message_id for s in item.sources if s.kind not in TOOL_KINDS and s.message_id]
        cited += [s.message_id for s in item.sources if s.kind in TOOL_KINDS and s.message_id]
        known = {_key(s) for s in item.sources}
        added: list[SourceRef] = []
        for message_id in dict.fromkeys(cited):
            for source in extra.get(message_id, ()):
                if _key(source) not in known:
                    known.add(_key(source))
                    added.append(source)
        if added:
            item.sources = [*item.sources, *added]
