"""One patched SDK call: recall, place memory context, call the original, capture.

The steps are written once (`Call`); a sync and an async method differ only in
the recall they run (``Memory.recall`` or ``Memory.arecall``). A whole response is
captured at once; a stream is handed back wrapped (`memtrellis.clients.streams`)
and captured when it ends. Every memory failure is counted in ``Memory.health()`` and
logged, and the user's call goes on without memory, unless the registration is strict.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from memtrellis._host import MemoryHost
from memtrellis.clients.payload import Collector, Reply, capture_metadata, given
from memtrellis.clients.streams import (
    AsyncCapturingManager,
    CapturingManager,
    wrap_stream,
)
from memtrellis.context import DEFAULT_TOKEN_BUDGET, MemoryContext, build_context
from memtrellis.context.turn import last_user_text, new_turn
from memtrellis.types import RecallResult, utcnow

__all__ = ["Api", "Call", "Collector", "Kind", "Settings", "patched_method"]

log = logging.getLogger("memtrellis")

#: ``call``: returns a response or a ``stream=True`` stream; ``manager``: returns a
#: stream manager (a context manager that opens the stream), like Anthropic's ``stream``.
Kind = Literal["call", "manager"]


@dataclass(frozen=True)
class Api:
    """One API of an SDK as the patch sees it.

    Attributes:
        provider: ``"openai"`` or ``"anthropic"``, as recorded in captured metadata.
        name: The API's name, e.g. ``"chat.completions"``.
        path: Attributes leading from the client to the resource object.
        methods: Patched method names and their `Kind`.
        conversation: The request's messages as text dicts (for recall and capture).
        place: The request's keyword arguments with memory context placed.
        reply: A whole response as a `Reply` (None if not recognised).
        collector: A new `Collector` for a ``stream=True`` stream.
    """

    provider: str
    name: str
    path: tuple[str, ...]
    methods: Mapping[str, Kind]
    conversation: Callable[[Mapping[str, Any]], list[dict[str, Any]]]
    place: Callable[[dict[str, Any], MemoryContext], dict[str, Any]]
    reply: Callable[[Any], Reply | None]
    collector: Callable[[], Collector]


@dataclass
class Settings:
    """What one registration asks of memory (see ``Memory.register``)."""

    memory: MemoryHost
    scope: dict[str, str] = field(default_factory=dict)
    k: int = 8
    token_budget: int = DEFAULT_TOKEN_BUDGET
    capture_mode: str | None = None
    strict: bool = False


class Call:
    """The memory steps of one call of a patched method (no I/O of its own)."""

    def __init__(
        self, settings: Settings, api: Api, client: Any, kwargs: dict[str, Any], stream: bool
    ) -> None:
        self.settings = settings
        self.memory = settings.memory
        self.api = api
        self.client = client
        self.kwargs = kwargs
        self.stream = stream
        # Per call (Memory.scope) over per registration; the memory's defaults under both.
        self.scope = self.memory.current_scope(defaults=settings.scope).model_dump(
            exclude_none=True
        )
        self.started_at = utcnow()
        self._started = time.perf_counter()
        self.memory.count_client("client_calls")
        try:
            self.conversation = api.conversation(kwargs)
        except Exception as exc:
            self.conversation = []
            self.failed("recall", exc)

    def failed(self, what: Literal["recall", "capture"], exc: BaseException) -> None:
        """Count and log a memory failure; raise it instead when the registration is strict."""
        self.memory.count_client(f"client_{what}_failures")
        if self.settings.strict:
            raise exc
        log.warning(
            "memtrellis %s for %s.%s failed; the call goes on without it: %r",
            what,
            self.api.provider,
            self.api.name,
            exc,
        )

    # -- before the call -----------------------------------------------------------------
    def recall_args(self) -> dict[str, Any] | None:
        """Arguments of the recall for this call; None when there is no user text."""
        query = last_user_text(self.conversation)
        if query is None:
            return None
        where = {k: v for k, v in self.scope.items() if k != "session_id"}  # spans sessions
        return {
            "query": query,
            "k": self.settings.k,
            "token_budget": self.settings.token_budget,
            **where,
        }

    def placed(self, result: RecallResult | None) -> dict[str, Any]:
        """The keyword arguments to send: memory context placed when there is any."""
        if result is None:
            return self.kwargs
        try:
            context = build_context(result, token_budget=self.settings.token_budget)
            return self.kwargs if context.empty else self.api.place(self.kwargs, context)
        except Exception as exc:
            self.failed("recall", exc)
            return self.kwargs

    def prepare(self) -> dict[str, Any]:
        """Recall (``Memory.recall``) and place."""
        args = self.recall_args()
        result = None
        if args is not None:
            try:
                result = self.memory.recall(**args)
            except Exception as exc:
                self.failed("recall", exc)
        return self.placed(result)

    async def aprepare(self) -> dict[str, Any]:
        """Async `prepare`: recall runs off the event loop (``Memory.arecall``)."""
        args = self.recall_args()
        result = None
        if args is not None:
            try:
                result = await self.memory.arecall(**args)
            except Exception as exc:
                self.failed("recall", exc)
        return self.placed(result)

    # -- after the call ------------------------------------------------------------------
    def finish(self, response: Any) -> Any:
        """Capture a whole response now, or hand back a stream that captures at its end."""
        if self.stream:
            return wrap_stream(response, self.api.collector(), self.capture)
        try:
            reply = self.api.reply(response)
        except Exception as exc:
            self.failed("capture", exc)
            return response
        self.capture(reply)
        return response

    def capture_snapshot(self, stream: Any) -> None:
        """Capture what a stream manager's stream has gathered (its message snapshot)."""
        try:
            snapshot = stream.current_message_snapshot if stream is not None else None
        except Exception:  # nothing was received before the stream was left
            snapshot = None
        try:
            reply = self.api.reply(snapshot) if snapshot is not None else None
        except Exception as exc:
            self.failed("capture", exc)
            return
        self.capture(reply or Reply(complete=False))

    def capture(self, reply: Reply | None) -> None:
        """Queue the new messages and the reply for the background worker."""
        reply = reply or Reply()
        try:
            answer = {"role": "assistant", "content": reply.text} if reply.text else None
            turn = new_turn(self.conversation, answer)
            if not turn:
                return
            metadata = capture_metadata(
                provider=self.api.provider,
                api=self.api.name,
                client=self.client,
                requested_model=self.kwargs.get("model"),
                reply=reply,
                started_at=self.started_at,
                latency_ms=(time.perf_counter() - self._started) * 1000.0,
                stream=self.stream,
            )
            self.memory.capture(
                turn, mode=self.settings.capture_mode, metadata=metadata, **self.scope
            )
        except Exception as exc:
            self.failed("capture", exc)
            return
        self.memory.count_client("client_captures")


def patched_method(
    original: Callable[..., Any],
    *,
    api: Api,
    kind: Kind,
    is_async: bool,
    client: Any,
    settings: Callable[[], Settings],
) -> Callable[..., Any]:
    """The method that replaces ``original`` on a registered client's resource.

    ``settings`` is read on every call, so registering again changes what later calls do
    without wrapping twice.
    """

    def begin(kwargs: dict[str, Any]) -> Call:
        stream = kind == "manager" or given(kwargs.get("stream")) is True
        return Call(settings(), api, client, kwargs, stream)

    method: Callable[..., Any]
    if kind == "manager" and is_async:

        def method(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)

            async def open_stream() -> Any:
                return original(*args, **await call.aprepare())

            return AsyncCapturingManager(open_stream, call.capture_snapshot)

    elif kind == "manager":

        def method(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            return CapturingManager(
                lambda: original(*args, **call.prepare()), call.capture_snapshot
            )

    elif is_async:

        async def method(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            sent = await call.aprepare()
            return call.finish(await original(*args, **sent))

    else:

        def method(*args: Any, **kwargs: Any) -> Any:
            call = begin(kwargs)
            return call.finish(original(*args, **call.prepare()))

    wrapped = functools.wraps(original)(method)
    wrapped.__memtrellis_original__ = original  # type: ignore[attr-defined]
    return wrapped
