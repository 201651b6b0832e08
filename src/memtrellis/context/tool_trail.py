"""The tools a memory rests on, one line each: ``get_weather({"city": "Porto"}) → 18 °C``.

A memory made from an agent's answer carries the tool calls and results of its turn as
sources (``tool_call`` and ``tool_result``, see `memtrellis.tool_calls`). `tool_trail`
pairs each call with its result (by the call's id, else in order) so that recall's
sources read as what the answer came from; the memory-context block shows these lines
among its source excerpts.

Examples:
    >>> from memtrellis.tool_calls import ToolUse
    >>> from memtrellis.types import SourceRef
    >>> call = ToolUse(name="get_weather", call_id="c1", arguments='{"city": "Porto"}')
    >>> sources = [
    ...     SourceRef(kind="chat", role="assistant", content="It is 18 °C in Porto."),
    ...     SourceRef(kind="tool_call", role="assistant", content=call.text(), tool=call),
    ...     SourceRef(kind="tool_result", role="tool", content="18 °C, sunny", tool=call),
    ... ]
    >>> tool_trail(sources)
    ['get_weather({"city": "Porto"}) → 18 °C, sunny']
"""

from __future__ import annotations

from collections.abc import Sequence

from memtrellis.tool_calls import ToolUse
from memtrellis.types import SourceKind, SourceRef

__all__ = ["tool_trail"]

_RESULT_CHARS = 160


def _result_text(source: SourceRef, chars: int) -> str:
    text = " ".join(source.content.split())
    if len(text) > chars:
        text = text[: chars - 1].rstrip() + "…"
    failed = source.tool is not None and source.tool.failed
    return f"(failed) {text}" if failed else text


def _answers(result: SourceRef, call: ToolUse) -> bool:
    if result.tool is None:
        return False
    if call.call_id:
        return result.tool.call_id == call.call_id
    return result.tool.name == call.name


def tool_trail(sources: Sequence[SourceRef], *, result_chars: int = _RESULT_CHARS) -> list[str]:
    """Each tool call of ``sources`` with what it returned, in order: ``name(arguments)
    → result`` (a call without its result alone; a result without its call as
    ``name → result``, or with the arguments its source kept). Results are cut to
    ``result_chars`` characters; a failed one reads ``(failed) ...``.

    Examples:
        >>> from memtrellis.tool_calls import ToolUse
        >>> from memtrellis.types import SourceRef
        >>> lookup = ToolUse(name="search", arguments='{"q": "Porto"}', failed=True)
        >>> tool_trail([SourceRef(kind="tool_result", content="timeout", tool=lookup)])
        ['search({"q": "Porto"}) → (failed) timeout']
    """
    calls = [s for s in sources if s.kind is SourceKind.TOOL_CALL and s.tool is not None]
    results = [s for s in sources if s.kind is SourceKind.TOOL_RESULT]
    lines: list[str] = []
    answered: set[int] = set()
    for call in calls:
        use = call.tool
        assert use is not None
        match = next(
            (n for n, r in enumerate(results) if n not in answered and _answers(r, use)), None
        )
        if match is None:
            lines.append(use.text())
            continue
        answered.add(match)
        lines.append(f"{use.text()} → {_result_text(results[match], result_chars)}")
    for number, result in enumerate(results):
        if number in answered:
            continue
        use = result.tool
        head = use.text() if use is not None and use.arguments else (use.name if use else "tool")
        lines.append(f"{head} → {_result_text(result, result_chars)}")
    return lines
