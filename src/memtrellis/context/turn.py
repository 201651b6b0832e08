"""What one model call adds to a conversation, and what recall searches with.

Every adapter (LangChain, LlamaIndex, SDK clients) sends a model the whole
conversation on each call, with memory context placed in it. Capture must store only
what is new, as the people in the conversation said it: the messages after the last
assistant message, without instructions (system/developer messages, where memory
context is placed) and without memory-context blocks. Written once here, on plain
``{"role": ..., "content": ...}`` dicts with text content (a list of multimodal parts
gives its text parts as the content and its image, file and audio parts as the
message's ``attachments``: see `memtrellis.attachments`).

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

__all__ = ["HINT_CHARS", "conversation_hint", "earlier_turns", "last_user_text", "new_turn"]

_KEPT = ("role", "content", "id", "name")


def new_turn(
    messages: Sequence[Mapping[str, Any]], reply: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The messages a call added (after the last assistant message) and the reply.

    Instruction messages, memory-context blocks and messages left without text are
    dropped; each kept message has ``role``, text ``content`` and its ``id``/``name``
    when it had one.

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
        if message.get("role") == "assistant":
            start = index + 1
    chosen = [m for m in messages[start:] if m.get("role") not in INSTRUCTION_ROLES]
    if reply is not None:
        chosen.append(reply)
    turn: list[dict[str, Any]] = []
    for message in chosen:
        content = strip_content(message.get("content"))
        attached = list(message.get("attachments") or ())
        if isinstance(content, list):  # multimodal parts: the text and the attachments
            attached = [*(p for p in content if is_attachment_part(p)), *attached]
            content = content_text(content)
        if not isinstance(content, str) or not (content.strip() or attached):
            continue
        kept = {key: message[key] for key in _KEPT if message.get(key)}
        turn.append({**kept, "content": content, **({"attachments": attached} if attached else {})})
    return turn


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
