"""``MemoryChatMessageHistory``: a session's messages kept as memories, for
``RunnableWithMessageHistory``.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from memtrellis import Memory, MemoryItem, SourceKind

from langchain_memtrellis._defaults import default_memory
from langchain_memtrellis._messages import to_dict

__all__ = ["MemoryChatMessageHistory"]

_PAGE = 500


def _message(item: MemoryItem) -> BaseMessage | None:
    """A stored chat message back as a LangChain message; None for other memories."""
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


class MemoryChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session of one entity, stored as fast-mode memories.

    ``add_messages`` stores each message as a memory (``Memory.add(..., mode="fast",
    session_id=...)``) with its id, role and name as provenance, so the same messages
    also serve long-term recall. ``messages`` lists them in the order they were stored;
    ``clear`` forgets the session's memories. Messages without text are skipped.

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
        """Store the messages (fast mode: one memory per message)."""
        data = [d for d in map(to_dict, messages) if str(d["content"]).strip()]
        if data:
            self.memory.add(
                data,
                mode="fast",
                entity_id=self.entity_id,
                process_id=self.process_id,
                session_id=self.session_id,
            )

    def clear(self) -> None:
        """Forget every memory of this session."""
        for item in self._items():
            self.memory.forget(item.id, entity_id=item.scope.entity_id)
