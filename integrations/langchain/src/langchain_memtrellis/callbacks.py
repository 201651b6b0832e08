"""Callback handlers that capture the turns of any chain or agent (they never place context).

Attach one to a call's config (``config={"callbacks": [handler]}``) and it captures one
turn per run of the chain or agent: what the user said, read from the run's input (the
question before a prompt template filled it in), and the run's final answer, read from
its output. An agent's tool calls and their results (the AI and tool messages of its
output) come with the answer as its sources, never as memories of their own. Retrieved
documents, recalled memories, template text, intermediate ReAct steps and the calls a
middleware makes for itself (a summary) are never stored. A model run without a chain
around it (``llm.invoke(...)``) is captured from its own messages and answer.

Runs of [`ChatMemoryWrapper`][langchain_memtrellis.ChatMemoryWrapper] are left to the
wrapper, runs of ``RunnableWithMessageHistory`` over a
[`MemoryChatMessageHistory`][langchain_memtrellis.MemoryChatMessageHistory] of the same
memory to that history, and runs under [`skip_capture`][langchain_memtrellis.skip_capture]
(or the ``memtrellis_skip_capture`` metadata key) are not captured.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from memtrellis import Memory

from langchain_memtrellis._bridge import AdapterStats, MemoryBridge
from langchain_memtrellis._runs import Runs

__all__ = ["AsyncMemoryCallbackHandler", "MemoryCallbackHandler"]


class _HandlerBase:
    """Construction shared by the sync and async handlers (the events differ only in
    whether capture is awaited)."""

    raise_error: bool = False

    def __init__(
        self,
        memory: Memory | None = None,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        capture_mode: str | None = None,
        strict: bool = False,
        input_key: str | None = None,
        max_open_runs: int = 1024,
    ) -> None:
        self.bridge = MemoryBridge(
            memory,
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            capture_mode=capture_mode,
            strict=strict,
        )
        self.runs = Runs(self.bridge, input_key, max_open_runs)
        self.raise_error = strict

    @property
    def stats(self) -> AdapterStats:
        """Captures and capture failures of this handler."""
        return self.bridge.stats


class MemoryCallbackHandler(_HandlerBase, BaseCallbackHandler):
    """Captures one turn per chain or agent run: the user's words and the final answer.

    The user's words come from the run's input (a string, messages, or the dict value
    under ``input_key``), never from the prompt a template built from them; the answer
    from the run's output (a string, a message, an ``output``/``answer`` key, the last AI
    message of an agent's ``messages``), else the last model answer in the run. A model
    run with no chain around it is captured from its own messages.

    The scope comes from the run's metadata (``memtrellis_entity_id``,
    ``memtrellis_process_id``, ``memtrellis_session_id``; else a ``session_id`` or
    ``thread_id`` key of the metadata as the session), then the handler's defaults.
    Failures are logged and counted in `stats`; LangChain never sees them unless
    ``strict=True`` (which also sets ``raise_error``).

    Args:
        memory: The store; default the shared ``Memory()``.
        entity_id: Default entity.
        process_id: Default process.
        session_id: Default session.
        capture_mode: ``"fast"``/``"fine"``; default the memory's own.
        strict: Raise memory failures into the chain.
        input_key: The key of the chain's input dict that holds what the user said
            (default: ``messages``, ``input``, ``question``, ``query``, ``user_input``,
            ``human_input``, ``message``, ``text``, the first it has; else its only text
            value). A run's ``memtrellis_input_key`` metadata overrides it.
        max_open_runs: Top-level runs tracked at once; beyond it the oldest is forgotten.

    Examples:
        >>> import tempfile
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from langchain_core.prompts import ChatPromptTemplate
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import MemoryCallbackHandler
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> handler = MemoryCallbackHandler(memory, entity_id="alice")
        >>> prompt = ChatPromptTemplate.from_messages([("human", "Notes: none. Q: {question}")])
        >>> chain = prompt | GenericFakeChatModel(messages=iter(["Noted."]))
        >>> chain.invoke({"question": "I prefer window seats"}, {"callbacks": [handler]}).content
        'Noted.'
        >>> memory.flush() and sorted(m.text for m in memory.list(entity_id="alice"))
        ['I prefer window seats', 'Noted.']
        >>> memory.close()
    """

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a turn for a top-level run; note a nested one."""
        self.runs.start_chain(inputs, run_id, parent_run_id, tags, metadata)

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Capture the turn of a top-level run: the user's words and the final answer."""
        turn = self.runs.end_chain(outputs, run_id, kwargs.get("inputs"))
        if turn is not None:
            self.bridge.capture(*turn, whole=True)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget a run that failed."""
        self.runs.drop(run_id)

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Note a tool run under its top-level run (a model it calls belongs to that turn)."""
        self.runs.start_child(run_id, parent_run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a tool run."""
        self.runs.end_chain(output, run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a tool run."""
        self.runs.end_chain(None, run_id)

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Note a retriever run under its top-level run."""
        self.runs.start_child(run_id, parent_run_id)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a retriever run (what it found is never stored)."""
        self.runs.end_chain(None, run_id)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget a retriever run."""
        self.runs.end_chain(None, run_id)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the run's input until it ends."""
        self.runs.start_model(
            messages, run_id, parent_run_id, tags, metadata, kwargs.get("invocation_params")
        )

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Capture a model run of its own; note the answer of one inside a chain."""
        for messages, reply, scope in self.runs.end_model(response, run_id):
            self.bridge.capture(messages, reply, scope)

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget a run that failed: there is no turn to keep."""
        self.runs.drop(run_id)


class AsyncMemoryCallbackHandler(_HandlerBase, AsyncCallbackHandler):
    """[`MemoryCallbackHandler`][langchain_memtrellis.MemoryCallbackHandler] for async runs (capture
    through ``Memory.acapture``).

    Args:
        memory: The store; default the shared ``Memory()``.
        entity_id: Default entity.
        process_id: Default process.
        session_id: Default session.
        capture_mode: ``"fast"``/``"fine"``; default the memory's own.
        strict: Raise memory failures into the chain.
        input_key: The key of the chain's input dict that holds what the user said.
        max_open_runs: Top-level runs tracked at once; beyond it the oldest is forgotten.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> import asyncio
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from langchain_memtrellis import AsyncMemoryCallbackHandler
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> handler = AsyncMemoryCallbackHandler(memory, entity_id="alice")
        >>> llm = GenericFakeChatModel(messages=iter(["Noted."]))
        >>> config = {"callbacks": [handler]}
        >>> asyncio.run(llm.ainvoke("I prefer aisle seats", config=config)).content
        'Noted.'
        >>> memory.flush() and sorted(m.text for m in memory.list(entity_id="alice"))
        ['I prefer aisle seats', 'Noted.']
        >>> memory.close()
    """

    async def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a turn for a top-level run; note a nested one."""
        self.runs.start_chain(inputs, run_id, parent_run_id, tags, metadata)

    async def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Capture the turn of a top-level run: the user's words and the final answer."""
        turn = self.runs.end_chain(outputs, run_id, kwargs.get("inputs"))
        if turn is not None:
            await self.bridge.acapture(*turn, whole=True)

    async def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget a run that failed."""
        self.runs.drop(run_id)

    async def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Note a tool run under its top-level run."""
        self.runs.start_child(run_id, parent_run_id)

    async def on_tool_end(
        self, output: Any, *, run_id: UUID, tags: list[str] | None = None, **kwargs: Any
    ) -> None:
        """Forget a tool run."""
        self.runs.end_chain(output, run_id)

    async def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget a tool run."""
        self.runs.end_chain(None, run_id)

    async def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Note a retriever run under its top-level run."""
        self.runs.start_child(run_id, parent_run_id)

    async def on_retriever_end(
        self, documents: Any, *, run_id: UUID, tags: list[str] | None = None, **kwargs: Any
    ) -> None:
        """Forget a retriever run."""
        self.runs.end_chain(None, run_id)

    async def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget a retriever run."""
        self.runs.end_chain(None, run_id)

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the run's input until it ends."""
        self.runs.start_model(
            messages, run_id, parent_run_id, tags, metadata, kwargs.get("invocation_params")
        )

    async def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Capture a model run of its own; note the answer of one inside a chain."""
        for messages, reply, scope in self.runs.end_model(response, run_id):
            await self.bridge.acapture(messages, reply, scope)

    async def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Forget a run that failed: there is no turn to keep."""
        self.runs.drop(run_id)
