"""``MemoryChatMessageHistory``: a session's messages kept as memories, for
``RunnableWithMessageHistory``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from memtrellis import Memory, MemoryItem, MemoryType, SourceKind, SourceRef

from langchain_memtrellis._defaults import default_memory
from langchain_memtrellis._messages import role_of

__all__ = ["HISTORY_TAG", "MESSAGE_KEY", "MemoryChatMessageHistory"]

log = logging.getLogger("langchain_memtrellis")

#: Metadata key of a stored message: the whole LangChain message (``message_to_dict``).
MESSAGE_KEY = "langchain_message"

#: Tag of the memories stored as they are (system and tool messages, see `add_messages`).
HISTORY_TAG = "langchain:history"

_PAGE = 500
_CORE_ROLES = frozenset({"user", "assistant", "system", "tool"})
_EXTRACTED_ROLES = frozenset({"user", "assistant"})


def _text(message: BaseMessage) -> str:
    """What a message's memory says: its text, else what it holds (a tool call, an image)."""
    text = message.text.strip()
    if text:
        return text
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = (
            f"{call['name']}({json.dumps(call['args'], ensure_ascii=False, default=str)})"
            for call in message.tool_calls
        )
        return "Tool call: " + "; ".join(calls)
    if isinstance(message.content, list):
        kinds = [
            str(part.get("type", "part")) if isinstance(part, dict) else "part"
            for part in message.content
        ]
        if kinds:
            return "[" + ", ".join(kinds) + "]"
    return "[empty message]"


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON (what a memory's metadata holds); other objects as text."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _stored(message: BaseMessage) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the message dict ``Memory.add`` takes, the metadata that keeps the whole message)."""
    role = role_of(message)
    data: dict[str, Any] = {"role": role if role in _CORE_ROLES else "user"}
    data["content"] = _text(message)
    if message.id:
        data["id"] = message.id
    speaker = message.name or (None if role in _CORE_ROLES else role)
    if speaker:
        data["name"] = speaker
    return data, {MESSAGE_KEY: _jsonable(message_to_dict(message))}


def _legacy(item: MemoryItem) -> BaseMessage | None:
    """A chat message stored without its LangChain form (by an earlier version)."""
    if len(item.sources) != 1 or item.sources[0].kind is not SourceKind.CHAT:
        return None
    source = item.sources[0]
    role, name = source.role, source.speaker
    if role == "user":
        return HumanMessage(content=item.text, id=source.message_id, name=name)
    if role == "assistant":
        return AIMessage(content=item.text, id=source.message_id, name=name)
    if role == "system":
        return SystemMessage(content=item.text, id=source.message_id)
    if role == "tool":
        return ToolMessage(content=item.text, tool_call_id=source.message_id or "", id=None)
    return ChatMessage(content=item.text, role=role or "unknown", id=source.message_id)


def _message(item: MemoryItem) -> BaseMessage | None:
    """A stored message back as the LangChain message it was; None for other memories."""
    kept = item.metadata.get(MESSAGE_KEY)
    if isinstance(kept, dict):
        try:
            return messages_from_dict([kept])[0]
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("memory %s holds a message LangChain cannot read: %r", item.id, exc)
    return _legacy(item)


class MemoryChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session of one entity, stored as fast-mode memories.

    ``add_messages`` stores each message as a memory (``Memory.add(..., mode="fast",
    session_id=...)``) with its id, role and name as provenance, so the same messages
    also serve long-term recall. ``messages`` lists them in the order they were stored,
    as they were: every message type with its tool calls, ``tool_call_id``, multimodal
    content, name, id and extra fields (the whole message is kept in the memory's
    metadata under `MESSAGE_KEY`). A message without text is stored with a description
    as its text (``Tool call: lookup({"q": "Porto"})``, ``[image]``), which recall can
    find. ``clear`` forgets the session's memories.

    Used with ``RunnableWithMessageHistory``, this history is what stores the
    conversation: a [`ChatMemoryWrapper`][langchain_memtrellis.ChatMemoryWrapper] or a
    [`MemoryCallbackHandler`][langchain_memtrellis.MemoryCallbackHandler] on the same
    memory inside it captures nothing, so no message is stored twice.

    Args:
        session_id: The session.
        memory: The store; default the shared ``Memory()``.
        entity_id: Whose session (default: the memory's default entity).
        process_id: Which app or agent.

    Examples:
        >>> import tempfile
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import MemoryChatMessageHistory
        >>> memory = Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder())
        >>> history = MemoryChatMessageHistory("s1", memory)
        >>> history.add_messages([HumanMessage("Hi, I'm Alice"), AIMessage("Hello Alice!")])
        >>> [(m.type, m.content) for m in history.messages]
        [('human', "Hi, I'm Alice"), ('ai', 'Hello Alice!')]
        >>> history.clear(); history.messages
        []
        >>> memory.close()
    """

    def __init__(
        self,
        session_id: str,
        memory: Memory | None = None,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.memory = memory if memory is not None else default_memory()
        self.entity_id = entity_id
        self.process_id = process_id

    def _items(self) -> list[MemoryItem]:
        items: list[MemoryItem] = []
        while True:
            page = self.memory.list(
                entity_id=self.entity_id,
                process_id=self.process_id,
                session_id=self.session_id,
                limit=_PAGE,
                offset=len(items),
            )
            items.extend(page)
            if len(page) < _PAGE:
                return items

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, oldest first."""
        return [m for m in map(_message, self._items()) if m is not None]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store the messages, in order, one memory each.

        User and assistant messages go through ``Memory.add(..., mode="fast")``; system
        and tool messages, which fast mode does not extract, are stored as they are
        (``Memory.store(..., lifecycle=False)``, tagged `HISTORY_TAG`).
        """
        for message in messages:
            data, metadata = _stored(message)
            if data["role"] in _EXTRACTED_ROLES and self.memory.add(
                data,
                mode="fast",
                entity_id=self.entity_id,
                process_id=self.process_id,
                session_id=self.session_id,
                metadata=metadata,
            ):
                continue
            self.memory.store(self._item(data, metadata), lifecycle=False)

    def _item(self, data: dict[str, Any], metadata: dict[str, Any]) -> MemoryItem:
        """A message the extraction would skip, as a memory of its own."""
        with self.memory.scope(
            entity_id=self.entity_id, process_id=self.process_id, session_id=self.session_id
        ) as scope:
            pass
        source = SourceRef(
            kind=SourceKind.CHAT,
            message_id=data.get("id"),
            role=data["role"],
            speaker=data.get("name"),
            content=data["content"],
        )
        return MemoryItem(
            text=data["content"],
            memory_type=MemoryType.EPISODE,
            tags=[HISTORY_TAG],
            sources=[source],
            scope=scope,
            metadata=metadata,
        )

    def clear(self) -> None:
        """Forget every memory of this session."""
        for item in self._items():
            self.memory.forget(item.id, entity_id=item.scope.entity_id)
