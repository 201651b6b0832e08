"""One patched SDK call: recall, place memory context, call the original, capture.

The steps are written once (`Call`); a sync and an async method differ only in
the recall they run (``Memory.recall`` or ``Memory.arecall``). A whole response is
captured at once; a stream is handed back wrapped (`memtrellis.clients.streams`)
and captured when it ends. Every memory failure is counted in ``Memory.health()`` and
logged, and the user's call goes on without memory, unless the registration is strict:
the adapter binding's steps and fail-open (`memtrellis.binding`), as every adapter has.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from memtrellis._host import MemoryHost
from memtrellis.binding import AdapterOptions, Binding, Step
from memtrellis.clients.payload import Collector, Reply, capture_metadata, given
from memtrellis.clients.streams import (
    AsyncCapturingManager,
    CapturingManager,
    wrap_stream,
)
from memtrellis.context import MemoryContext
from memtrellis.types import utcnow

__all__ = ["Api", "Call", "Collector", "Kind", "Settings", "patched_method"]


#: ``call``: returns a response or a ``stream=True`` stream; ``stream``: always returns a
#: stream (Google's ``generate_content_stream``, Bedrock's ``converse_stream``);
#: ``manager``: returns a stream manager (a context manager that opens the stream), like
#: Anthropic's ``stream``.
Kind = Literal["call", "stream", "manager"]


def wrap_whole(response: Any, wrap: Callable[[Any], Any]) -> Any:
    """The stream a streaming call returned is the response itself: wrap it."""
    return wrap(response)


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
        is_async: The methods are coroutines (None: as the client is, sync or async);
            for clients that hold both, such as Google's ``models`` and ``aio.models``.
        model_arg: The request argument that names the model (Bedrock: ``modelId``).
        positional: Names of the arguments a method takes positionally, in order
            (Ollama's ``chat(model, messages)``), read as keyword arguments.
        stream_of: The response with its stream wrapped by the function given, for
            APIs whose stream sits inside the response (Bedrock: ``response["stream"]``).
        endpoint: ``(provider, endpoint)`` of a client (None: by its ``base_url``,
            `memtrellis.clients.endpoints.client_endpoint`).
        routed: The provider a request itself names (LiteLLM's ``"anthropic/..."``
            models), recorded over the client's when the reply names none.
    """

    provider: str
    name: str
    path: tuple[str, ...]
    methods: Mapping[str, Kind]
    conversation: Callable[[Mapping[str, Any]], list[dict[str, Any]]]
    place: Callable[[dict[str, Any], MemoryContext], dict[str, Any]]
    reply: Callable[[Any], Reply | None]
    collector: Callable[[], Collector]
    is_async: bool | None = None
    model_arg: str = "model"
    positional: tuple[str, ...] = ()
    stream_of: Callable[[Any, Callable[[Any], Any]], Any] = wrap_whole
    endpoint: Callable[[Any], tuple[str, str | None]] | None = None
    routed: Callable[[Mapping[str, Any]], str | None] | None = None


@dataclass
class Settings:
    """What one registration asks of memory (see ``Memory.register``): its checked
    `AdapterOptions` (scope, ``k``, budget, capture mode, strictness, the block's stages)."""

    memory: MemoryHost
    options: AdapterOptions = field(default_factory=AdapterOptions)

    @functools.cached_property
    def binding(self) -> Binding:
        """The adapter binding of this registration (counted as source ``"client"``)."""
        return Binding(self.memory, self.options, source="client")


class Call:
    """The memory steps of one call of a patched method (no I/O of its own).

    The steps are the adapter binding's (`memtrellis.binding.Binding`); this class
    only reads the SDK's request and reply (`Api`).
    """

    def __init__(
        self,
        settings: Settings,
        api: Api,
        client: Any,
        kwargs: dict[str, Any],
        stream: bool,
        is_async: bool = False,
    ) -> None:
        self.settings = settings
        self.memory = settings.memory
        self.binding = settings.binding
        self.api = api
        self.client = client
        self.kwargs = kwargs
        self.stream = stream
        self.is_async = is_async
        # Per call (Memory.scope) over per registration; the memory's defaults under both.
        self.scope = self.binding.scope(self.memory.call_scope())
        self.started_at = utcnow()
        self._started = time.perf_counter()
        self.binding.count("call")
        try:
            self.conversation = api.conversation(kwargs)
        except Exception as exc:
            self.conversation = []
            self.failed("recall", exc)

    def failed(self, what: Step, exc: BaseException) -> None:
        """Count and log a memory failure; raise it instead when the registration is strict."""
        self.binding.failed(what, exc, what=f"{what} for {self.api.provider}.{self.api.name}")

    # -- before the call -----------------------------------------------------------------
    def recall_args(self) -> dict[str, Any] | None:
        """Arguments of the recall for this call; None when there is no user text."""
        return self.binding.recall_args(self.binding.query(self.conversation), self.scope)

    def placed(self, context: MemoryContext) -> dict[str, Any]:
        """The keyword arguments to send: ``context`` placed when there is any."""
        if context.empty:
            return self.kwargs
        try:
            return self.api.place(self.kwargs, context)
        except Exception as exc:
            self.failed("context", exc)
            return self.kwargs

    def prepare(self) -> dict[str, Any]:
        """Recall (``Memory.recall``) and place (the binding's stages: the request's own
        earlier turns steer recall and are never placed again)."""
        query = self.binding.query(self.conversation)
        return self.placed(self.binding.context(query, self.scope, messages=self.conversation))

    async def aprepare(self) -> dict[str, Any]:
        """Async `prepare`: recall runs off the event loop (``Memory.arecall``)."""
        query = self.binding.query(self.conversation)
        context = await self.binding.acontext(query, self.scope, messages=self.conversation)
        return self.placed(context)

    # -- after the call ------------------------------------------------------------------
    def finish(self, response: Any) -> Any:
        """Capture a whole response now, or hand back a stream that captures at its end."""
        if self.stream:
            collector = self.api.collector()

            def wrap(stream: Any) -> Any:
                return wrap_stream(stream, collector, self.capture, asynchronous=self.is_async)

            try:
                return self.api.stream_of(response, wrap)
            except Exception as exc:
                self.failed("capture", exc)
                return response
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
            answer = reply.message()
            turn = self.binding.turn(self.conversation, answer)
            if not turn:
                return
            metadata = capture_metadata(
                provider=self.api.provider,
                api=self.api.name,
                client=self.client,
                requested_model=self.kwargs.get(self.api.model_arg),
                endpoint=self.api.endpoint,
                routed=self.api.routed(self.kwargs) if self.api.routed else None,
                reply=reply,
                started_at=self.started_at,
                latency_ms=(time.perf_counter() - self._started) * 1000.0,
                stream=self.stream,
            )
        except Exception as exc:
            self.failed("capture", exc)
            return
        what = f"capture for {self.api.provider}.{self.api.name}"
        self.binding.capture(turn, self.scope, metadata=metadata, what=what)


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

    def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], Call]:
        if api.positional and args:  # read as keywords, so that recall sees them
            named = dict(zip(api.positional, args, strict=False))
            kwargs = {**named, **kwargs}
            args = args[len(named) :]
        stream = kind in ("manager", "stream") or given(kwargs.get("stream")) is True
        return args, Call(settings(), api, client, kwargs, stream, is_async)

    method: Callable[..., Any]
    if kind == "manager" and is_async:

        def method(*args: Any, **kwargs: Any) -> Any:
            args, call = begin(args, kwargs)

            async def open_stream() -> Any:
                return original(*args, **await call.aprepare())

            return AsyncCapturingManager(open_stream, call.capture_snapshot)

    elif kind == "manager":

        def method(*args: Any, **kwargs: Any) -> Any:
            args, call = begin(args, kwargs)
            return CapturingManager(
                lambda: original(*args, **call.prepare()), call.capture_snapshot
            )

    elif is_async:

        async def method(*args: Any, **kwargs: Any) -> Any:
            args, call = begin(args, kwargs)
            sent = await call.aprepare()
            return call.finish(await original(*args, **sent))

    else:

        def method(*args: Any, **kwargs: Any) -> Any:
            args, call = begin(args, kwargs)
            return call.finish(original(*args, **call.prepare()))

    wrapped = functools.wraps(original)(method)
    wrapped.__memtrellis_original__ = original  # type: ignore[attr-defined]
    return wrapped
