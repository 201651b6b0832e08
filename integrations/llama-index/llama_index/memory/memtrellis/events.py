"""``MemtrellisEventHandler``: capture chat turns from any LlamaIndex pipeline."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.exception import ExceptionEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatInProgressEvent,
    LLMChatStartEvent,
)
from llama_index_instrumentation import get_dispatcher
from llama_index_instrumentation.dispatcher import Dispatcher

from llama_index.memory.memtrellis._messages import (
    StreamedReply,
    internal_call,
    is_internal,
    new_turn,
)
from llama_index.memory.memtrellis._settings import TAGS, CaptureFields, given

__all__ = [
    "ENTITY_TAG",
    "PROCESS_TAG",
    "SESSION_TAG",
    "MemtrellisEventHandler",
    "handler_captures_into",
    "skip_capture",
]

#: Instrumentation tags that set the scope of the calls made inside them, e.g.
#: ``with instrument_tags({ENTITY_TAG: "bob"}): agent.run(...)`` in a multi-user server.
ENTITY_TAG = "memtrellis.entity_id"
PROCESS_TAG = "memtrellis.process_id"
SESSION_TAG = "memtrellis.session_id"


#: Handlers attached to a dispatcher now; the memory block leaves capture to them.
_ATTACHED: weakref.WeakValueDictionary[int, MemtrellisEventHandler] = weakref.WeakValueDictionary()


def handler_captures_into(memory: object) -> bool:
    """Whether an attached `MemtrellisEventHandler` captures into ``memory``.

    The memory block then captures nothing itself, so that no message is stored twice.

    Examples:
        >>> handler_captures_into(object())
        False
    """
    return any(
        handler.memory is memory and handler.attached for handler in list(_ATTACHED.values())
    )


def skip_capture() -> AbstractContextManager[None]:
    """Calls made inside ``with skip_capture():`` are not captured by any handler.

    For LLM calls that are not conversation, e.g. a query engine's answer synthesis with
    a chat model, whose prompt is a template filled with retrieved text.

    Examples:
        >>> with skip_capture():
        ...     pass  # query_engine.query(...)
    """
    return internal_call("skipped")


@dataclass
class _Call:
    """An LLM chat call seen starting and not yet ended."""

    messages: list[ChatMessage]
    reply: StreamedReply = field(default_factory=StreamedReply)
    tags: dict[str, Any] = field(default_factory=dict)


class MemtrellisEventHandler(CaptureFields, BaseEventHandler):
    """Capture every chat turn of a LlamaIndex pipeline through instrumentation events.

    ``LLMChatStartEvent`` opens a call under its span id, ``LLMChatInProgressEvent``
    collects the streamed text, and ``LLMChatEndEvent`` hands the turn (the user's new
    messages and the model's reply, memory context stripped) to ``Memory.capture``,
    which returns at once and extracts in the background. A reply that only calls tools
    waits for the final answer, so an agent's turn is captured once. Calls that the
    [`MemtrellisLLM`][llama_index.memory.memtrellis.MemtrellisLLM] wrapper already captures, and
    memtrellis' own extraction calls, are skipped.

    The scope comes from the handler's configuration; the instrumentation tags
    `ENTITY_TAG`, `PROCESS_TAG` and `SESSION_TAG` override it for the
    calls made inside ``instrument_tags(...)``.

    LlamaIndex's dispatcher drops whatever a handler raises, so capture is always
    fail-open here: failures are logged and counted in `failures`.

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Attributes:
        memory: The memtrellis [`Memory`][memtrellis.Memory] to capture into.
        entity_id: Whose memory (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        session_id: Session recorded on captured memories.
        mode: Extraction mode (``"fast"``/``"fine"``; default: fine when the ``Memory``
            has an LLM).
        max_open_calls: Calls tracked at once; the oldest is forgotten beyond it (a call
            whose stream was abandoned never ends).

    Examples:
        >>> import tempfile
        >>> from llama_index.core.llms import ChatMessage, MockLLM
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> handler = MemtrellisEventHandler(memory=memory, session_id="s1").attach()
        >>> _ = MockLLM().chat([ChatMessage(role="user", content="I live in Porto")])
        >>> handler.detach(); memory.flush()
        True
        >>> [(m.sources[0].role, m.scope.session_id) for m in memory.list()][0]
        ('user', 's1')
        >>> memory.close()
    """

    session_id: str | None = Field(default=None, description="Session of captured turns.")
    max_open_calls: int = Field(default=1024, ge=1, description="Calls tracked at once.")

    _calls: OrderedDict[str, _Call] = PrivateAttr(default_factory=OrderedDict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _dispatchers: list[Dispatcher] = PrivateAttr(default_factory=list)
    _captured: int = PrivateAttr(default=0)

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises handlers by."""
        return "MemtrellisEventHandler"

    @property
    def captured(self) -> int:
        """Turns handed to ``Memory.capture`` so far."""
        return self._captured

    @property
    def attached(self) -> bool:
        """Whether the handler is on a dispatcher now."""
        return any(any(h is self for h in target.event_handlers) for target in self._dispatchers)

    def attach(self, dispatcher: Dispatcher | None = None) -> MemtrellisEventHandler:
        """Add the handler to ``dispatcher`` (default: the root one, which sees every
        event); returns the handler."""
        target = dispatcher or get_dispatcher()
        if self not in target.event_handlers:
            target.add_event_handler(self)
            self._dispatchers.append(target)
        _ATTACHED[id(self)] = self
        return self

    def detach(self) -> None:
        """Remove the handler from every dispatcher
        [`attach`][llama_index.memory.memtrellis.MemtrellisEventHandler.attach] added it to."""
        for target in self._dispatchers:
            target.event_handlers = [h for h in target.event_handlers if h is not self]
        self._dispatchers.clear()
        _ATTACHED.pop(id(self), None)

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Track chat calls by span and capture each finished turn."""
        if is_internal(event.tags):
            return
        key = event.span_id or ""
        if isinstance(event, LLMChatStartEvent):
            self._open(key, _Call(list(event.messages), tags=dict(event.tags)))
        elif isinstance(event, LLMChatInProgressEvent):
            with self._lock:
                call = self._calls.get(key)
                if call is not None:
                    call.reply.add(event.response)
        elif isinstance(event, LLMChatEndEvent):
            with self._lock:
                call = self._calls.pop(key, None)
            self._finish(event, call)
        elif isinstance(event, ExceptionEvent):
            with self._lock:
                self._calls.pop(key, None)

    def _open(self, key: str, call: _Call) -> None:
        with self._lock:
            self._calls[key] = call
            self._calls.move_to_end(key)
            while len(self._calls) > self.max_open_calls:
                self._calls.popitem(last=False)

    def _finish(self, event: LLMChatEndEvent, call: _Call | None) -> None:
        streamed = call.reply if call else StreamedReply()
        reply, calls = streamed.text(event.response), streamed.calls(event.response)
        turn = new_turn(list(event.messages), reply, calls)
        if not turn:
            return
        tags = {**(call.tags if call else {}), **event.tags}
        binding = self._binding
        scope = binding.scope(
            given(
                entity_id=tags.get(ENTITY_TAG, self.entity_id),
                process_id=tags.get(PROCESS_TAG, self.process_id),
                session_id=tags.get(SESSION_TAG, self.session_id),
            )
        )
        if binding.capture(turn, scope, tags=TAGS) is not None:
            with self._lock:
                self._captured += 1
