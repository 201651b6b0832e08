"""LCEL middleware: ``prompt | memory_context(memory) | llm`` places memory context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from langchain_core.runnables import Runnable, RunnableConfig
from memtrellis import InvalidInputError, Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
)

from langchain_memtrellis._bridge import AdapterStats, MemoryBridge

__all__ = ["MemoryContextRunnable", "memory_context"]


def _messages_of(value: Any) -> tuple[list[BaseMessage], bool]:
    """(the messages, whether the input was a prompt value)."""
    if isinstance(value, PromptValue):
        return value.to_messages(), True
    if isinstance(value, str):
        return [HumanMessage(content=value)], False
    if isinstance(value, Sequence):
        return convert_to_messages(value), False
    raise InvalidInputError(
        f"memory_context takes a prompt value, a string or messages, not {type(value).__name__}"
    )


class MemoryContextRunnable(Runnable[Any, Any]):
    """Places memory context into the messages of a prompt; captures nothing.

    A ``ChatPromptTemplate``'s output (a prompt value) comes out as a
    ``ChatPromptValue``; a list of messages (or a string) as a list of messages. Pair it
    with [`MemoryCallbackHandler`][langchain_memtrellis.MemoryCallbackHandler] to capture the turns.
    Recall failures are logged and counted in
    [`stats`][langchain_memtrellis.MemoryContextRunnable.stats] and the messages pass through
    unchanged, unless ``strict=True``.

    Args:
        memory: The store; default the shared ``Memory()``.
        entity_id: Whose memory; the run's ``user_id`` (configurable or LangGraph context)
            or ``memtrellis_entity_id`` metadata overrides it.
        process_id: Which app or agent.
        k: Memories recalled.
        token_budget: Tokens the block may take.
        position: ``"append"`` to the leading system message or ``"insert"`` one.
        strict: Raise memory failures.
        recent_turns: Most messages of the block's recent-conversation stage (only
            conversation the call does not carry; 0: none).
        open_items: Most of the user's open decisions and action items the block keeps
            room for (0: only those recall returns).
        context_hint: Let the messages before the question steer recall.
        session_history: Read up to this many of the session's earlier messages that
            the call lacks for the recent stage (0: off; needs the run's ``thread_id``).

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_memtrellis import MemoryContextRunnable
        >>> memory = Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is vegetarian")
        >>> step = MemoryContextRunnable(memory)
        >>> messages = step.invoke([HumanMessage("What should Alice eat?")])
        >>> messages[0].type, "Alice is vegetarian" in messages[0].content, step.stats.placed
        ('system', True, 1)
        >>> memory.close()
    """

    def __init__(
        self,
        memory: Memory | None = None,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        k: int = DEFAULT_K,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        position: Literal["append", "insert"] = "append",
        strict: bool = False,
        recent_turns: int = DEFAULT_RECENT_TURNS,
        open_items: int = DEFAULT_OPEN_ITEMS,
        context_hint: bool = True,
        session_history: int = 0,
    ) -> None:
        self.bridge = MemoryBridge(
            memory,
            entity_id=entity_id,
            process_id=process_id,
            k=k,
            token_budget=token_budget,
            position=position,
            strict=strict,
            recent_turns=recent_turns,
            open_items=open_items,
            context_hint=context_hint,
            session_history=session_history,
        )
        self.name = "memory_context"

    @property
    def stats(self) -> AdapterStats:
        """Recalls, placements and recall failures."""
        return self.bridge.stats

    def _scope(self, config: RunnableConfig) -> dict[str, str]:
        """The run's scope: its metadata, ``configurable`` (``user_id``) and LangGraph context."""
        return self.bridge.scope(config.get("metadata"), configurable=config.get("configurable"))

    def _place(self, value: Any, run_manager: Any, config: RunnableConfig) -> Any:
        messages, is_prompt = _messages_of(value)
        placed = self.bridge.prepare(messages, scope=self._scope(config)).messages
        return ChatPromptValue(messages=placed) if is_prompt else placed

    async def _aplace(self, value: Any, run_manager: Any, config: RunnableConfig) -> Any:
        messages, is_prompt = _messages_of(value)
        placed = (await self.bridge.aprepare(messages, scope=self._scope(config))).messages
        return ChatPromptValue(messages=placed) if is_prompt else placed

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The input with memory context placed."""
        return self._call_with_config(self._place, input, config)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async [`invoke`][langchain_memtrellis.MemoryContextRunnable.invoke] (recall runs off the
        event loop)."""
        return await self._acall_with_config(self._aplace, input, config)


def memory_context(memory: Memory | None = None, **options: Any) -> MemoryContextRunnable:
    """The LCEL step that places memory context: ``prompt | memory_context(memory) | llm``.

    Args:
        memory: The store; default the shared ``Memory()``.
        **options: See [`MemoryContextRunnable`][langchain_memtrellis.MemoryContextRunnable].

    Examples:
        >>> import tempfile
        >>> from langchain_core.prompts import ChatPromptTemplate
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import memory_context
        >>> memory = Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is vegetarian")
        >>> prompt = ChatPromptTemplate.from_messages([("system", "Be brief."), ("human", "{q}")])
        >>> value = (prompt | memory_context(memory)).invoke({"q": "Is Alice vegetarian?"})
        >>> "Alice is vegetarian" in value.to_messages()[0].content
        True
        >>> memory.close()
    """
    return MemoryContextRunnable(memory, **options)
