"""``ChatMemoryWrapper``: any LangChain chat model, with long-term memory in the call path.

Examples:
    >>> import tempfile
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> from langchain_memtrellis import ChatMemoryWrapper
    >>> memory = Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder())
    >>> _ = memory.add("Alice is allergic to peanuts")
    >>> fake = GenericFakeChatModel(messages=iter(["Try apple slices."]))
    >>> chat = ChatMemoryWrapper(fake, memory=memory)
    >>> chat.invoke("Suggest a snack for me").content
    'Try apple slices.'
    >>> memory.flush() and any("apple slices" in m.text for m in memory.list())
    True
    >>> memory.close()
"""

from __future__ import annotations

import functools
import operator
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Literal, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.tools import BaseTool
from memtrellis import Memory
from memtrellis.context import DEFAULT_TOKEN_BUDGET
from pydantic import Field, PrivateAttr, model_validator
from typing_extensions import Self

from langchain_memtrellis._bridge import AdapterStats, MemoryBridge, scope_from
from langchain_memtrellis._defaults import default_memory
from langchain_memtrellis._rehost import rehost
from langchain_memtrellis._skip import SKIP_CAPTURE_KEY, SKIP_CAPTURE_TAG, capture_skipped

__all__ = ["INNER_RUN_TAG", "WRAPPER_TYPE", "ChatMemoryWrapper"]

#: ``_llm_type`` of the wrapper; callback handlers skip its runs (it captures itself).
WRAPPER_TYPE = "memtrellis-chat-wrapper"
#: Tag on the inner model's run, for the same reason.
INNER_RUN_TAG = "memtrellis:inner"
# Carries the scope of a call from invoke/stream (which see the config) to
# _generate/_stream (which, for streams, do not get a run manager).
_SCOPE_KWARG = "memtrellis_scope"
# Carries skip_capture() the same way.
_SKIP_KWARG = "memtrellis_skip_capture"


def _merge(chunks: Sequence[AIMessageChunk]) -> AIMessage | None:
    if not chunks:
        return None
    merged = functools.reduce(operator.add, chunks)
    return AIMessage(content=merged.content, id=merged.id)


class ChatMemoryWrapper(BaseChatModel):
    """A chat model that recalls memories before each call and captures each turn after it.

    Before the inner model runs, the memories most relevant to the last user message are
    rendered as a memory-context block (see [`memtrellis.context`][memtrellis.context]) and placed
    in the system message. After the answer, or when a stream ends (also by an early break or an
    error, with what was received), the turn is handed to ``Memory.capture``, which spools it and
    returns at once; extraction runs in the background.

    ``bind_tools``, ``with_structured_output``, ``batch``, callbacks and config reach the
    inner model, and memory stays in the call path. A failure of memory (recall or
    capture) is logged and counted in [`stats`][langchain_memtrellis.ChatMemoryWrapper.stats] and
    never breaks the call, unless ``strict=True``.

    The scope of one call can come from its config:
    ``chat.invoke(msgs, config={"metadata": {"memtrellis_entity_id": "bob"}})``
    (also ``memtrellis_session_id`` and ``memtrellis_process_id``).

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Args:
        llm: The chat model to wrap (also the keyword ``llm=``).

    Attributes:
        llm: The wrapped chat model.
        memory: The store; default a shared ``Memory()`` on ``$MEMTRELLIS_HOME`` or
            ``./.memtrellis``.
        entity_id: Whose memory (default: the memory's own default entity).
        process_id: Which app or agent.
        session_id: Recorded on captured turns.
        k: Memories recalled per call.
        token_budget: ``o200k_base`` tokens the memory-context block may take.
        position: ``"append"`` the block to the leading system message, or
            ``"insert"`` a system message of its own.
        capture: Capture turns (``False``: recall and place only).
        capture_mode: ``"fast"`` or ``"fine"`` extraction of captured turns.
        strict: Raise memory failures instead of logging and counting them.
        temperature: When set, passed to the inner model with each call.
        max_tokens: When set, passed to the inner model with each call.
        timeout: When set, passed to the inner model with each call.
        stop: Default stop sequences.
        max_retries: When set, the inner call is retried this many times on errors.
        streaming: Stream from the inner model even for ``invoke``.

    Examples:
        >>> import tempfile
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> chat = ChatMemoryWrapper(GenericFakeChatModel(messages=iter(["Hi!"])), memory=memory)
        >>> "".join(chunk.content for chunk in chat.stream("Hello"))
        'Hi!'
        >>> chat.stats.captured
        1
        >>> memory.close()
    """

    llm: BaseChatModel
    memory: Memory = Field(default_factory=default_memory, exclude=True)
    entity_id: str | None = None
    process_id: str | None = None
    session_id: str | None = None
    k: int = Field(default=8, ge=1, le=1000)
    token_budget: int = Field(default=DEFAULT_TOKEN_BUDGET, ge=0)
    position: Literal["append", "insert"] = "append"
    capture: bool = True
    capture_mode: Literal["fast", "fine"] | None = None
    strict: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    stop: list[str] | None = None
    max_retries: int | None = Field(default=None, ge=0)
    streaming: bool = False

    _bridge: MemoryBridge = PrivateAttr()

    def __init__(self, llm: BaseChatModel | None = None, /, **data: Any) -> None:
        if llm is not None:
            data["llm"] = llm
        super().__init__(**data)

    @model_validator(mode="after")
    def _make_memtrellis_bridge(self) -> Self:
        self._bridge = MemoryBridge(
            self.memory,
            entity_id=self.entity_id,
            process_id=self.process_id,
            session_id=self.session_id,
            k=self.k,
            token_budget=self.token_budget,
            position=self.position,
            capture_mode=self.capture_mode,
            strict=self.strict,
        )
        return self

    @property
    def stats(self) -> AdapterStats:
        """Recalls, placements, captures and memory failures of this wrapper."""
        return self._bridge.stats

    @property
    def _llm_type(self) -> str:
        return WRAPPER_TYPE

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "llm": self.llm._llm_type,
            "k": self.k,
            "token_budget": self.token_budget,
            "position": self.position,
        }

    def _resolve_model_profile(self) -> ModelProfile | None:
        return self.llm.profile

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = self.llm._get_ls_params(stop=stop or self.stop, **kwargs)
        if "ls_model_name" not in params:
            params["ls_model_name"] = self.llm._llm_type
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        if self.max_tokens is not None:
            params["ls_max_tokens"] = self.max_tokens
        return params

    # -- per-call plumbing ---------------------------------------------------------------
    def _scoped(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        current = ensure_config(config)
        scope = scope_from(current.get("metadata"))
        if capture_skipped(current.get("tags"), current.get("metadata")):
            kwargs = {**kwargs, _SKIP_KWARG: True}  # streams get no run manager to tell
        return {**kwargs, _SCOPE_KWARG: scope} if scope else kwargs

    def _split(
        self, kwargs: dict[str, Any], run_manager: Any
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """(metadata carrying the scope, the kwargs for the inner model)."""
        call = dict(kwargs)
        scope = call.pop(_SCOPE_KWARG, None)
        skipped = call.pop(_SKIP_KWARG, False)
        metadata = getattr(run_manager, "metadata", None) or {}
        for name, value in (
            ("temperature", self.temperature),
            ("max_tokens", self.max_tokens),
            ("timeout", self.timeout),
        ):
            if value is not None:
                call.setdefault(name, value)
        picked = {**metadata, **{f"memtrellis_{k}": v for k, v in (scope or {}).items()}}
        if skipped or SKIP_CAPTURE_TAG in (getattr(run_manager, "tags", None) or ()):
            picked[SKIP_CAPTURE_KEY] = True
        return picked, call

    def _inner(self) -> Runnable[LanguageModelInput, AIMessage]:
        if self.max_retries:
            return self.llm.with_retry(stop_after_attempt=self.max_retries + 1)
        return self.llm

    @staticmethod
    def _child(run_manager: Any) -> RunnableConfig:
        """Config of the inner call: a child run of ours, tagged so that handlers
        inherited by it leave the turn to the wrapper."""
        if run_manager is None:
            return {"tags": [INNER_RUN_TAG]}
        # An LLM run manager has no get_child (model runs are leaves): build the child
        # manager the way ParentRunManager.get_child does.
        child = CallbackManager(handlers=[], parent_run_id=run_manager.run_id)
        child.set_handlers(run_manager.inheritable_handlers)
        child.add_tags(run_manager.inheritable_tags)
        child.add_metadata(run_manager.inheritable_metadata)
        child.add_tags([INNER_RUN_TAG], inherit=False)
        return {"callbacks": child}

    def invoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """As for any chat model; the scope may come from ``config["metadata"]``."""
        return super().invoke(input, config, stop=stop, **self._scoped(config, kwargs))

    async def ainvoke(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AIMessage:
        """Async [`invoke`][langchain_memtrellis.ChatMemoryWrapper.invoke]."""
        return await super().ainvoke(input, config, stop=stop, **self._scoped(config, kwargs))

    def stream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        """As for any chat model; the turn is captured when the stream ends or is left."""
        return super().stream(input, config, stop=stop, **self._scoped(config, kwargs))

    def astream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        """Async [`stream`][langchain_memtrellis.ChatMemoryWrapper.stream]."""
        return super().astream(input, config, stop=stop, **self._scoped(config, kwargs))

    # -- the four hooks of BaseChatModel ------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        metadata, call = self._split(kwargs, run_manager)
        prepared = self._bridge.prepare(messages, metadata)
        reply = self._inner().invoke(
            prepared.messages, self._child(run_manager), stop=stop or self.stop, **call
        )
        if self.capture and prepared.capture:
            self._bridge.capture(prepared.original, reply, prepared.scope)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        metadata, call = self._split(kwargs, run_manager)
        prepared = await self._bridge.aprepare(messages, metadata)
        reply = await self._inner().ainvoke(
            prepared.messages, self._child(run_manager), stop=stop or self.stop, **call
        )
        if self.capture and prepared.capture:
            await self._bridge.acapture(prepared.original, reply, prepared.scope)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        metadata, call = self._split(kwargs, run_manager)
        prepared = self._bridge.prepare(messages, metadata)
        stream = self.llm.stream(
            prepared.messages, self._child(run_manager), stop=stop or self.stop, **call
        )
        received: list[AIMessageChunk] = []
        ended = False
        try:
            for chunk in stream:
                received.append(chunk)
                yield ChatGenerationChunk(message=chunk)
            ended = True
        finally:
            close: Callable[[], object] | None = getattr(stream, "close", None)
            if close is not None:
                close()
            if self.capture and prepared.capture and (received or ended):
                self._bridge.capture(prepared.original, _merge(received), prepared.scope)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        metadata, call = self._split(kwargs, run_manager)
        prepared = await self._bridge.aprepare(messages, metadata)
        stream = self.llm.astream(
            prepared.messages, self._child(run_manager), stop=stop or self.stop, **call
        )
        received: list[AIMessageChunk] = []
        ended = False
        try:
            async for chunk in stream:
                received.append(chunk)
                yield ChatGenerationChunk(message=chunk)
            ended = True
        finally:
            aclose: Callable[[], Any] | None = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
            if self.capture and prepared.capture and (received or ended):
                await self._bridge.acapture(prepared.original, _merge(received), prepared.scope)

    # -- pass-through that keeps memory in the call path ---------------------------------
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The inner model's ``bind_tools``, with this wrapper in place of the inner model."""
        bound = self.llm.bind_tools(tools, tool_choice=tool_choice, **kwargs)
        return cast("Runnable[LanguageModelInput, AIMessage]", rehost(bound, self))

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | Any]:
        """The inner model's ``with_structured_output``, with memory in its call path."""
        structured = self.llm.with_structured_output(schema, include_raw=include_raw, **kwargs)
        return rehost(structured, self)
