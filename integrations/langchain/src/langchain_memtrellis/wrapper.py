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
import json
import operator
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Literal, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    BaseCallbackManager,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.language_models.model_profile import ModelProfile
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.tools import BaseTool
from langchain_core.tracers.base import AsyncBaseTracer, BaseTracer
from memtrellis import InvalidInputError, Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
    AdapterOptions,
)
from pydantic import Field, PrivateAttr, field_validator, model_validator
from typing_extensions import Self

from langchain_memtrellis._bridge import SESSION_KEYS, USER_KEYS, AdapterStats, MemoryBridge
from langchain_memtrellis._defaults import default_memory
from langchain_memtrellis._rehost import apply_through, chat_model_in, rehost
from langchain_memtrellis._skip import SKIP_CAPTURE_KEY, SKIP_CAPTURE_TAG, capture_skipped
from langchain_memtrellis._structured import structured_reply

__all__ = ["INNER_RUN_TAG", "WRAPPER_TYPE", "ChatMemoryWrapper"]

#: ``_llm_type`` of the wrapper; callback handlers skip its runs (it captures itself).
WRAPPER_TYPE = "memtrellis-chat-wrapper"
#: Tag on the inner model's run, for the same reason.
INNER_RUN_TAG = "memtrellis:inner"
#: LangGraph's tag for a model run whose tokens ``stream_mode="messages"`` leaves out
#: (``langgraph.constants.TAG_NOSTREAM``): the wrapper's own run streams them.
NOSTREAM_TAG = "nostream"
# Carry the scope of a call, and the configurable values a configurable inner model
# reads, from invoke/stream (which see the config) to _generate/_stream (which do not).
_SCOPE_KWARG = "memtrellis_scope"
_CONFIG_KWARG = "memtrellis_configurable"
# Carries skip_capture() the same way.
_SKIP_KWARG = "memtrellis_skip_capture"


def _merge(chunks: Sequence[AIMessageChunk]) -> AIMessage | None:
    if not chunks:
        return None
    merged = functools.reduce(operator.add, chunks)
    return AIMessage(content=merged.content, id=merged.id, tool_calls=merged.tool_calls)


def _as_chunk(message: Any) -> AIMessageChunk:
    """A streamed item as a chunk (a runnable that does not stream yields whole messages)."""
    if isinstance(message, AIMessageChunk):
        return message
    if not isinstance(message, AIMessage):
        raise InvalidInputError(
            f"the wrapped runnable produced a {type(message).__name__}, not a chat message: "
            "ChatMemoryWrapper takes a chat model or a runnable around one"
        )
    return AIMessageChunk(
        content=message.content,
        id=message.id,
        additional_kwargs=message.additional_kwargs,
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
        tool_call_chunks=[
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(message.tool_calls)
        ],
    )


def _traces(handler: Any) -> bool:
    """A tracer (LangSmith, console) that records runs; not a stream of their tokens
    (astream_events, astream_log and LangGraph's message stream tap outputs)."""
    return isinstance(handler, BaseTracer | AsyncBaseTracer) and not hasattr(
        handler, "tap_output_iter"
    )


def _primitive(configurable: Any) -> dict[str, Any]:
    """A run's configurable values a configurable model can read (no LangGraph internals)."""
    return {
        key: value
        for key, value in (configurable or {}).items()
        if not key.startswith("__") and isinstance(value, str | int | float | bool)
    }


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

    The scope of one call can come from its config: the user from
    ``config["configurable"]["user_id"]`` or a LangGraph runtime context's ``user_id``,
    the session from its ``thread_id``, or the memtrellis keys
    ``chat.invoke(msgs, config={"metadata": {"memtrellis_entity_id": "bob"}})``
    (also ``memtrellis_session_id`` and ``memtrellis_process_id``).

    The wrapped model's tokens are streamed once, by the wrapper's run: the inner run is
    tagged ``nostream`` and only tracers see it.

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Args:
        llm: The chat model to wrap (also the keyword ``llm=``): a chat model or a
            runnable around one (``.bind(...)``, ``.with_retry()``, ``.with_fallbacks()``,
            a configurable ``init_chat_model``).

    Attributes:
        llm: The wrapped chat model (or runnable around one).
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
        recent_turns: Most messages of the block's recent-conversation stage (4; 0:
            none). It holds only conversation the call does not carry (the session's
            earlier turns of ``session_history``), never a message of the prompt.
        open_items: Most of the user's open decisions and action items the block keeps
            room for, recalled or not (10; 0: only those recall returns).
        context_hint: Let the messages before the question steer recall (True).
        session_history: Read up to this many of the session's earlier messages that
            the call lacks for the recent stage (0: off; for an app that sends only the
            latest message or trims its history; needs a session: the run's
            ``thread_id`` or ``session_id``).
        temperature: When set, passed to the inner model with each call.
        max_tokens: When set, passed to the inner model with each call.
        timeout: When set, passed to the inner model with each call.
        stop: Default stop sequences.
        max_retries: When set, the inner call is retried this many times on errors.
        streaming: Stream from the inner model even for ``invoke``.
        user_keys: Keys naming the user in a run's LangGraph context, ``configurable`` or
            metadata (default ``("user_id",)``); e.g. ``("customer_id",)``.
        session_keys: Keys naming the session there (default ``("session_id", "thread_id")``).
        require_user: Refuse a call that names no user (``InvalidInputError``), when no
            ``entity_id`` is set here either.

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

    llm: Runnable[LanguageModelInput, BaseMessage]
    memory: Memory = Field(default_factory=default_memory, exclude=True)
    entity_id: str | None = None
    process_id: str | None = None
    session_id: str | None = None
    k: int = Field(default=DEFAULT_K, ge=1, le=1000)
    token_budget: int = Field(default=DEFAULT_TOKEN_BUDGET, ge=0)
    position: Literal["append", "insert"] = "append"
    capture: bool = True
    capture_mode: Literal["fast", "fine"] | None = None
    strict: bool = False
    recent_turns: int = DEFAULT_RECENT_TURNS
    open_items: int = DEFAULT_OPEN_ITEMS
    context_hint: bool = True
    session_history: int = 0
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    stop: list[str] | None = None
    max_retries: int | None = Field(default=None, ge=0)
    streaming: bool = False
    user_keys: tuple[str, ...] = USER_KEYS
    session_keys: tuple[str, ...] = SESSION_KEYS
    require_user: bool = False

    _bridge: MemoryBridge = PrivateAttr()
    # Set on the copies with_structured_output puts in its chain: capture renders the answer.
    _structured: bool = PrivateAttr(default=False)

    def __init__(
        self, llm: Runnable[LanguageModelInput, BaseMessage] | None = None, /, **data: Any
    ) -> None:
        if llm is not None:
            data["llm"] = llm
        AdapterOptions.of(data)  # InvalidInputError for a bad option, before pydantic's
        super().__init__(**data)

    @field_validator("llm", mode="plain")
    @classmethod
    def _runnable_llm(cls, value: Any) -> Runnable[LanguageModelInput, BaseMessage]:
        if not isinstance(value, Runnable):
            raise InvalidInputError(
                f"ChatMemoryWrapper takes a chat model or a runnable around one, not "
                f"{type(value).__name__}"
            )
        return value

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
            recent_turns=self.recent_turns,
            open_items=self.open_items,
            context_hint=self.context_hint,
            session_history=self.session_history,
            user_keys=self.user_keys,
            session_keys=self.session_keys,
            require_user=self.require_user,
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
    def _chat_model(self) -> BaseChatModel | None:
        """The chat model inside ``llm`` (None for a configurable one, built per call)."""
        return chat_model_in(self.llm)

    @property
    def _identifying_params(self) -> dict[str, Any]:
        model = self._chat_model
        return {
            "llm": model._llm_type if model is not None else type(self.llm).__name__,
            "k": self.k,
            "token_budget": self.token_budget,
            "position": self.position,
        }

    def _resolve_model_profile(self) -> ModelProfile | None:
        model = self._chat_model
        return model.profile if model is not None else None

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        model = self._chat_model
        if model is None:
            params = super()._get_ls_params(stop=stop or self.stop, **kwargs)
            params["ls_model_name"] = type(self.llm).__name__
        else:
            params = model._get_ls_params(stop=stop or self.stop, **kwargs)
        if "ls_model_name" not in params and model is not None:
            params["ls_model_name"] = model._llm_type
        if self.temperature is not None:
            params["ls_temperature"] = self.temperature
        if self.max_tokens is not None:
            params["ls_max_tokens"] = self.max_tokens
        return params

    # -- per-call plumbing ---------------------------------------------------------------
    def _scoped(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        """kwargs carrying what the run names (metadata, configurable, LangGraph context),
        whether it skips capture and, for a configurable inner model, the configurable
        values it reads."""
        config = ensure_config(config)
        configurable = config.get("configurable")
        out = dict(kwargs)
        scope = self._bridge.named(config.get("metadata"), configurable=configurable)
        if scope:
            out[_SCOPE_KWARG] = scope
        if capture_skipped(config.get("tags"), config.get("metadata")):
            out[_SKIP_KWARG] = True  # streams get no run manager to tell
        if self._chat_model is None and (values := _primitive(configurable)):
            out[_CONFIG_KWARG] = values  # a configurable model is built from them
        return out

    def _split(
        self, kwargs: dict[str, Any], run_manager: Any
    ) -> tuple[dict[str, str], dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
        """(the call's scope, the kwargs for the inner model, its configurable values, the
        run's metadata that says whether to capture)."""
        call = dict(kwargs)
        named = call.pop(_SCOPE_KWARG, None)
        configurable = call.pop(_CONFIG_KWARG, None)
        skipped = call.pop(_SKIP_KWARG, False)
        metadata = dict(getattr(run_manager, "metadata", None) or {})
        if named is None:  # called through generate(): only the run's metadata is known
            named = self._bridge.named(metadata)
        for name, value in (
            ("temperature", self.temperature),
            ("max_tokens", self.max_tokens),
            ("timeout", self.timeout),
        ):
            if value is not None:
                call.setdefault(name, value)
        if skipped or SKIP_CAPTURE_TAG in (getattr(run_manager, "tags", None) or ()):
            metadata[SKIP_CAPTURE_KEY] = True
        return {**self._bridge.defaults, **named}, call, configurable, metadata

    def _stop(self, stop: list[str] | None) -> dict[str, Any]:
        """The stop argument, only when there is one (a bound ``stop`` is kept)."""
        chosen = stop or self.stop
        return {"stop": chosen} if chosen else {}

    def _answer(self, reply: BaseMessage | None) -> BaseMessage | None:
        """What capture stores as the answer: a structured answer rendered as text."""
        return structured_reply(reply) if self._structured else reply

    def _inner(self) -> Runnable[LanguageModelInput, BaseMessage]:
        if self.max_retries:
            return self.llm.with_retry(stop_after_attempt=self.max_retries + 1)
        return self.llm

    @staticmethod
    def _child(run_manager: Any, configurable: dict[str, Any] | None = None) -> RunnableConfig:
        """Config of the inner call: a run that tracers record, tagged so that the
        handlers seeing it leave the turn and its tokens to the wrapper.

        Only tracers are handed on: the wrapper's own run already streams every chunk of
        the answer to the others (LangGraph's message stream, astream_events, a token
        handler), which would get each chunk twice from the inner run too. The inner run
        is a child of the wrapper's when LangChain gives the wrapper its run manager
        (``invoke``); a stream does not, and the inner run is then the wrapper's sibling,
        under the caller's run.
        """
        if run_manager is not None:
            # An LLM run manager has no get_child (model runs are leaves): build the child
            # manager the way ParentRunManager.get_child does.
            parent, handlers = run_manager.run_id, run_manager.inheritable_handlers
            tags, metadata = run_manager.inheritable_tags, run_manager.inheritable_metadata
        else:
            inherited = ensure_config().get("callbacks")
            if isinstance(inherited, BaseCallbackManager):
                parent, handlers = inherited.parent_run_id, inherited.inheritable_handlers
                tags, metadata = inherited.inheritable_tags, inherited.inheritable_metadata
            else:
                parent, handlers, tags, metadata = None, list(inherited or []), [], {}
        child = CallbackManager(handlers=[], parent_run_id=parent)
        child.set_handlers([h for h in handlers if _traces(h)])
        child.add_tags(tags)
        child.add_metadata(metadata)
        child.add_tags([INNER_RUN_TAG, NOSTREAM_TAG], inherit=False)
        config: RunnableConfig = {"callbacks": child}
        if configurable:
            config["configurable"] = configurable
        return config

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
        scope, call, configurable, metadata = self._split(kwargs, run_manager)
        prepared = self._bridge.prepare(messages, metadata, scope=scope)
        reply = self._inner().invoke(
            prepared.messages, self._child(run_manager, configurable), **self._stop(stop), **call
        )
        if self.capture and prepared.capture:
            self._bridge.capture(prepared.original, self._answer(reply), prepared.scope)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        scope, call, configurable, metadata = self._split(kwargs, run_manager)
        prepared = await self._bridge.aprepare(messages, metadata, scope=scope)
        reply = await self._inner().ainvoke(
            prepared.messages, self._child(run_manager, configurable), **self._stop(stop), **call
        )
        if self.capture and prepared.capture:
            await self._bridge.acapture(prepared.original, self._answer(reply), prepared.scope)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        scope, call, configurable, metadata = self._split(kwargs, run_manager)
        prepared = self._bridge.prepare(messages, metadata, scope=scope)
        stream = self.llm.stream(
            prepared.messages, self._child(run_manager, configurable), **self._stop(stop), **call
        )
        received: list[AIMessageChunk] = []
        ended = False
        try:
            for item in stream:
                chunk = _as_chunk(item)
                received.append(chunk)
                yield ChatGenerationChunk(message=chunk)
            ended = True
        finally:
            close: Callable[[], object] | None = getattr(stream, "close", None)
            if close is not None:
                close()
            if self.capture and prepared.capture and (received or ended):
                answer = self._answer(_merge(received))
                self._bridge.capture(prepared.original, answer, prepared.scope)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        scope, call, configurable, metadata = self._split(kwargs, run_manager)
        prepared = await self._bridge.aprepare(messages, metadata, scope=scope)
        stream = self.llm.astream(
            prepared.messages, self._child(run_manager, configurable), **self._stop(stop), **call
        )
        received: list[AIMessageChunk] = []
        ended = False
        try:
            async for item in stream:
                chunk = _as_chunk(item)
                received.append(chunk)
                yield ChatGenerationChunk(message=chunk)
            ended = True
        finally:
            aclose: Callable[[], Any] | None = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
            if self.capture and prepared.capture and (received or ended):
                answer = self._answer(_merge(received))
                await self._bridge.acapture(prepared.original, answer, prepared.scope)

    # -- pass-through that keeps memory in the call path ---------------------------------
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The inner model's ``bind_tools``, with this wrapper in place of the inner model.

        Through an inner runnable's bindings, retries and fallbacks (which are kept); a
        configurable model (which binds its tools when it is built) is wrapped as a whole.
        """
        bound = apply_through(self.llm, "bind_tools", tools, tool_choice=tool_choice, **kwargs)
        if chat_model_in(bound) is None:
            return self.model_copy(update={"llm": bound})
        return cast("Runnable[LanguageModelInput, AIMessage]", rehost(bound, self))

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | Any]:
        """The inner model's ``with_structured_output``, with memory in its call path; the
        structured answer is captured as readable text (``City (name: Lisbon)``)."""
        structured = apply_through(
            self.llm, "with_structured_output", schema, include_raw=include_raw, **kwargs
        )
        target = self.model_copy()
        target._structured = True
        return rehost(structured, target)
