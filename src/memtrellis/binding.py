"""The adapter binding: what every framework adapter does with memory, written once.

An adapter (an SDK client patch, LangChain, LlamaIndex, a third party's) puts memory
into a model call the same way: recall for the last user message, render the recalled
memories as a memory-context block within a token budget, place the block where the
model reads instructions, and capture the turn after the reply. A memory failure on the
way is counted and logged, and the call goes on without memory (fail-open), unless the
adapter is strict. This module holds those steps on neutral message dicts
(``{"role": ..., "content": ...}``); a framework package only translates its message
types to and from them. It does no I/O of its own: every memory operation goes through
the ``Memory`` it is given (sync and async twins), so the same steps serve sync and
async calls.

* `AdapterOptions`: whose memory (entity, process, session), how much of it (``k``,
  ``token_budget``), where it goes (``position``), how turns are captured
  (``capture_mode``), whether failures raise (``strict``) and the block's later stages
  (``recent_turns``, ``open_items``, ``context_hint``, ``session_history``); the one
  set of defaults (defined in `memtrellis.adapter_options`, re-exported here).
* `AdapterStats`: what one adapter did (recalls, blocks placed, captures, failures).
* `Binding`: the steps and the one fail-open rule, counting in ``Memory.health()``.

One token budget: recall returns ranked memories (``k`` of them) and `build_context`
alone budgets them, counting the lines the model is shown.

One rule for the recent-conversation stage, for every adapter (`Binding.gather`): it
shows only conversation the model call does not carry, the session's earlier turns the
request lacks (``session_history``, opt-in), never a message already in the prompt. The
prompt's earlier turns still steer recall (``context_hint``), unrendered.

Examples:
    >>> import tempfile
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
    >>> _ = memory.add("Alice is allergic to peanuts", entity_id="alice")
    >>> binding = Binding(memory, AdapterOptions(entity_id="alice"), source="demo")
    >>> sent = [{"role": "user", "content": "A snack without peanuts?"}]
    >>> context = binding.context(binding.query(sent), binding.scope())
    >>> placed = binding.place(sent, context).messages
    >>> placed[0]["role"], "allergic to peanuts" in placed[0]["content"]
    ('system', True)
    >>> turn = binding.turn(sent, {"role": "assistant", "content": "Try an apple."})
    >>> binding.capture(turn, binding.scope()) is not None
    True
    >>> binding.stats.as_dict()["captured"], memory.health().adapter_counts["demo.capture"]
    (1, 1)
    >>> memory.close()
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from memtrellis._host import MemoryHost
from memtrellis.adapter_options import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
    AdapterOptions,
    AdapterStats,
    Position,
    Step,
)
from memtrellis.context import (
    MemoryContext,
    Placement,
    build_context,
    conversation_hint,
    last_user_text,
    new_turn,
    place_in_messages,
)
from memtrellis.session_history import (
    carried,
    history_request,
    missing_turns,
    same_words,
)
from memtrellis.tool_calls import without_memory_tools
from memtrellis.types import MemoryItem, RecallResult

__all__ = [
    "DEFAULT_K",
    "DEFAULT_OPEN_ITEMS",
    "DEFAULT_RECENT_TURNS",
    "DEFAULT_TOKEN_BUDGET",
    "AdapterOptions",
    "AdapterStats",
    "Binding",
    "MemoryDoors",
    "Position",
    "Stages",
    "Step",
]

log = logging.getLogger("memtrellis")

EMPTY = MemoryContext("", 0, 0)


#: The public ``Memory`` methods a binding uses: the doors every adapter may use
#: (``memtrellis._host.MemoryHost``; ``Memory`` has them all).
MemoryDoors = MemoryHost


@dataclass(frozen=True)
class Stages:
    """What one call's memory-context block is built from (`Binding.gather`).

    Attributes:
        result: The recall (None: no query, or recall failed open).
        open_items: The entity's open decisions and action items, recalled or not.
        recent: The conversation the call does not carry (the session's earlier turns
            the request lacks), oldest first; never a message of the prompt.
        carried: The words of the messages the call carries
            (`memtrellis.session_history.carried`): a memory whose text is one of them
            is not rendered again.

    Examples:
        >>> Stages(None).result is None, Stages(None).recent
        (True, ())
    """

    result: RecallResult | None
    open_items: tuple[MemoryItem, ...] = ()
    recent: tuple[dict[str, str], ...] = ()
    carried: frozenset[str] = frozenset()


NOTHING = Stages(None)


class Binding:
    """Recall, render, place and capture for one adapter, failing open.

    Args:
        memory: The ``Memory`` (anything with the `MemoryDoors`).
        options: The adapter's `AdapterOptions`.
        source: The adapter's short stable name, as ``Memory.health()`` counts it
            (``"client"``, ``"langchain"``, ``"llama_index"``...).
        stats: Counters to share; a new `AdapterStats` when None.
        logger: Where failures are logged (default: the ``memtrellis`` logger).

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> binding = Binding(memory, AdapterOptions(strict=False), source="demo")
        >>> with binding.guard("recall"):
        ...     raise TimeoutError("store offline")
        >>> binding.stats.last_error, memory.health().adapter_failures
        ('recall: TimeoutError: store offline', {'demo.recall': 1})
        >>> memory.close()
    """

    def __init__(
        self,
        memory: MemoryDoors,
        options: AdapterOptions | None = None,
        *,
        source: str,
        stats: AdapterStats | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.memory = memory
        self.options = options if options is not None else AdapterOptions()
        self.source = source
        self.stats = stats if stats is not None else AdapterStats()
        self.log = logger or log

    # -- scope -------------------------------------------------------------------------
    def scope(self, named: Mapping[str, str] | None = None) -> dict[str, str]:
        """The adapter's entity/process/session, overridden by what the call names."""
        return {**self.options.scope, **(named or {})}

    # -- counting and failing open --------------------------------------------------------
    def count(self, event: Literal["call", "capture"]) -> None:
        """Count a call or a capture in ``Memory.health().adapter_counts``."""
        try:
            self.memory.count_adapter(event, source=self.source)
        except Exception:  # counting never breaks the user's call
            self.log.debug("memtrellis: could not count an adapter %s", event, exc_info=True)

    def failed(self, step: Step, exc: BaseException, *, what: str | None = None) -> None:
        """Count a failure here and in ``Memory.health()``; log it, or raise it when strict.

        ``what`` names the failed work in the log (default: the step).
        """
        self.stats.failed(step, exc)
        self.memory.report_failure(step, source=self.source, error=exc)
        if self.options.strict:
            raise exc
        self.log.warning(
            "memtrellis %s failed (%s); the call goes on without memory: %r",
            what or step,
            self.source,
            exc,
            exc_info=self.log.isEnabledFor(logging.DEBUG),
        )

    @contextmanager
    def guard(self, step: Step, *, what: str | None = None) -> Iterator[None]:
        """Run the block; a failure in it is `failed` (raised again only when strict)."""
        try:
            yield
        except Exception as exc:
            self.failed(step, exc, what=what)

    # -- before the model ---------------------------------------------------------------
    @staticmethod
    def query(messages: Sequence[Mapping[str, Any]]) -> str | None:
        """What recall searches with: the last user message's text without memory context."""
        return last_user_text(messages)

    def hint(self, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """The conversation before the question, to steer recall (`conversation_hint`);
        None when it opens the conversation or the options turn hints off."""
        if not self.options.context_hint:
            return None
        try:
            return conversation_hint(messages)
        except Exception:  # a hint only steers: never a reason to fail the call
            self.log.debug("memtrellis: no conversation hint", exc_info=True)
            return None

    def recall_args(
        self, query: str | None, scope: Mapping[str, str], *, hint: str | None = None
    ) -> dict[str, Any] | None:
        """``Memory.recall`` arguments for ``query``; None without a query.

        Recall spans sessions (the session is left out) and takes no token budget: it
        returns ``k`` ranked memories and `render` alone budgets them. ``hint``: the
        conversation before the question (``context_hint``).
        """
        if query is None or not query.strip():
            return None
        where = {n: v for n, v in scope.items() if n != "session_id"}
        args: dict[str, Any] = {"query": query, "k": self.options.k, **where}
        if hint is not None and hint.strip():
            args["context_hint"] = hint
        return args

    def recall(
        self, query: str | None, scope: Mapping[str, str], *, hint: str | None = None
    ) -> RecallResult | None:
        """Recall for ``query`` (None: no query, or recall failed open)."""
        args = self.recall_args(query, scope, hint=hint)
        if args is None:
            return None
        self.stats.count("recalls")
        try:
            return self.memory.recall(**args)
        except Exception as exc:
            self.failed("recall", exc)
            return None

    async def arecall(
        self, query: str | None, scope: Mapping[str, str], *, hint: str | None = None
    ) -> RecallResult | None:
        """Async `recall` (``Memory.arecall``: off the event loop)."""
        args = self.recall_args(query, scope, hint=hint)
        if args is None:
            return None
        self.stats.count("recalls")
        try:
            return await self.memory.arecall(**args)
        except Exception as exc:
            self.failed("recall", exc)
            return None

    def _open_args(self, scope: Mapping[str, str]) -> dict[str, Any] | None:
        if not self.options.open_items or not hasattr(self.memory, "open_items"):
            return None
        where = {n: v for n, v in scope.items() if n != "session_id"}
        return {"limit": self.options.open_items, **where}

    def open_items(self, scope: Mapping[str, str]) -> list[MemoryItem]:
        """The entity's open decisions and action items (``Memory.open_items``) that the
        block keeps room for; ``[]`` when the options say none or reading failed open."""
        args = self._open_args(scope)
        if args is None:
            return []
        try:
            return list(self.memory.open_items(**args))
        except Exception as exc:
            self.failed("recall", exc, what="open items")
            return []

    async def aopen_items(self, scope: Mapping[str, str]) -> list[MemoryItem]:
        """Async `open_items` (``Memory.aopen_items``: off the event loop)."""
        args = self._open_args(scope)
        if args is None:
            return []
        try:
            return list(await self.memory.aopen_items(**args))
        except Exception as exc:
            self.failed("recall", exc, what="open items")
            return []

    def _history_request(
        self, scope: Mapping[str, str], messages: Sequence[Mapping[str, Any]]
    ) -> tuple[dict[str, Any], int] | None:
        found = history_request(scope, messages, self.options.session_history)
        if found is None or not self.options.recent_turns:
            return None
        args, limit = found
        return args, min(limit, self.options.recent_turns)

    def history(
        self,
        scope: Mapping[str, str],
        messages: Sequence[Mapping[str, Any]],
        sent: frozenset[str] | None = None,
    ) -> list[dict[str, str]]:
        """The session's earlier turns that ``messages`` (the call's) lack, the newest
        ``recent_turns`` of them, for the block's recent-conversation stage
        (``Memory.session_turns``); ``[]`` when session history is off
        (`memtrellis.session_history`), there is no session, or reading failed open.
        ``sent``: `carried` of ``messages``, when the caller has it already."""
        found = self._history_request(scope, messages)
        if found is None:
            return []
        args, limit = found
        try:
            return missing_turns(self.memory.session_turns(**args), messages, limit, sent)
        except Exception as exc:
            self.failed("recall", exc, what="session history")
            return []

    async def ahistory(
        self,
        scope: Mapping[str, str],
        messages: Sequence[Mapping[str, Any]],
        sent: frozenset[str] | None = None,
    ) -> list[dict[str, str]]:
        """Async `history` (``Memory.asession_turns``: off the event loop)."""
        found = self._history_request(scope, messages)
        if found is None:
            return []
        args, limit = found
        try:
            turns = await self.memory.asession_turns(**args)
            return missing_turns(turns, messages, limit, sent)
        except Exception as exc:
            self.failed("recall", exc, what="session history")
            return []

    def gather(
        self,
        query: str | None,
        scope: Mapping[str, str],
        messages: Sequence[Mapping[str, Any]] = (),
    ) -> Stages:
        """What the block for ``query`` is built from: the session's turns ``messages``
        (the conversation the call carries, as message dicts) lack, recall steered by the
        hint of ``messages`` (`hint`), and the entity's open items. Nothing is read
        without a query."""
        if query is None or not query.strip():
            return NOTHING
        sent = carried(messages)
        recent = self.history(scope, messages, sent)
        result = self.recall(query, scope, hint=self.hint(messages))
        if result is None:
            return NOTHING
        return Stages(result, tuple(self.open_items(scope)), tuple(recent), sent)

    async def agather(
        self,
        query: str | None,
        scope: Mapping[str, str],
        messages: Sequence[Mapping[str, Any]] = (),
    ) -> Stages:
        """Async `gather` (every read off the event loop)."""
        if query is None or not query.strip():
            return NOTHING
        sent = carried(messages)
        recent = await self.ahistory(scope, messages, sent)
        result = await self.arecall(query, scope, hint=self.hint(messages))
        if result is None:
            return NOTHING
        opened = tuple(await self.aopen_items(scope))
        return Stages(result, opened, tuple(recent), sent)

    def render(
        self,
        stages: Stages,
        *,
        exclude: Collection[str] = (),
        token_budget: int | None = None,
    ) -> MemoryContext:
        """The memory-context block of ``stages`` within ``token_budget`` (default: the
        options'; a smaller one re-renders a block that must shrink), in stages: facts,
        excerpts, open items (the entity's, recalled or not), recent conversation (only
        what the call lacks: `gather`).

        A memory whose text is a message the call carries (``stages.carried``) or one of
        ``exclude`` is left out: the prompt has it. An empty block when there is nothing
        to place or rendering failed.
        """
        budget = self.options.token_budget if token_budget is None else token_budget
        result = stages.result
        if result is None:
            return EMPTY
        open_items: Sequence[MemoryItem] = stages.open_items
        try:
            said = stages.carried | {same_words(text) for text in exclude}
            if said:
                kept = [hit for hit in result.items if same_words(hit.memory.text) not in said]
                if len(kept) < len(result.items):
                    result = result.model_copy(update={"items": kept})
                open_items = [item for item in open_items if same_words(item.text) not in said]
            context = build_context(
                result,
                token_budget=budget,
                open_items=list(open_items),
                recent=list(stages.recent),
                now=result.as_of,
            )
        except Exception as exc:
            self.failed("context", exc)
            return EMPTY
        if not context.empty:
            self.stats.count("placed")
        return context

    def context(
        self,
        query: str | None,
        scope: Mapping[str, str],
        *,
        exclude: Collection[str] = (),
        messages: Sequence[Mapping[str, Any]] = (),
    ) -> MemoryContext:
        """`gather` then `render`: the block for ``query`` in a call carrying ``messages``
        (the conversation the question ends, as message dicts, when the adapter has it)."""
        return self.render(self.gather(query, scope, messages), exclude=exclude)

    async def acontext(
        self,
        query: str | None,
        scope: Mapping[str, str],
        *,
        exclude: Collection[str] = (),
        messages: Sequence[Mapping[str, Any]] = (),
    ) -> MemoryContext:
        """Async `context`."""
        return self.render(await self.agather(query, scope, messages), exclude=exclude)

    def place(self, messages: Sequence[Mapping[str, Any]], context: MemoryContext) -> Placement:
        """``messages`` (dicts; not changed) with the block placed at ``position``."""
        return place_in_messages(messages, context, position=self.options.position)

    # -- after the model ----------------------------------------------------------------
    @staticmethod
    def turn(
        messages: Sequence[Mapping[str, Any]], reply: Mapping[str, Any] | None
    ) -> list[dict[str, Any]]:
        """What the call added to the conversation, and the reply (`new_turn`)."""
        return new_turn(messages, reply)

    def capture_args(
        self,
        turn: Sequence[Mapping[str, Any]],
        scope: Mapping[str, str],
        *,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
    ) -> dict[str, Any]:
        """``Memory.capture`` arguments for ``turn``."""
        args: dict[str, Any] = {"data": list(turn), "mode": self.options.capture_mode, **scope}
        if metadata is not None:
            args["metadata"] = metadata
        if tags:
            args["tags"] = list(tags)
        return args

    def capture(
        self,
        turn: Sequence[Mapping[str, Any]],
        scope: Mapping[str, str],
        *,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        what: str | None = None,
    ) -> str | None:
        """Queue ``turn`` for the background worker; its capture id, or None (an empty
        turn, or capture failed open). ``what`` names the capture in a failure's log.
        Calls of memtrellis's own memory tools and their results are left out
        (`memtrellis.tool_calls.without_memory_tools`), whichever adapter built the turn."""
        turn = without_memory_tools(turn)
        if not turn:
            return None
        try:
            capture_id = self.memory.capture(
                **self.capture_args(turn, scope, metadata=metadata, tags=tags)
            )
        except Exception as exc:
            self.failed("capture", exc, what=what)
            return None
        self._captured()
        return capture_id

    async def acapture(
        self,
        turn: Sequence[Mapping[str, Any]],
        scope: Mapping[str, str],
        *,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        what: str | None = None,
    ) -> str | None:
        """Async `capture` (``Memory.acapture`` only spools, so it is quick)."""
        turn = without_memory_tools(turn)
        if not turn:
            return None
        try:
            capture_id = await self.memory.acapture(
                **self.capture_args(turn, scope, metadata=metadata, tags=tags)
            )
        except Exception as exc:
            self.failed("capture", exc, what=what)
            return None
        self._captured()
        return capture_id

    def _captured(self) -> None:
        self.stats.count("captured")
        self.count("capture")
