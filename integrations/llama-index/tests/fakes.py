"""Scripted LlamaIndex LLMs: real LlamaIndex classes whose answers come from a script.

``scripted_llm`` builds llama-index-core's own ``MockFunctionCallingLLM`` (a real
``FunctionCallingLLM``: it fires the instrumentation events, streams, and takes tools)
with a response generator that records every call and answers from ``replies``:
a string (the reply), a callable of the messages, ``TOOL`` (call every tool offered) or a
``Call`` of one tool with its arguments.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from memtrellis.testing import HashingEmbedder

TOOL = object()


@dataclass(frozen=True)
class Call:
    """A scripted reply that calls one tool: ``Call("save_memory", {"content": "..."})``."""

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)


Reply = str | object | Callable[[Sequence[ChatMessage]], str]


class Script:
    """Replies in order (the last one repeats) and every message list the LLM was given."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        self.replies = list(replies)
        self.calls: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.calls.append([m.model_copy(deep=True) for m in messages])
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        if isinstance(reply, Call):
            block = ToolCallBlock(
                tool_call_id=f"call-{len(self.calls)}", tool_name=reply.name,
                tool_kwargs=reply.kwargs,
            )  # fmt: skip
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])
        if reply is TOOL:
            blocks = [
                ToolCallBlock(tool_call_id=f"call-{i}", tool_name=t.metadata.name, tool_kwargs={})
                for i, t in enumerate(kwargs.get("tools") or [])
            ]
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)
        text = reply(messages) if callable(reply) else str(reply)
        return ChatMessage(role=MessageRole.ASSISTANT, content=text)

    def system_text(self, call: int = -1) -> str:
        """The system message of one call ("" when it had none)."""
        first = self.calls[call][0] if self.calls[call] else None
        return first.content or "" if first is not None and first.role == "system" else ""


def scripted_llm(*replies: Reply) -> tuple[MockFunctionCallingLLM, Script]:
    """A function-calling chat model answering from ``replies``, and its script."""
    script = Script(replies or ("ok",))
    return MockFunctionCallingLLM(response_generator=script, is_chat_model=True), script


class GatedEmbedder(HashingEmbedder):
    """A hashing embedder whose query embedding, once `close_gate` was called, waits
    until `open_gate` runs.

    Proves that async recall runs off the event loop: the test opens the gate from a
    coroutine on the loop, which can only run if recall is not blocking the loop. A
    blocked loop makes the wait give up and recall fail (no timing is measured).
    """

    def __init__(self) -> None:
        super().__init__()
        self._gated = False
        self._open = threading.Event()

    def close_gate(self) -> None:
        self._gated = True

    async def open_gate(self) -> None:
        self._open.set()

    def embed_query(self, text: str) -> list[float]:
        if self._gated and not self._open.wait(timeout=30):
            raise TimeoutError("the event loop was blocked while recall ran")
        return super().embed_query(text)
