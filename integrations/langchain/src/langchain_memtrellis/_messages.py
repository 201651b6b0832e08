"""LangChain messages to the core's message dicts and back, and memory context in them.

Placement and stripping reuse [`memtrellis.context`][memtrellis.context] on light dict views of the
messages, so the rules (append to the leading system message or insert one; take
blocks back out) are written once for every adapter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue
from memtrellis.attachments import is_attachment_part
from memtrellis.context import MemoryContext, place_in_messages, strip_content, turn
from memtrellis.tool_calls import neutral_call
from pydantic import BaseModel

__all__ = [
    "INPUT_KEYS",
    "OUTPUT_KEYS",
    "answer_of",
    "final_answer",
    "history_dicts",
    "is_synthetic",
    "last_user_text",
    "new_turn",
    "place",
    "role_of",
    "strip",
    "to_dict",
    "tool_steps",
    "user_messages",
]

#: Keys of a chain's input dict that hold what the user said, tried in this order.
INPUT_KEYS = ("input", "question", "query", "user_input", "human_input", "message", "text")
#: Keys of a chain's output dict that hold its answer, tried in this order.
OUTPUT_KEYS = ("output", "answer", "result", "response", "text", "content")

Position = Literal["append", "insert"]

_ROLES: tuple[tuple[type[BaseMessage], str], ...] = (
    (HumanMessage, "user"),
    (AIMessage, "assistant"),
    (SystemMessage, "system"),
    (ToolMessage, "tool"),
    (FunctionMessage, "tool"),
)


def role_of(message: BaseMessage) -> str:
    """The core's role for a LangChain message (human -> ``user``, ai -> ``assistant``...).

    Chunks are subclasses of their messages, so they map the same way.
    """
    if isinstance(message, ChatMessage):
        return message.role
    for kind, role in _ROLES:
        if isinstance(message, kind):
            return role
    return message.type


#: ``additional_kwargs["lc_source"]`` of messages LangChain writes into a conversation
#: itself (``SummarizationMiddleware``'s summary): not what anyone said.
_SYNTHETIC_SOURCES = frozenset({"summarization"})

_THOUGHT = re.compile(r"\A\s*Thought\s*:", re.IGNORECASE)
_ANSWER = re.compile(r"^[ \t]*(?:Final[ \t]+)?Answer[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)
_FINAL_ANSWER = re.compile(r"^[ \t]*Final[ \t]+Answer[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)
_ACTION = re.compile(r"^[ \t]*Action(?:[ \t]+Input)?[ \t]*:", re.IGNORECASE | re.MULTILINE)


def is_synthetic(message: BaseMessage) -> bool:
    """Whether LangChain wrote ``message`` into the conversation itself.

    ``SummarizationMiddleware`` replaces old messages with a human message holding its
    summary (``additional_kwargs={"lc_source": "summarization"}``); no one said it.

    Examples:
        >>> summary = {"lc_source": "summarization"}
        >>> is_synthetic(HumanMessage("Here is a summary", additional_kwargs=summary))
        True
        >>> is_synthetic(HumanMessage("I moved to Porto"))
        False
    """
    return message.additional_kwargs.get("lc_source") in _SYNTHETIC_SOURCES


def final_answer(text: str) -> str:
    """The answer in a ReAct-formatted reply; ``""`` for an intermediate step.

    A reply that opens with ``Thought:`` (or holds a ``Final Answer:`` line) is the
    model's scratchpad: what follows its last ``Final Answer:``/``Answer:`` line is the
    answer; without one it is a step of the loop (``Action:``) and has no answer yet.
    Any other text is returned as it is.

    Examples:
        >>> final_answer("Thought: I know this.\\nFinal Answer: Porto is in Portugal.")
        'Porto is in Portugal.'
        >>> final_answer("Thought: I should look it up.\\nAction: search\\nAction Input: Porto")
        ''
        >>> final_answer("The answer is 42.")
        'The answer is 42.'
    """
    final = list(_FINAL_ANSWER.finditer(text))
    if not final and not _THOUGHT.match(text):
        return text
    marks = final or list(_ANSWER.finditer(text))
    if marks:
        return text[marks[-1].end() :].strip()
    return "" if _ACTION.search(text) else text


def to_dict(message: BaseMessage) -> dict[str, Any]:
    """A message as ``{"role", "content", "id"?, "name"?, "attachments"?}`` with its text
    content and its image, file and audio blocks (`memtrellis.attachments`); an AI
    message's ``tool_calls`` and a tool message's ``tool_call_id`` (and ``status``
    ``"error"``) in the core's shape (`memtrellis.tool_calls`).

    Examples:
        >>> call = {"name": "get_weather", "args": {"city": "Porto"}, "id": "c1"}
        >>> to_dict(AIMessage("", tool_calls=[call]))["tool_calls"]
        [{'name': 'get_weather', 'arguments': '{"city": "Porto"}', 'id': 'c1'}]
        >>> to_dict(ToolMessage("18 °C", tool_call_id="c1", name="get_weather"))
        {'role': 'tool', 'content': '18 °C', 'name': 'get_weather', 'tool_call_id': 'c1'}
    """
    out: dict[str, Any] = {"role": role_of(message), "content": message.text}
    if isinstance(message, AIMessage) and message.tool_calls:
        out["tool_calls"] = [
            neutral_call(c["name"], c["args"], c.get("id")) for c in message.tool_calls
        ]
    if isinstance(message.content, list):
        attached = [part for part in message.content if is_attachment_part(part)]
        if attached:
            out["attachments"] = attached
    if message.id:
        out["id"] = message.id
    if message.name:
        out["name"] = message.name
    if isinstance(message, ToolMessage):
        out["tool_call_id"] = message.tool_call_id
        if message.status == "error":
            out["status"] = "error"
    return out


_TUPLE_ROLES = {"human": "user", "ai": "assistant"}


def history_dicts(history: Sequence[Any]) -> list[dict[str, Any]]:
    """Chat history given as LangChain messages, message dicts or ``(role, text)`` pairs,
    as message dicts (LangChain's own summaries left out)."""
    out: list[dict[str, Any]] = []
    for message in history:
        if isinstance(message, BaseMessage):
            if not is_synthetic(message):
                out.append(to_dict(message))
        elif isinstance(message, Mapping) and isinstance(message.get("content"), str):
            out.append({"role": str(message.get("role", "user")), "content": message["content"]})
        elif isinstance(message, tuple) and len(message) == 2 and isinstance(message[1], str):
            role = str(message[0])
            out.append({"role": _TUPLE_ROLES.get(role, role), "content": message[1]})
    return out


def last_user_text(messages: Sequence[BaseMessage]) -> str | None:
    """Text of the last user message (what recall searches with), None if there is none."""
    return turn.last_user_text([to_dict(m) for m in messages if not is_synthetic(m)])


def new_turn(
    messages: Sequence[BaseMessage], reply: BaseMessage | None, *, whole: bool = False
) -> list[dict[str, Any]]:
    """The messages this call added, and the reply, as dicts for ``Memory.capture``.

    A chat model is sent the whole conversation every call; only what follows the last
    assistant message is new. System messages (instructions, placed memory context) and
    messages without text or tool calls are left out
    ([`new_turn`][memtrellis.context.new_turn]), and so are the messages LangChain wrote
    itself (`is_synthetic`: a summary). An AI message's tool calls and a ``ToolMessage``
    are kept as the core reads them: the calls are sources of the answer made from the
    tools' results, and a call after a tool's result brings the exchange before it as
    context. Of a ReAct-formatted reply only the final answer is kept, and an
    intermediate step (``Thought: ... Action: ...``) is no answer (`final_answer`).
    ``whole=True``: every message is new (a run's turn, captured at its end).
    """
    answer = None
    if reply is not None:
        answer = to_dict(reply)
        answer["content"] = final_answer(answer["content"])
    kept = [to_dict(m) for m in messages if not is_synthetic(m)]
    return turn.new_turn(kept, answer, whole=whole)


def place(
    messages: Sequence[BaseMessage], context: MemoryContext, position: Position = "append"
) -> list[BaseMessage]:
    """``messages`` with the block placed as
    [`place_in_messages`][memtrellis.context.place_in_messages] does."""
    out = list(messages)
    if context.empty:
        return out
    views = [
        {"role": "system" if isinstance(m, SystemMessage) else "other", "content": m.content}
        for m in messages
    ]
    placed = place_in_messages(views, context, position=position)
    if placed.index is None:
        return out
    content = placed.messages[placed.index]["content"]
    if placed.inserted:
        out.insert(placed.index, SystemMessage(content=content))
    else:
        out[placed.index] = out[placed.index].model_copy(update={"content": content})
    return out


def strip(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` without memory-context blocks; a message holding only a block is dropped."""
    out: list[BaseMessage] = []
    for message in messages:
        content = strip_content(message.content)
        if content == message.content:
            out.append(message)
        elif content:
            out.append(message.model_copy(update={"content": content}))
    return out


def _as_messages(value: Any) -> list[BaseMessage] | None:
    """``value`` as messages when it is a message, a prompt value or a list of message-likes."""
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, Mapping) and "role" in value and "content" in value:
        value = [value]  # one message as a dict
    if isinstance(value, Sequence) and not isinstance(value, str) and value:
        try:
            return convert_to_messages(value)
        except (ValueError, TypeError, NotImplementedError):
            return None
    return None


def _said(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The user messages after the last assistant message (what this run adds)."""
    start = 0
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage):
            start = index + 1
    return [
        m
        for m in messages[start:]
        if role_of(m) == "user" and not is_synthetic(m) and m.text.strip()
    ]


def user_messages(value: Any, key: str | None = None) -> list[BaseMessage] | None:
    """What the user said, read from a chain's input; None when it cannot tell.

    A string is the user's message; messages (a list, a prompt value, LangGraph's
    ``{"messages": [...]}``) give their user messages after the last assistant message;
    a dict gives the value under ``key``, else under the first of `INPUT_KEYS` it has,
    else its only text value.

    Examples:
        >>> [m.content for m in user_messages({"question": "Where is Porto?", "lang": "en"})]
        ['Where is Porto?']
        >>> [m.content for m in user_messages({"messages": [("user", "hi")]})]
        ['hi']
        >>> [m.content for m in user_messages({"role": "user", "content": "hello"})]
        ['hello']
        >>> user_messages({"a": "x", "b": "y"}) is None
        True
    """
    if isinstance(value, str):
        return [HumanMessage(content=value)] if value.strip() else []
    messages = _as_messages(value)
    if messages is not None:
        return _said(messages)
    if not isinstance(value, Mapping):
        return None
    if key is not None:
        return user_messages(value[key]) if key in value else None
    for name in ("messages", *INPUT_KEYS):
        if name in value:
            return user_messages(value[name])
    texts = [v for v in value.values() if isinstance(v, str)]
    return user_messages(texts[0]) if len(texts) == 1 else None


def tool_steps(value: Any) -> list[BaseMessage]:
    """The tool calls and results of an agent's run, read from its output: the AI messages
    that call tools and the tool messages after the last user message, before the last
    AI message (the answer, or a structured answer's own call).

    Examples:
        >>> call = {"name": "get_weather", "args": {"city": "Porto"}, "id": "c1"}
        >>> out = {"messages": [HumanMessage("Weather?"), AIMessage("", tool_calls=[call]),
        ...                     ToolMessage("18 °C", tool_call_id="c1"), AIMessage("18 °C.")]}
        >>> [m.type for m in tool_steps(out)]
        ['ai', 'tool']
    """
    if isinstance(value, Mapping) and "messages" in value:
        value = value["messages"]
    messages = _as_messages(value) if not isinstance(value, (str, Mapping)) else None
    if not messages:
        return []
    first = max((i + 1 for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
    last = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=0)
    return [
        m
        for m in messages[first:last]
        if (isinstance(m, AIMessage) and m.tool_calls) or isinstance(m, ToolMessage)
    ]


def answer_of(value: Any) -> AIMessage | None:
    """A chain's answer, read from its output; None when it cannot tell.

    A string or an AI message is the answer; messages (or LangGraph's
    ``{"messages": [...]}``) give their last AI message with text; a structured output
    (a pydantic object, also under ``parsed`` with ``include_raw=True``) is its JSON; a
    dict gives the value under the first of `OUTPUT_KEYS` it has. Of a ReAct-formatted
    text only the final answer is kept (`final_answer`).

    Examples:
        >>> answer_of({"output": "Thought: done.\\nFinal Answer: Porto."}).content
        'Porto.'
        >>> answer_of({"messages": [("user", "hi"), ("ai", "Hello!")]}).content
        'Hello!'
        >>> answer_of({"docs": []}) is None
        True
    """
    if isinstance(value, str):
        text = final_answer(value)
        return AIMessage(content=text) if text.strip() else None
    if isinstance(value, AIMessage):
        if value.tool_calls or not value.text.strip():
            return None
        text = final_answer(value.text)
        if not text.strip():
            return None
        return value if text == value.text else AIMessage(content=text, id=value.id)
    messages = _as_messages(value)
    if messages is not None:
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return answer_of(message)
        return None
    if isinstance(value, BaseModel):  # structured output: the object as JSON
        return AIMessage(content=value.model_dump_json())
    if isinstance(value, Mapping):
        if "parsed" in value and "raw" in value:  # with_structured_output(include_raw=True)
            parsed = value["parsed"]
            return answer_of(parsed if parsed is not None else value["raw"])
        for name in ("messages", *OUTPUT_KEYS):
            if name in value:
                return answer_of(value[name])
    return None
