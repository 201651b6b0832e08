"""What one model call adds to a conversation, and what recall searches with.

Every adapter (LangChain, LlamaIndex, SDK clients) sends a model the whole
conversation on each call, with memory context placed in it. Capture must store only
what is new, as the people in the conversation said it: the messages after the last
assistant message, without instructions (system/developer messages, where memory
context is placed) and without memory-context blocks. Written once here, on plain
``{"role": ..., "content": ...}`` dicts with text content (a list of multimodal parts
gives its text parts as the content and its image, file and audio parts as the
message's ``attachments``: see `memtrellis.attachments`).

A tool loop spans calls: the call that makes the tool calls is captured with them, and
the next call sends the tools' results. Its new messages are those results (and the
reply); the messages of the exchange before them (the question, the calls) come with
them marked ``"context": true``: sources of the answer, never stored again
(`memtrellis.tool_calls`). Calls of memtrellis's own memory tools and their results are
left out.

Examples:
    >>> history = [
    ...     {"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "Hi"},
    ...     {"role": "assistant", "content": "Hello!"},
    ...     {"role": "user", "content": "I moved to Porto"},
    ... ]
    >>> new_turn(history, {"role": "assistant", "content": "Nice!"})
    [{'role': 'user', 'content': 'I moved to Porto'}, {'role': 'assistant', 'content': 'Nice!'}]
    >>> last_user_text(history)
    'I moved to Porto'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memtrellis.attachments import content_text, is_attachment_part
from memtrellis.context.place import INSTRUCTION_ROLES, check_messages, strip_content
from memtrellis.errors import InvalidInputError
from memtrellis.tool_calls import calls_of, neutral_call, without_memory_tools

__all__ = [
    "HINT_CHARS",
    "conversation_hint",
    "earlier_turns",
    "exchange_start",
    "last_user_text",
    "new_turn",
]

_KEPT = ("role", "content", "id", "name", "tool_call_id", "status", "is_error")


def exchange_start(messages: Sequence[Mapping[str, Any]], start: int) -> int:
    """Where the tool exchange that ``messages[start:]`` continues begins: at the last
    user message before ``start`` when the new messages hold a tool's result (or follow
    one), else ``start``.

    Examples:
        >>> chat = [{"role": "user", "content": "Weather in Porto?"},
        ...         {"role": "assistant", "content": "", "tool_calls": [{"name": "w"}]},
        ...         {"role": "tool", "content": "18 °C"}]
        >>> exchange_start(chat, 2), exchange_start(chat[:2], 2)
        (0, 2)
    """
    tail = messages[start:]
    before = messages[start - 1] if 0 < start <= len(messages) else None
    continues = any(m.get("role") == "tool" for m in tail) or (
        before is not None and before.get("role") == "tool"
    )
    if not continues:
        return start
    for index in range(start - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return 0


def new_turn(
    messages: Sequence[Mapping[str, Any]],
    reply: Mapping[str, Any] | None = None,
    *,
    whole: bool = False,
) -> list[dict[str, Any]]:
    """The messages a call added (after the last assistant message) and the reply.

    Instruction messages, memory-context blocks and messages left without text (or
    tool calls) are dropped; each kept message has ``role``, text ``content`` and its
    ``id``/``name``, ``tool_calls`` (as ``{"id", "name", "arguments"}``) and
    ``tool_call_id`` when it had them. When the new messages hold a tool's result, the
    exchange's earlier messages come first with ``"context": true`` (`exchange_start`);
    memtrellis's own memory tools are left out
    (`memtrellis.tool_calls.without_memory_tools`). ``whole=True``: every message is new
    (a run captured once at its end, its tool calls and results included).

    Examples:
        >>> sent = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
        >>> new_turn(sent, {"role": "assistant", "content": "hello"})
        [{'role': 'user', 'content': 'hi'}, {'role': 'assistant', 'content': 'hello'}]
    """
    check_messages(messages, "new_turn()")
    if reply is not None:
        check_messages([reply], "new_turn()")
    start = 0
    for index, message in enumerate(messages):
        if message.get("role") == "assistant" and not whole:
            start = index + 1
    begin = exchange_start(messages, start)
    chosen = [
        {**m, "context": True} if index < start else m
        for index, m in enumerate(messages[begin:], begin)
        if m.get("role") not in INSTRUCTION_ROLES
    ]
    if reply is not None:
        chosen.append(reply)
    turn: list[dict[str, Any]] = []
    for message in without_memory_tools([_with_neutral_calls(m) for m in chosen]):
        content = strip_content(message.get("content"))
        attached = list(message.get("attachments") or ())
        if isinstance(content, list):  # multimodal parts: the text and the attachments
            attached = [*(p for p in content if is_attachment_part(p)), *attached]
            content = content_text(content)
        if content is None and message.get("tool_calls"):
            content = ""
        if not isinstance(content, str) or not (
            content.strip() or attached or message.get("tool_calls")
        ):
            continue
        kept = {key: message[key] for key in _KEPT if message.get(key)}
        extra = {k: message[k] for k in ("tool_calls", "context") if message.get(k)}
        turn.append(
            {**kept, "content": content, **({"attachments": attached} if attached else {}), **extra}
        )
    return turn if any(not m.get("context") for m in turn) else []


def _with_neutral_calls(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` with its tool calls (any SDK's shape) as ``{"id", "name", "arguments"}``."""
    calls = calls_of(message)
    if not calls:
        return {k: v for k, v in message.items() if k != "tool_calls"}
    neutral = [neutral_call(c.name, c.arguments, c.call_id) for c in calls]
    return {**message, "tool_calls": neutral}


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Text of the last user message without memory context; None when there is none.

    Examples:
        >>> chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        >>> last_user_text([*chat, {"role": "user", "content": "bye"}])
        'bye'
    """
    for message in reversed(check_messages(messages, "last_user_text()")):
        if message.get("role") == "user":
            text = strip_content(message.get("content"))
            return text if isinstance(text, str) and text.strip() else None
    return None


#: Characters of a conversation hint when the caller does not say.
HINT_CHARS = 600


def earlier_turns(messages: Sequence[Mapping[str, Any]], limit: int = 4) -> list[dict[str, str]]:
    """The latest ``limit`` conversation messages before the last user message.

    What an adapter knows of the conversation around the question: user and assistant
    messages with text, memory-context blocks stripped, instructions left out, oldest
    first; each a ``{"role": ..., "content": ...}`` dict.

    Examples:
        >>> chat = [{"role": "system", "content": "Be brief."},
        ...         {"role": "user", "content": "We plan the launch."},
        ...         {"role": "assistant", "content": "Which date?"},
        ...         {"role": "user", "content": "What is left to do?"}]
        >>> [m["content"] for m in earlier_turns(chat)]
        ['We plan the launch.', 'Which date?']
        >>> earlier_turns(chat, limit=0)
        []
    """
    checked = check_messages(messages, "earlier_turns()")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError("limit must be a non-negative integer")
    end = len(checked)
    for index in range(len(checked) - 1, -1, -1):
        if checked[index].get("role") == "user":
            end = index
            break
    kept: list[dict[str, str]] = []
    for message in checked[:end]:
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        content = strip_content(message.get("content"))
        if isinstance(content, str) and content.strip():
            kept.append({"role": str(role), "content": content})
    return kept[-limit:] if limit else []


def conversation_hint(
    messages: Sequence[Mapping[str, Any]], *, turns: int = 4, chars: int = HINT_CHARS
) -> str | None:
    """A short summary of the conversation before the question, to steer recall.

    The latest ``turns`` earlier messages (`earlier_turns`), the user's first, joined
    and cut to ``chars`` characters from the end (the newest words kept); ``None`` when
    the question opens the conversation. No model is called: it is the conversation's
    own words, which is what ``Memory.recall(context_hint=...)`` weighs beside the
    question.

    Examples:
        >>> chat = [{"role": "user", "content": "We plan the Lisbon launch."},
        ...         {"role": "assistant", "content": "Sure."},
        ...         {"role": "user", "content": "What is left?"}]
        >>> conversation_hint(chat)
        'We plan the Lisbon launch. Sure.'
        >>> print(conversation_hint(chat[-1:]))
        None
    """
    if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
        raise InvalidInputError("chars must be a positive integer")
    earlier = earlier_turns(messages, turns)
    # The user's words name what the conversation is about; replies mostly echo them.
    ordered = [m for m in earlier if m["role"] == "user"] + [
        m for m in earlier if m["role"] != "user"
    ]
    text = " ".join(" ".join(m["content"].split()) for m in ordered).strip()
    if not text:
        return None
    return text if len(text) <= chars else text[len(text) - chars :].lstrip()
