"""Callback handlers that capture the turns of any chain or agent (they never place context).

Attach one to a call's config, a chain or an agent; each chat-model run's input
(``on_chat_model_start``) is matched with its answer (``on_llm_end``) by run id and the
new turn goes to ``Memory.capture``. Runs of
[`ChatMemoryWrapper`][langchain_memtrellis.ChatMemoryWrapper] are skipped, as the wrapper captures
its own turns.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from memtrellis import Memory

from langchain_memtrellis._bridge import AdapterStats, MemoryBridge
from langchain_memtrellis.wrapper import INNER_RUN_TAG, WRAPPER_TYPE

__all__ = ["AsyncMemoryCallbackHandler", "MemoryCallbackHandler"]

Turn = tuple[list[BaseMessage], BaseMessage | None, dict[str, str]]


class _Runs:
    """Chat-model runs in flight: their input and scope, by run id. Thread-safe."""

    def __init__(self, bridge: MemoryBridge) -> None:
        self.bridge = bridge
        self._runs: dict[UUID, tuple[list[list[BaseMessage]], dict[str, str]]] = {}
        self._lock = threading.Lock()

    def start(
        self,
        messages: list[list[BaseMessage]],
        run_id: UUID,
        tags: list[str] | None,
        metadata: Mapping[str, Any] | None,
        invocation_params: Mapping[str, Any] | None,
    ) -> None:
        if INNER_RUN_TAG in (tags or ()) or (invocation_params or {}).get("_type") == WRAPPER_TYPE:
            return  # the wrapper captures this turn itself
        with self._lock:
            self._runs[run_id] = ([list(m) for m in messages], self.bridge.scope(metadata))

    def end(self, response: LLMResult, run_id: UUID) -> list[Turn]:
        with self._lock:
            found = self._runs.pop(run_id, None)
        if found is None:
            return []
        prompts, scope = found
        turns: list[Turn] = []
        for index, messages in enumerate(prompts):
            generations = response.generations[index] if index < len(response.generations) else []
            first = generations[0] if generations else None
            reply = first.message if isinstance(first, ChatGeneration) else None
            turns.append((messages, reply, scope))
        return turns

    def drop(self, run_id: UUID) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._runs)


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
    ) -> None:
        self.bridge = MemoryBridge(
            memory,
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            capture_mode=capture_mode,
            strict=strict,
        )
        self.runs = _Runs(self.bridge)
        self.raise_error = strict

    @property
    def stats(self) -> AdapterStats:
        """Captures and capture failures of this handler."""
        return self.bridge.stats


class MemoryCallbackHandler(_HandlerBase, BaseCallbackHandler):
    """Captures every chat-model turn it sees into memory.

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

    Examples:
        >>> import tempfile
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import MemoryCallbackHandler
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> handler = MemoryCallbackHandler(memory, entity_id="alice")
        >>> llm = GenericFakeChatModel(messages=iter(["Noted."]))
        >>> llm.invoke("I prefer window seats", config={"callbacks": [handler]}).content
        'Noted.'
        >>> memory.flush() and sorted(m.text for m in memory.list(entity_id="alice"))
        ['I prefer window seats', 'Noted.']
        >>> memory.close()
    """

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
        self.runs.start(messages, run_id, tags, metadata, kwargs.get("invocation_params"))

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Capture the run's new messages and its answer."""
        for messages, reply, scope in self.runs.end(response, run_id):
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
        self.runs.start(messages, run_id, tags, metadata, kwargs.get("invocation_params"))

    async def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Capture the run's new messages and its answer."""
        for messages, reply, scope in self.runs.end(response, run_id):
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
