"""The LangChain ``ChatMemoryWrapper`` around a fake model with a fixed latency.

Used by ``overhead.py`` (section d). Each call is timed as a whole and in its parts:

* the bare fake model alone (``model.invoke``), the baseline;
* the wrapper's call, with the time of the inner model inside it, the memory-context
  placement (recall, render, place: ``MemoryBridge.prepare``) and the capture
  (``MemoryBridge.capture``: validate, spool, queue) measured around those two steps.

Added latency per call = wrapper call - the inner model's time in that call; the rest
beside placement and capture is LangChain's own run bookkeeping for the extra run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_memtrellis import ChatMemoryWrapper
from pydantic import Field


class SleepyFakeChat(GenericFakeChatModel):
    """LangChain's fake chat model that takes ``latency_ms`` per call (a sleep, like I/O)."""

    latency_ms: float = 50.0
    spent_ms: list[float] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        started = time.perf_counter_ns()
        time.sleep(self.latency_ms / 1000)
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        self.spent_ms.append((time.perf_counter_ns() - started) / 1e6)
        return result


def _timed(samples: list[float], call: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return call(*args, **kwargs)
        finally:
            samples.append((time.perf_counter_ns() - started) / 1e6)

    return run


def wrapper_loop(
    memory: Any,
    questions: Sequence[str],
    replies: Sequence[str],
    model_ms: float,
    think_ms: float,
    summary: Callable[[Sequence[float]], dict[str, float]],
) -> dict[str, Any]:
    """``len(replies)`` calls of the bare model, then as many through the wrapper."""
    calls = len(replies)
    bare_model = SleepyFakeChat(messages=iter(replies), latency_ms=model_ms, spent_ms=[])
    bare: list[float] = []
    for index in range(calls):
        question = questions[(index * 7) % len(questions)]
        started = time.perf_counter_ns()
        bare_model.invoke(question)
        bare.append((time.perf_counter_ns() - started) / 1e6)
        if think_ms:
            time.sleep(think_ms / 1000)

    inner = SleepyFakeChat(messages=iter(replies), latency_ms=model_ms, spent_ms=[])
    chat = ChatMemoryWrapper(inner, memory=memory)
    placement: list[float] = []
    capture: list[float] = []
    bridge = chat._bridge
    bridge.prepare = _timed(placement, bridge.prepare)  # type: ignore[method-assign]
    bridge.capture = _timed(capture, bridge.capture)  # type: ignore[method-assign]
    wrapped: list[float] = []
    for index in range(calls):
        question = questions[(index * 7 + 3) % len(questions)]
        started = time.perf_counter_ns()
        chat.invoke(question)
        wrapped.append((time.perf_counter_ns() - started) / 1e6)
        if think_ms:
            time.sleep(think_ms / 1000)
    drain_started = time.perf_counter()
    memory.flush()
    added = [w - m for w, m in zip(wrapped, inner.spent_ms, strict=True)]
    bare_added = [b - m for b, m in zip(bare, bare_model.spent_ms, strict=True)]
    other = [a - p - c for a, p, c in zip(added, placement, capture, strict=True)]
    return {
        "calls": calls,
        "model_ms": model_ms,
        "think_ms": think_ms,
        "bare_call_ms": summary(bare),
        "bare_added_ms": summary(bare_added),
        "wrapper_call_ms": summary(wrapped),
        "added_ms": summary(added),
        "placement_ms": summary(placement),
        "capture_ms": summary(capture),
        "langchain_other_ms": summary(other),
        "stats": chat.stats.as_dict(),
        "drain_after_loop_s": round(time.perf_counter() - drain_started, 2),
    }
