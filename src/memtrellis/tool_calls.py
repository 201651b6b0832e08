"""Tool calls and tool results in a conversation, read from every SDK's shape.

An agent's turn is mostly tools: the model calls ``get_weather({"city": "Porto"})``, the
tool answers ``18 °C``, the model answers the user from it. memtrellis keeps each call
and each result as a source of the memory made from the turn, as a `ToolUse` on the
[`SourceRef`][memtrellis.SourceRef] (kind ``tool_call`` or ``tool_result``): the tool's
name, the call's id and arguments, and whether the tool reported an error.

The one message shape every adapter hands the core (``Memory.add``, ``Memory.capture``)
is OpenAI's, flattened:

* an assistant message lists its calls under ``tool_calls``, each
  ``{"id": ..., "name": ..., "arguments": ...}`` (arguments as JSON text or a dict);
  OpenAI's nested ``{"function": {"name", "arguments"}}``, LangChain's
  ``{"name", "args", "id"}`` and Anthropic ``tool_use`` content blocks are read too;
* a tool's output is a ``tool`` message with ``tool_call_id`` (and the tool's ``name``
  when known; ``"status": "error"`` or ``"is_error": true`` when the tool failed);
  Anthropic's user message of ``tool_result`` blocks is read as one.

A call is written into its message's text as one line, ``[tool call]
get_weather({"city": "Porto"})`` (`call_line`), so it is searched like any word of the
turn. memtrellis's own memory tools (``save_memory``... in the LangChain and LlamaIndex
packages) are named with `mark_memory_tools` when they are made, and captured turns
leave their calls and results out (`without_memory_tools`): what they save is stored by
the tool itself, never a second time as a captured tool call.

Examples:
    >>> [call] = calls_of({"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "call_1", "type": "function",
    ...      "function": {"name": "get_weather", "arguments": '{"city": "Porto"}'}}]})
    >>> call.name, call.call_id, call_line(call)
    ('get_weather', 'call_1', '[tool call] get_weather({"city": "Porto"})')
    >>> result_of({"role": "tool", "tool_call_id": "call_1", "content": "18 °C"})
    ToolUse(name='tool', call_id='call_1', arguments='', failed=False)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = [
    "CALL_MARK",
    "ToolUse",
    "arguments_text",
    "call_line",
    "calls_of",
    "is_memory_tool",
    "mark_memory_tools",
    "neutral_call",
    "only_tool_results",
    "result_of",
    "without_memory_tools",
]

#: What starts the line a tool call takes in its message's text.
CALL_MARK = "[tool call]"
#: Longest arguments text kept on a source (characters); longer ones are cut.
MAX_ARGUMENT_CHARS = 2_000
_MAX_NAME_CHARS = 200


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as text: a JSON string as given, anything else as JSON.

    Examples:
        >>> arguments_text({"city": "Porto"}), arguments_text('{"a": 1}'), arguments_text(None)
        ('{"city": "Porto"}', '{"a": 1}', '')
    """
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    try:
        return json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(arguments)


class ToolUse(BaseModel):
    """A tool call (or the call a tool's result answers), as a source keeps it.

    Examples:
        >>> ToolUse(name="get_weather", call_id="c1", arguments='{"city": "Porto"}').text()
        'get_weather({"city": "Porto"})'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The tool's name (``"tool"`` when the message did not say).
    name: str = "tool"
    #: The provider's id of the call, which its result names (``call_1``, ``toolu_...``).
    call_id: str | None = None
    #: The call's arguments as JSON text (cut at `MAX_ARGUMENT_CHARS`).
    arguments: str = ""
    #: On a result: the tool reported an error.
    failed: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = " ".join(value.split())[:_MAX_NAME_CHARS]
        return value or "tool"

    @field_validator("arguments")
    @classmethod
    def _arguments(cls, value: str) -> str:
        return value[:MAX_ARGUMENT_CHARS]

    def text(self) -> str:
        """The call as it reads: ``name(arguments)``."""
        return f"{self.name}({self.arguments})"


def call_line(call: ToolUse) -> str:
    """The line a call takes in its message's text: ``[tool call] name(arguments)``.

    Examples:
        >>> call_line(ToolUse(name="book", arguments='{"day": "Friday"}'))
        '[tool call] book({"day": "Friday"})'
    """
    return f"{CALL_MARK} {call.text()}"


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _use(name: Any, arguments: Any, call_id: Any) -> ToolUse:
    return ToolUse(
        name=_text(name) or "tool",
        call_id=_text(call_id),
        arguments=arguments_text(arguments),
    )


def neutral_call(name: Any, arguments: Any, call_id: Any = None) -> dict[str, Any]:
    """A call in the core's message shape: ``{"id", "name", "arguments"}`` (id when given).

    Examples:
        >>> neutral_call("get_weather", {"city": "Porto"}, "c1")
        {'name': 'get_weather', 'arguments': '{"city": "Porto"}', 'id': 'c1'}
    """
    out: dict[str, Any] = {"name": _text(name) or "tool", "arguments": arguments_text(arguments)}
    if _text(call_id):
        out["id"] = call_id
    return out


def _one_call(call: Any) -> ToolUse | None:
    function = _field(call, "function")
    if function is not None:  # OpenAI: {"id", "type": "function", "function": {...}}
        return _use(_field(function, "name"), _field(function, "arguments"), _field(call, "id"))
    name = _field(call, "name")
    if not isinstance(name, str):
        return None
    arguments = _field(call, "arguments")
    if arguments is None:
        arguments = _field(call, "args")  # LangChain
    return _use(name, arguments, _field(call, "id"))


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, Sequence) and not isinstance(content, (str, bytes, bytearray)):
        return list(content)
    return []


def only_tool_results(content: Any) -> bool:
    """Whether message content is a list of tool results and nothing else: how Anthropic
    sends tool outputs back, as a ``user`` message whose blocks are all ``tool_result``.

    Examples:
        >>> only_tool_results([{"type": "tool_result", "tool_use_id": "t1", "content": "18 °C"}])
        True
        >>> only_tool_results([{"type": "text", "text": "thanks"}]), only_tool_results("hi")
        (False, False)
    """
    blocks = _blocks(content)
    return bool(blocks) and all(_field(b, "type") == "tool_result" for b in blocks)


def calls_of(message: Any) -> list[ToolUse]:
    """The tool calls of a message (dict or object): its ``tool_calls`` (the core's
    shape, OpenAI's, LangChain's) and Anthropic ``tool_use`` content blocks.

    Examples:
        >>> [c.text() for c in calls_of({"role": "assistant", "content": [
        ...     {"type": "text", "text": "Let me look."},
        ...     {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "tea"}}]})]
        ['search({"q": "tea"})']
        >>> calls_of({"tool_calls": [{"name": "book", "args": {"day": 1}, "id": "c2"}]})[0].call_id
        'c2'
    """
    found = [use for call in _field(message, "tool_calls") or () if (use := _one_call(call))]
    for block in _blocks(_field(message, "content")):
        if _field(block, "type") == "tool_use":
            found.append(_use(_field(block, "name"), _field(block, "input"), _field(block, "id")))
    return found


def _failed(obj: Any) -> bool:
    return _field(obj, "is_error") is True or _field(obj, "status") == "error"


def result_of(message: Any) -> ToolUse | None:
    """The call a tool message answers, as far as the message says (its ``tool_call_id``,
    the tool's ``name``, the call's ``arguments`` when an adapter gave them, whether it
    failed); None for a message that is not a tool's output.

    Examples:
        >>> result_of({"role": "user", "content": [{"type": "tool_result",
        ...     "tool_use_id": "toolu_1", "is_error": True, "content": "timeout"}]}).failed
        True
        >>> result_of({"role": "user", "content": "hi"}) is None
        True
    """
    blocks = [b for b in _blocks(_field(message, "content")) if _field(b, "type") == "tool_result"]
    if _field(message, "role") != "tool" and not blocks:
        return None
    source = blocks[0] if blocks and _field(message, "tool_call_id") is None else message
    call_id = _field(source, "tool_call_id") or _field(source, "tool_use_id")
    name = _field(message, "name") or _field(message, "tool_name")
    use = _use(name, _field(message, "arguments"), call_id)
    return use.model_copy(update={"failed": True}) if _failed(source) else use


# -- memtrellis's own memory tools ---------------------------------------------------------
_MEMORY_TOOLS: set[str] = set()
_LOCK = threading.Lock()


def mark_memory_tools(names: Iterable[str]) -> None:
    """Name tools that read or write memtrellis itself (``save_memory``...): captured
    turns leave out their calls and results (`without_memory_tools`). The LangChain and
    LlamaIndex packages call it when they make their memory tools.

    Examples:
        >>> mark_memory_tools(["save_memory"]); is_memory_tool("save_memory")
        True
    """
    with _LOCK:
        _MEMORY_TOOLS.update(n for n in names if isinstance(n, str) and n)


def is_memory_tool(name: object) -> bool:
    """Whether ``name`` is one of memtrellis's own memory tools made in this process.

    Examples:
        >>> mark_memory_tools(["search_memory"])
        >>> is_memory_tool("search_memory"), is_memory_tool("get_weather")
        (True, False)
    """
    return isinstance(name, str) and name in _MEMORY_TOOLS


def without_memory_tools(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without the calls of memtrellis's memory tools and their results.

    An assistant message keeps its other calls (and its text); one left with neither is
    dropped, as is a tool message answering a memory tool (by call id, else by name).

    Examples:
        >>> mark_memory_tools(["save_memory"])
        >>> chat = [{"role": "user", "content": "I'm vegetarian"},
        ...         {"role": "assistant", "content": "", "tool_calls": [
        ...             {"id": "c1", "name": "save_memory", "arguments": {"content": "x"}}]},
        ...         {"role": "tool", "tool_call_id": "c1", "content": "Saved memory m1: x"},
        ...         {"role": "assistant", "content": "Noted."}]
        >>> [m["content"] for m in without_memory_tools(chat)]
        ["I'm vegetarian", 'Noted.']
    """
    if not _MEMORY_TOOLS:
        return [dict(m) for m in messages]
    dropped: set[str] = set()
    out: list[dict[str, Any]] = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            kept = [c for c in calls if not is_memory_tool((_one_call(c) or ToolUse()).name)]
            dropped.update(
                u.call_id for c in calls if (u := _one_call(c)) and u.call_id and c not in kept
            )
            if len(kept) != len(calls):
                message = {**message, "tool_calls": kept}
                if not kept and not _has_text(message):
                    continue
        result = result_of(message)
        if result is not None and (
            (result.call_id is not None and result.call_id in dropped)
            or (result.call_id is None and is_memory_tool(result.name))
        ):
            continue
        out.append(dict(message))
    return out


def _has_text(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    texts = (_field(part, "text") for part in _blocks(content))
    return bool(message.get("attachments")) or any(isinstance(t, str) and t.strip() for t in texts)
