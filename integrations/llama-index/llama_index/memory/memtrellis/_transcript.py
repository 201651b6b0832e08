"""The conversation of a LlamaIndex session, and which of its messages are already captured.

LlamaIndex's ``Memory`` gives a memory block the session's active chat history at every
read, and the messages it flushes out of that history at every flush. `Transcripts`
numbers the conversation messages of each session across both (a flushed message keeps
its place), so that a block captures every message exactly once, whichever way it saw it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from memtrellis.context import exchange_start
from memtrellis.tool_calls import without_memory_tools

from llama_index.memory.memtrellis._messages import (
    attachments,
    react_answer,
    text_of,
    tool_calls_of,
    tool_message,
)

__all__ = ["Transcripts", "conversation", "to_capture", "with_exchange"]

#: Sessions whose counters are kept; the least recently seen is forgotten beyond it.
MAX_SESSIONS = 4096


def conversation(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """What the user and the assistant said to each other, and the tools the assistant
    used, as memtrellis message dicts.

    Kept: user messages, assistant replies, assistant messages that call tools (with
    ``tool_calls``) and tool results (``tool`` messages). Left out: system messages,
    memory context, and the copy of the user's question that LlamaIndex agents append
    when they read memory again after tool calls (a user message repeating the previous
    one with no reply in between). A ``ReActAgent``'s reasoning is reduced to its final
    answer.

    Examples:
        >>> conversation([  # doctest: +NORMALIZE_WHITESPACE
        ...     ChatMessage(role="system", content="Be brief."),
        ...     ChatMessage(role="user", content="Where do I live?"),
        ...     ChatMessage(role="user", content="Where do I live?"),
        ...     ChatMessage(role="assistant", content="Thought: known.\\nAnswer: Porto."),
        ... ])
        [{'role': 'user', 'content': 'Where do I live?'},
         {'role': 'assistant', 'content': 'Porto.'}]
    """
    out: list[dict[str, Any]] = []
    asked: dict[str, Any] | None = None  # the question not answered yet
    for message in messages:
        if message.role == MessageRole.USER:
            text = text_of(message)
            attached = attachments(message)
            if not text and not attached:
                continue
            said: dict[str, Any] = {"role": "user", "content": text}
            if attached:
                said["attachments"] = attached
            if said == asked:
                continue  # the question re-sent with the history, not said again
            out.append(said)
            asked = said
        elif message.role == MessageRole.TOOL:
            out.append(tool_message(message))
        elif message.role == MessageRole.ASSISTANT:
            calls = tool_calls_of(message)
            text = text_of(message)
            answer = react_answer(text)
            text = text if answer is None else answer
            if calls:
                out.append({"role": "assistant", "content": text, "tool_calls": calls})
            elif text:
                out.append({"role": "assistant", "content": text})
                asked = None
    return out


def to_capture(turn: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What of ``turn`` is captured: without memtrellis's own memory tools
    (`memtrellis.tool_calls.without_memory_tools`), and nothing when only context is left."""
    kept = without_memory_tools(turn)
    return kept if any(not m.get("context") for m in kept) else []


def with_exchange(seen: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """``seen[start:]`` (the messages not captured yet), after the messages of the tool
    exchange they continue marked as context (`memtrellis.context.exchange_start`)."""
    begin = exchange_start(seen, start)
    return [*({**m, "context": True} for m in seen[begin:start]), *seen[start:]]


@dataclass
class _Session:
    flushed: int = 0  # conversation messages flushed out of the active history
    captured: int = 0  # conversation messages captured, counted from the session's start
    read_yet: bool = False


class Transcripts:
    """Per session: how many conversation messages were flushed and how many captured.

    The first time a session's history is read (a new process resuming a stored session,
    or a history given with ``chat_history=``), the messages up to its latest reply are
    taken as captured already, and so are messages flushed before that first read: only
    what is said from then on is new.

    Examples:
        >>> t = Transcripts()
        >>> t.read("s", [ChatMessage(role="user", content="Hi, I am Ann")])
        [{'role': 'user', 'content': 'Hi, I am Ann'}]
        >>> t.read("s", [ChatMessage(role="user", content="Hi, I am Ann"),
        ...              ChatMessage(role="assistant", content="Hello Ann")])
        [{'role': 'assistant', 'content': 'Hello Ann'}]
        >>> t.flushed("s", [ChatMessage(role="user", content="Hi, I am Ann")])
        []
    """

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()

    def _session(self, key: str) -> _Session:
        session = self._sessions.setdefault(key, _Session())
        self._sessions.move_to_end(key)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def read(self, key: str, history: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        """The messages of the active ``history`` not captured yet (now marked captured)."""
        seen = conversation(history)
        with self._lock:
            session = self._session(key)
            if not session.read_yet:
                session.read_yet = True
                replied = [i for i, m in enumerate(seen) if m["role"] == "assistant"]
                if replied:
                    session.captured = max(session.captured, session.flushed + replied[-1] + 1)
            start = max(0, session.captured - session.flushed)
            session.captured = max(session.captured, session.flushed + len(seen))
        return with_exchange(seen, start) if start < len(seen) else []

    def flushed(self, key: str, messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        """The flushed ``messages`` not captured yet (now marked captured)."""
        seen = conversation(messages)
        with self._lock:
            session = self._session(key)
            start = session.flushed
            session.flushed += len(seen)
            if not session.read_yet:
                session.captured = session.flushed
                return []
            new = seen[max(0, session.captured - start) :]
            session.captured = max(session.captured, session.flushed)
        return new
