"""Agent middleware for LangChain 1.x ``create_agent`` (needs the ``agents`` extra).

Memory context is placed in the model request's system message in ``wrap_model_call``
(so it is never written into the agent's checkpointed state) and each model turn is
captured in ``after_model``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.runtime import Runtime
from memtrellis import Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
)

from langchain_memtrellis._bridge import (
    SESSION_KEYS,
    USER_KEYS,
    AdapterStats,
    MemoryBridge,
    Prepared,
)
from langchain_memtrellis._messages import place
from langchain_memtrellis._skip import capture_skipped
from langchain_memtrellis._structured import render_structured

__all__ = ["MemoryMiddleware"]


def _run_config() -> dict[str, Any]:
    """The current run's config (empty outside a graph run)."""
    from langgraph.config import get_config

    try:
        return dict(get_config())
    except RuntimeError:
        return {}


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

    The user (the entity) is the ``user_id`` of the run's LangGraph context
    (``create_agent(..., context_schema=...)``, ``agent.invoke(..., context=...)``) or of
    its ``config["configurable"]``; the session is its ``thread_id``; the memtrellis keys
    (``memtrellis_entity_id``... in the metadata or configurable) come first, the defaults
    given here last. A structured answer (``response_format``) is captured as readable
    text. Failures are logged and counted in
    [`stats`][langchain_memtrellis.MemoryMiddleware.stats] and never stop the agent,
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
        recent_turns: Most messages of the block's recent-conversation stage (only
            conversation the call does not carry; 0: none).
        open_items: Most of the user's open decisions and action items the block keeps
            room for (0: only those recall returns).
        context_hint: Let the messages before the question steer recall.
        session_history: Read up to this many of the session's earlier messages that
            the call lacks for the recent stage (0: off; needs the run's ``thread_id``).
        user_keys: Keys naming the user in the run's context, configurable or metadata.
        session_keys: Keys naming the session there.
        require_user: Refuse a run that names no user (``InvalidInputError``) when no
            ``entity_id`` is given here.

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
        k: int = DEFAULT_K,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        capture: bool = True,
        capture_mode: Literal["fast", "fine"] | None = None,
        strict: bool = False,
        recent_turns: int = DEFAULT_RECENT_TURNS,
        open_items: int = DEFAULT_OPEN_ITEMS,
        context_hint: bool = True,
        session_history: int = 0,
        user_keys: Sequence[str] = USER_KEYS,
        session_keys: Sequence[str] = SESSION_KEYS,
        require_user: bool = False,
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
            recent_turns=recent_turns,
            open_items=open_items,
            context_hint=context_hint,
            session_history=session_history,
            user_keys=user_keys,
            session_keys=session_keys,
            require_user=require_user,
        )
        self.capture = capture
        self.tools = []

    @property
    def stats(self) -> AdapterStats:
        """Recalls, placements, captures and memory failures."""
        return self.bridge.stats

    def _scope(self, runtime: Runtime[Any] | None) -> dict[str, str]:
        """The scope the run names (context, configurable, metadata) over the defaults."""
        config = _run_config()
        return self.bridge.scope(
            config.get("metadata"),
            configurable=config.get("configurable"),
            context=getattr(runtime, "context", None),
        )

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
        prepared = self.bridge.prepare(request.messages, scope=self._scope(request.runtime))
        return handler(self._with_context(request, prepared))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async [`wrap_model_call`][langchain_memtrellis.MemoryMiddleware.wrap_model_call] (recall
        runs off the event loop)."""
        prepared = await self.bridge.aprepare(request.messages, scope=self._scope(request.runtime))
        return await handler(self._with_context(request, prepared))

    def _turn(self, state: AgentState[Any]) -> tuple[list[BaseMessage], AIMessage] | None:
        """The messages since the previous model turn and this turn's answer.

        With ``response_format`` the answer is the structured response (rendered as text),
        whether it came as JSON text or as a call of the schema's tool (then followed by
        the tool message ``create_agent`` adds).
        """
        messages = list(state.get("messages") or [])
        if not self.capture or not messages or _skipped():
            return None
        structured = state.get("structured_response")
        last = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=None)
        if structured is not None and last is not None:
            text = render_structured(structured)
            return messages[:last], AIMessage(content=text, id=messages[last].id)
        if not isinstance(messages[-1], AIMessage):
            return None
        return messages[:-1], messages[-1]

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Capture the messages since the previous model turn and this answer."""
        turn = self._turn(state)
        if turn is not None:
            self.bridge.capture(*turn, self._scope(runtime))
        return None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async [`after_model`][langchain_memtrellis.MemoryMiddleware.after_model]."""
        turn = self._turn(state)
        if turn is not None:
            await self.bridge.acapture(*turn, self._scope(runtime))
        return None
