"""Agent middleware for LangChain 1.x ``create_agent`` (needs the ``agents`` extra).

Memory context is placed in the model request's system message in ``wrap_model_call``
(so it is never written into the agent's checkpointed state) and each model turn is
captured in ``after_model``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.runtime import Runtime
from memtrellis import Memory
from memtrellis.context import DEFAULT_TOKEN_BUDGET

from langchain_memtrellis._bridge import AdapterStats, MemoryBridge, Prepared
from langchain_memtrellis._messages import place
from langchain_memtrellis._skip import capture_skipped

__all__ = ["MemoryMiddleware"]


def _run_metadata() -> dict[str, Any]:
    """The current run's metadata, with its primitive ``configurable`` values under it."""
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:  # outside a graph run
        return {}
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    found = {k: v for k, v in configurable.items() if isinstance(v, str)}
    return {**found, **(config.get("metadata") or {})}


def _skipped() -> bool:
    """Whether the current run asks not to be captured (``skip_capture()``)."""
    from langgraph.config import get_config

    try:
        config = get_config()
    except RuntimeError:  # outside a graph run
        return False
    return capture_skipped(config.get("tags"), config.get("metadata"))


class MemoryMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Long-term memory for a ``create_agent`` agent.

    The scope comes from the run's metadata (``memtrellis_entity_id``...) or its
    ``thread_id`` (as the session), else the defaults given here. Failures are logged
    and counted in [`stats`][langchain_memtrellis.MemoryMiddleware.stats] and never stop the agent,
    unless ``strict=True``.

    Args:
        memory: The store; default the shared ``Memory()``.
        entity_id: Default entity.
        process_id: Default process (e.g. the agent's name).
        session_id: Default session.
        k: Memories recalled per model call.
        token_budget: Tokens the memory-context block may take.
        capture: Capture the agent's turns.
        capture_mode: ``"fast"``/``"fine"``; default the memory's own.
        strict: Raise memory failures.

    Examples:
        >>> import tempfile
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import MemoryMiddleware
        >>> memory = Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder())
        >>> model = GenericFakeChatModel(messages=iter(["Booked a window seat."]))
        >>> agent = create_agent(model, middleware=[MemoryMiddleware(memory)])
        >>> state = agent.invoke({"messages": [("user", "Book me a seat")]})
        >>> state["messages"][-1].content
        'Booked a window seat.'
        >>> memory.close()
    """

    def __init__(
        self,
        memory: Memory | None = None,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int = 8,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        capture: bool = True,
        capture_mode: Literal["fast", "fine"] | None = None,
        strict: bool = False,
    ) -> None:
        super().__init__()
        self.bridge = MemoryBridge(
            memory,
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            capture_mode=capture_mode,
            strict=strict,
        )
        self.capture = capture
        self.tools = []

    @property
    def stats(self) -> AdapterStats:
        """Recalls, placements, captures and memory failures."""
        return self.bridge.stats

    @staticmethod
    def _with_context(request: ModelRequest[Any], prepared: Prepared) -> ModelRequest[Any]:
        if prepared.context.empty:
            return request
        current: list[BaseMessage] = [request.system_message] if request.system_message else []
        [system] = place(current, prepared.context, "append")
        assert isinstance(system, SystemMessage)
        return request.override(system_message=system)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Place memory context in this model call's system message only."""
        prepared = self.bridge.prepare(request.messages, _run_metadata())
        return handler(self._with_context(request, prepared))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async [`wrap_model_call`][langchain_memtrellis.MemoryMiddleware.wrap_model_call] (recall
        runs off the event loop)."""
        prepared = await self.bridge.aprepare(request.messages, _run_metadata())
        return await handler(self._with_context(request, prepared))

    def _turn(self, state: AgentState[Any]) -> tuple[list[BaseMessage], AIMessage] | None:
        messages = list(state.get("messages") or [])
        if not self.capture or not messages or not isinstance(messages[-1], AIMessage):
            return None
        if _skipped():
            return None
        return messages[:-1], messages[-1]

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Capture the messages since the previous model turn and this answer."""
        turn = self._turn(state)
        if turn is not None:
            self.bridge.capture(*turn, self.bridge.scope(_run_metadata()))
        return None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async [`after_model`][langchain_memtrellis.MemoryMiddleware.after_model]."""
        turn = self._turn(state)
        if turn is not None:
            await self.bridge.acapture(*turn, self.bridge.scope(_run_metadata()))
        return None
