"""What every LangChain adapter does with memory: the core's adapter binding on LangChain
messages, and the scope a run names.

The wrapper, the LCEL middleware, the agent middleware and the callback handlers differ
only in where they get messages from and where they put the context; they all call a
`MemoryBridge`, which translates LangChain messages to the core's message dicts and runs
the steps, fail-open and counting of [`memtrellis.binding`][memtrellis.binding] (the same
ones the SDK clients and LlamaIndex run). Sync and async differ only in the memory call
they await.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from memtrellis import InvalidInputError, Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
    AdapterOptions,
    AdapterStats,
    Binding,
    Step,
)
from memtrellis.context import MemoryContext

from langchain_memtrellis._defaults import default_memory
from langchain_memtrellis._messages import (
    Position,
    is_synthetic,
    last_user_text,
    new_turn,
    place,
    to_dict,
)
from langchain_memtrellis._skip import capture_skipped, history_stores

__all__ = [
    "SCOPE_KEYS",
    "SESSION_KEYS",
    "USER_KEYS",
    "AdapterStats",
    "MemoryBridge",
    "Prepared",
    "scope_from",
]

log = logging.getLogger("langchain_memtrellis")

#: Run metadata keys that choose the scope of one call.
SCOPE_KEYS = {
    "entity_id": "memtrellis_entity_id",
    "process_id": "memtrellis_process_id",
    "session_id": "memtrellis_session_id",
}
#: Conventional keys naming the user (the entity) of a run, in its LangGraph runtime
#: context, its ``configurable`` or its metadata.
USER_KEYS: tuple[str, ...] = ("user_id",)
#: Conventional keys naming the session (LangGraph's ``thread_id``), read in the same places.
SESSION_KEYS: tuple[str, ...] = ("session_id", "thread_id")
#: Where LangGraph keeps a run's ``Runtime`` (with its ``context``) in the config.
RUNTIME_KEY = "__pregel_runtime"
#: The entity turns fall into when nobody names one (``Memory``'s own default).
DEFAULT_ENTITY = "default"
EMPTY = MemoryContext("", 0, 0)
#: How ``Memory.health()`` counts this package's adapters.
SOURCE = "langchain"


def _named(source: Any, key: str) -> str | None:
    """``source[key]`` (a mapping) or ``source.key`` (a dataclass, a model) as text."""
    if source is None:
        return None
    value = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and value else None


def runtime_context(configurable: Mapping[str, Any] | None) -> Any:
    """The LangGraph runtime ``context`` of a run, from its ``configurable``; None outside."""
    runtime = (configurable or {}).get(RUNTIME_KEY)
    return getattr(runtime, "context", None)


def scope_from(
    metadata: Mapping[str, Any] | None,
    *,
    configurable: Mapping[str, Any] | None = None,
    context: Any = None,
    user_keys: Sequence[str] = USER_KEYS,
    session_keys: Sequence[str] = SESSION_KEYS,
) -> dict[str, str]:
    """The scope a run names: ``{"entity_id": ..., "session_id": ..., "process_id": ...}``.

    The memtrellis keys (``memtrellis_entity_id``, ``memtrellis_session_id``,
    ``memtrellis_process_id``) are read first, in the metadata, then the ``configurable``,
    then the LangGraph runtime context. Without them, the entity is the first of
    ``user_keys`` (``user_id``) and the session the first of ``session_keys``
    (``session_id``, ``thread_id``) found in the runtime context, the ``configurable`` or
    the metadata. The runtime context is taken from the ``configurable`` when not given.

    Examples:
        >>> scope_from({"memtrellis_entity_id": "bob"})
        {'entity_id': 'bob'}
        >>> scope_from({}, configurable={"user_id": "ann", "thread_id": "t-1"})
        {'entity_id': 'ann', 'session_id': 't-1'}
        >>> scope_from(None, configurable={"customer": "c-7"}, user_keys=("customer",))
        {'entity_id': 'c-7'}
    """
    if context is None:
        context = runtime_context(configurable)
    scope: dict[str, str] = {}
    for name, key in SCOPE_KEYS.items():
        for source in (metadata, configurable, context):
            if (value := _named(source, key)) is not None:
                scope[name] = value
                break
    for name, keys in (("entity_id", user_keys), ("session_id", session_keys)):
        if name in scope:
            continue
        found = (
            _named(source, key) for key in keys for source in (context, configurable, metadata)
        )
        if (value := next((v for v in found if v is not None), None)) is not None:
            scope[name] = value
    return scope


@dataclass(frozen=True)
class Prepared:
    """One call's messages with memory context placed, and what capture needs later.

    ``capture`` is false when the call must not be captured (`capture_skipped`: the skip
    switch or an internal call; or a ``MemoryChatMessageHistory`` of the same memory
    stores the run's messages already).
    """

    messages: list[BaseMessage]
    original: list[BaseMessage]
    context: MemoryContext
    scope: dict[str, str]
    capture: bool = True


class MemoryBridge:
    """Recall, render, place and capture for one adapter, under its defaults.

    Args:
        memory: The store; None for the shared default ``Memory()``.
        entity_id: Default entity (else the memory's own default).
        process_id: Default process.
        session_id: Default session recorded on captured turns.
        k: Memories recalled per call.
        token_budget: Tokens the memory-context block may take.
        position: ``"append"`` to the leading system message or ``"insert"`` one.
        capture_mode: ``"fast"``/``"fine"`` for captured turns; None: the memory's default.
        strict: Raise memory failures instead of logging and counting them.
        recent_turns: Most messages of the block's recent-conversation stage (only
            conversation the call does not carry; 0: none).
        open_items: Most of the entity's open decisions and action items the block
            keeps room for (0: only those recall returns).
        context_hint: Steer recall with the conversation before the question.
        session_history: The session's earlier messages the call lacks read for the
            recent stage (0: none; needs a session id).
        stats: Counters to share; a new set when None.
        user_keys: Keys naming the user (the entity) in a run's context, configurable
            or metadata (see `scope_from`).
        session_keys: Keys naming the session there.
        require_user: Refuse (``InvalidInputError``) a call that names no entity, neither
            through the run nor through ``entity_id`` here.
    """

    def __init__(
        self,
        memory: Memory | None,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int = DEFAULT_K,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        position: Position = "append",
        capture_mode: str | None = None,
        strict: bool = False,
        recent_turns: int = DEFAULT_RECENT_TURNS,
        open_items: int = DEFAULT_OPEN_ITEMS,
        context_hint: bool = True,
        session_history: int = 0,
        stats: AdapterStats | None = None,
        user_keys: Sequence[str] = USER_KEYS,
        session_keys: Sequence[str] = SESSION_KEYS,
        require_user: bool = False,
    ) -> None:
        self.memory = memory if memory is not None else default_memory()
        options = AdapterOptions(
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            position=position,
            capture_mode=capture_mode,
            strict=strict,
            recent_turns=recent_turns,
            open_items=open_items,
            context_hint=context_hint,
            session_history=session_history,
        )
        self.binding = Binding(self.memory, options, source=SOURCE, stats=stats, logger=log)
        self.user_keys = tuple(user_keys)
        self.session_keys = tuple(session_keys)
        self.require_user = require_user
        self._warned_default = False

    # The options, read from the binding (one set of defaults: memtrellis.binding).
    @property
    def options(self) -> AdapterOptions:
        """The adapter options (entity/process/session, ``k``, budget, position...)."""
        return self.binding.options

    @property
    def defaults(self) -> dict[str, str]:
        """The entity, process and session given to this adapter."""
        return self.binding.options.scope

    @property
    def k(self) -> int:
        """Memories recalled per call."""
        return self.binding.options.k

    @property
    def token_budget(self) -> int:
        """Tokens the memory-context block may take."""
        return self.binding.options.token_budget

    @property
    def position(self) -> Position:
        """Where the block goes in the messages."""
        return self.binding.options.position

    @property
    def capture_mode(self) -> str | None:
        """Extraction mode of captured turns."""
        return self.binding.options.capture_mode

    @property
    def strict(self) -> bool:
        """Whether memory failures raise."""
        return self.binding.options.strict

    @property
    def stats(self) -> AdapterStats:
        """What this adapter did with memory."""
        return self.binding.stats

    def named(
        self,
        metadata: Mapping[str, Any] | None = None,
        *,
        configurable: Mapping[str, Any] | None = None,
        context: Any = None,
    ) -> dict[str, str]:
        """What the run itself names (no defaults): see `scope_from`."""
        return scope_from(
            metadata,
            configurable=configurable,
            context=context,
            user_keys=self.user_keys,
            session_keys=self.session_keys,
        )

    def scope(
        self,
        metadata: Mapping[str, Any] | None = None,
        *,
        configurable: Mapping[str, Any] | None = None,
        context: Any = None,
    ) -> dict[str, str]:
        """Defaults overridden by what the run names (its metadata, configurable, context)."""
        return {
            **self.defaults,
            **self.named(metadata, configurable=configurable, context=context),
        }

    def check_user(self, scope: Mapping[str, str]) -> None:
        """Refuse a scope without entity when ``require_user``; else warn once when its
        turns fall into the ``default`` entity."""
        if "entity_id" in scope:
            return
        if self.require_user:
            keys = ", ".join(repr(k) for k in self.user_keys)
            raise InvalidInputError(
                "this call names no user, and require_user=True: name one with "
                f'config={{"configurable": {{"user_id": ...}}}} (keys read: {keys}), a '
                "LangGraph context with user_id, metadata memtrellis_entity_id, or "
                "entity_id= on the adapter"
            )
        if self._warned_default or self.memory.default_scope.entity_id != DEFAULT_ENTITY:
            return
        self._warned_default = True
        log.warning(
            "memtrellis: a call named no user, so its memories go to the shared %r entity; "
            'name the user with config={"configurable": {"user_id": ...}} or a LangGraph '
            "context with user_id (keys read: %s), or pass entity_id=; require_user=True "
            "refuses such calls (this warning is logged once)",
            DEFAULT_ENTITY,
            ", ".join(self.user_keys),
        )

    # -- failures ------------------------------------------------------------------------
    def failed(
        self,
        what: Literal["recall", "capture"],
        exc: BaseException,
        *,
        kind: Step | None = None,
    ) -> None:
        """Count a memory failure here and in ``Memory.health()``; log it, or raise it when
        strict. ``kind``: what ``Memory.report_failure`` is told, when not ``what``."""
        self.binding.failed(kind or what, exc, what=what)

    # -- before the model ----------------------------------------------------------------
    def _query(self, messages: Sequence[BaseMessage]) -> str | None:
        return last_user_text(messages)

    def _conversation(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        """The run's messages as dicts, without those LangChain wrote itself."""
        return [to_dict(m) for m in messages if not is_synthetic(m)]

    def _placed(
        self,
        messages: Sequence[BaseMessage],
        scope: dict[str, str],
        context: MemoryContext,
        metadata: Mapping[str, Any] | None = None,
    ) -> Prepared:
        original = list(messages)
        placed = place(original, context, self.position)
        return Prepared(placed, original, context, scope, self.captures(metadata))

    def captures(self, metadata: Mapping[str, Any] | None = None) -> bool:
        """Whether the current call is to be captured: not when its metadata asks to skip
        it or marks an internal call, nor when a ``MemoryChatMessageHistory`` on this
        memory already stores the run's messages."""
        return not capture_skipped(None, metadata) and not history_stores(self.memory)

    def prepare(
        self,
        messages: Sequence[BaseMessage],
        metadata: Mapping[str, Any] | None = None,
        *,
        scope: dict[str, str] | None = None,
    ) -> Prepared:
        """Recall for the last user message and place the memory context (the
        binding's stages: the run's earlier messages steer recall, and the recent stage
        holds only the session's turns they lack)."""
        scope = self.scope(metadata) if scope is None else scope
        self.check_user(scope)
        said = self._conversation(messages)
        context = self.binding.context(self._query(messages), scope, messages=said)
        return self._placed(messages, scope, context, metadata)

    async def aprepare(
        self,
        messages: Sequence[BaseMessage],
        metadata: Mapping[str, Any] | None = None,
        *,
        scope: dict[str, str] | None = None,
    ) -> Prepared:
        """Async `prepare`: recall runs off the event loop (``Memory.arecall``)."""
        scope = self.scope(metadata) if scope is None else scope
        self.check_user(scope)
        said = self._conversation(messages)
        context = await self.binding.acontext(self._query(messages), scope, messages=said)
        return self._placed(messages, scope, context, metadata)

    # -- after the model -----------------------------------------------------------------
    def _turn(
        self, messages: Sequence[BaseMessage], reply: BaseMessage | None, whole: bool = False
    ) -> list[dict[str, Any]] | None:
        try:
            return new_turn(messages, reply, whole=whole)
        except Exception as exc:
            self.failed("capture", exc)
            return None

    def capture(
        self,
        messages: Sequence[BaseMessage],
        reply: BaseMessage | None,
        scope: dict[str, str] | None = None,
        *,
        whole: bool = False,
    ) -> str | None:
        """Queue the turn for the background worker; returns its capture id (or None).
        ``whole``: every message is new (a run's turn, see `new_turn`)."""
        scope = self.scope() if scope is None else scope
        self.check_user(scope)
        turn = self._turn(messages, reply, whole)
        return self.binding.capture(turn, scope) if turn else None

    async def acapture(
        self,
        messages: Sequence[BaseMessage],
        reply: BaseMessage | None,
        scope: dict[str, str] | None = None,
        *,
        whole: bool = False,
    ) -> str | None:
        """Async `capture` (``Memory.acapture`` only spools, so it is quick)."""
        scope = self.scope() if scope is None else scope
        self.check_user(scope)
        turn = self._turn(messages, reply, whole)
        return await self.binding.acapture(turn, scope) if turn else None
