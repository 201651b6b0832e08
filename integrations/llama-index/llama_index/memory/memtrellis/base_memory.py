"""``MemtrellisMemory``: a whole LlamaIndex memory (``BaseMemory``) backed by memtrellis."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory import BaseMemory
from llama_index.core.memory import Memory as ChatMemory
from memtrellis import Memory
from memtrellis.context import MemoryContext

from llama_index.memory.memtrellis._messages import latest_query, place_context
from llama_index.memory.memtrellis._react import ReactCheck
from llama_index.memory.memtrellis._settings import TAGS, RecallFields, given
from llama_index.memory.memtrellis._transcript import conversation, to_capture

__all__ = ["MemtrellisMemory"]


def _default_primary() -> BaseMemory:
    return ChatMemory.from_defaults()


def _place_in_user(messages: Sequence[ChatMessage], block: str) -> list[ChatMessage]:
    out = list(messages)
    if not block:
        return out
    for index in range(len(out) - 1, -1, -1):
        if out[index].role == MessageRole.USER:
            latest = out[index].model_copy(deep=True)
            latest.blocks = [TextBlock(text=block + "\n\n"), *latest.blocks]
            out[index] = latest
            return out
    out.append(ChatMessage(role=MessageRole.USER, content=block))
    return out


class MemtrellisMemory(RecallFields, BaseMemory):
    """A whole LlamaIndex memory: short-term chat history plus memtrellis' long-term memory.

    For code that takes a ``BaseMemory`` (``agent.run(..., memory=...)``,
    ``SimpleChatEngine.from_defaults(memory=...)``, ``ChatMemoryBuffer`` replaced), as
    ``Mem0Memory`` is. The chat history lives in ``primary_memory`` (default: a
    LlamaIndex ``Memory``). `get` returns that history with a memory-context block
    recalled for the latest user message (or ``input``) placed in the system message, or
    the latest user message with ``insert_method="user"``; memories already in the
    history are left out of it. `put` and `put_messages` add to the history and capture
    the conversation as it comes: the user's messages with the reply that answers them,
    one turn per reply (tool calls, tool results, system messages and a ReAct agent's
    reasoning left out; its answer kept). `set` replaces the history without capturing it
    (an app's own history, given again each call); `reset` clears the history, never the
    long-term memories.

    A memory failure is logged and counted in `failures`: `get` returns the history
    alone; ``strict=True`` raises instead.

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Attributes:
        memory: The memtrellis [`Memory`][memtrellis.Memory].
        primary_memory: The short-term chat history (any LlamaIndex ``BaseMemory``).
        entity_id: Whose memory (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        session_id: Session recorded on captured memories.
        k: Most memories recalled per read.
        token_budget: Most tokens (``o200k_base``) of the memory-context block.
        insert_method: Where the block goes: ``"system"`` or ``"user"`` (the latest user
            message; needed by a ``ReActAgent`` without a ``system_prompt``).
        mode: Extraction mode of captured turns (``"fast"``/``"fine"``).
        strict: Raise memory failures.
        recent_turns: Most messages of the block's recent-conversation stage (4; 0:
            none): only conversation the call does not carry, never a message of it.
        open_items: Most of the user's open decisions and action items the block keeps
            room for, recalled or not (10; 0: only those recall returns).
        context_hint: Let the messages before the question steer recall (True).
        session_history: Read up to this many of the session's earlier messages that the
            call lacks for the recent stage (0: off; needs a session id).

    Examples:
        >>> import tempfile
        >>> from llama_index.core.llms import ChatMessage
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> store = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> memory = MemtrellisMemory.from_defaults(memory=store, entity_id="ann", mode="fast")
        >>> memory.put(ChatMessage(role="user", content="I live in Porto"))
        >>> memory.put(ChatMessage(role="assistant", content="Noted."))
        >>> store.flush()
        True
        >>> later = MemtrellisMemory.from_defaults(memory=store, entity_id="ann")
        >>> later.put(ChatMessage(role="user", content="Where do I live?"))
        >>> system, question = later.get()
        >>> "I live in Porto" in system.content, question.content
        (True, 'Where do I live?')
        >>> store.close()
    """

    primary_memory: BaseMemory = Field(
        default_factory=_default_primary, exclude=True, description="The chat history."
    )
    session_id: str | None = Field(default=None, description="Session of captured turns.")
    insert_method: Literal["system", "user"] = Field(
        default="system", description="Where the memory-context block goes."
    )

    _pending: list[ChatMessage] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _react: ReactCheck = PrivateAttr(default_factory=ReactCheck)

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises memories by."""
        return "MemtrellisMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        memory: Memory,
        *,
        primary_memory: BaseMemory | None = None,
        chat_history: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> MemtrellisMemory:
        """A memory over ``memory``; the chat history in ``primary_memory`` (default: a new
        LlamaIndex ``Memory`` holding ``chat_history``, under ``session_id``); ``kwargs``
        are the other fields (``entity_id``, ``k``, ``insert_method``...).

        Examples:
            >>> import tempfile
            >>> from memtrellis.testing import HashingEmbedder
            >>> store = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> MemtrellisMemory.from_defaults(memory=store, session_id="s1").get_all()
            []
            >>> store.close()
        """
        if primary_memory is None:
            primary_memory = ChatMemory.from_defaults(
                session_id=session_id, chat_history=chat_history
            )
        elif chat_history is not None:
            primary_memory.set(chat_history)
        return cls(memory=memory, primary_memory=primary_memory, session_id=session_id, **kwargs)

    # -- reading --------------------------------------------------------------------------

    def _query(self, history: list[ChatMessage], input: Any) -> str:
        if isinstance(input, str) and input.strip():
            return input.strip()
        if isinstance(input, ChatMessage):
            return latest_query([input])
        return latest_query(history)

    @staticmethod
    def _said(history: list[ChatMessage], input: Any) -> list[dict[str, Any]]:
        """The conversation the question ends (the question last, when it is ``input``)."""
        said = conversation(history)
        question = input if isinstance(input, str) else None
        if isinstance(input, ChatMessage):
            question = latest_query([input])
        if question and question.strip():
            said.append({"role": "user", "content": question.strip()})
        return said

    def _placed(self, history: list[ChatMessage], context: MemoryContext) -> list[ChatMessage]:
        if context.empty:
            return history
        with self._binding.guard("context"):
            if self.insert_method == "user":
                return _place_in_user(history, context.text)
            return place_context(history, context, self._binding.options.position)
        return history

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The chat history with memory context for ``input`` (a message about to be
        sent; as in LlamaIndex, it is not added to the history) or else the latest user
        message."""
        self._react.check(self.insert_method == "system")
        history = self.primary_memory.get(input=input, **kwargs)
        query = self._query(history, input) or None
        binding = self._binding
        context = binding.context(
            query,
            binding.scope(given(session_id=self._session())),
            messages=self._said(history, input),
        )
        return self._placed(history, context)

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """Async `get`: recall runs off the event loop."""
        self._react.check(self.insert_method == "system")
        history = await self.primary_memory.aget(input=input, **kwargs)
        query = self._query(history, input) or None
        binding = self._binding
        context = await binding.acontext(
            query,
            binding.scope(given(session_id=self._session())),
            messages=self._said(history, input),
        )
        return self._placed(history, context)

    def get_all(self) -> list[ChatMessage]:
        """The whole chat history, without memory context."""
        return self.primary_memory.get_all()

    async def aget_all(self) -> list[ChatMessage]:
        """Async `get_all`."""
        return await self.primary_memory.aget_all()

    # -- writing --------------------------------------------------------------------------

    def _turns(self, messages: Sequence[ChatMessage]) -> list[list[dict[str, Any]]]:
        """Turns completed by ``messages``: pending user messages, the tool calls and
        results after them, and the answer."""
        turns: list[list[dict[str, Any]]] = []
        with self._lock:
            for message in messages:
                said = conversation([message])
                if not said:
                    continue
                self._pending.append(message)
                if said[0]["role"] == "assistant" and not said[0].get("tool_calls"):
                    # an answer ends the turn; calls and results before it are its sources
                    turns.append(conversation(self._pending))
                    self._pending.clear()
        return turns

    def _pending_turn(self) -> list[dict[str, Any]]:
        with self._lock:
            turn = conversation(self._pending)
            self._pending.clear()
        return turn

    def _session(self) -> str | None:
        session = self.session_id or getattr(self.primary_memory, "session_id", None)
        return str(session) if session else None

    def _capture(self, turns: list[list[dict[str, Any]]]) -> None:
        for turn in map(to_capture, turns):
            if not turn:
                continue
            binding = self._binding
            binding.capture(turn, binding.scope(given(session_id=self._session())), tags=TAGS)

    def put(self, message: ChatMessage) -> None:
        """Add a message to the chat history; a reply captures its turn."""
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        """Async `put`."""
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Add messages to the chat history; each reply among them captures its turn."""
        self.primary_memory.put_messages(messages)
        self._capture(self._turns(messages))

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Async `put_messages` (capture only spools, so it runs inline)."""
        await self.primary_memory.aput_messages(messages)
        self._capture(self._turns(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the chat history; the messages given are not captured."""
        self.primary_memory.set(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Async `set`."""
        await self.primary_memory.aset(messages)

    def reset(self) -> None:
        """Clear the chat history (user messages still waiting for a reply are captured
        first); long-term memories stay."""
        self._capture([self._pending_turn()])
        self.primary_memory.reset()

    async def areset(self) -> None:
        """Async `reset`."""
        self._capture([self._pending_turn()])
        await self.primary_memory.areset()
