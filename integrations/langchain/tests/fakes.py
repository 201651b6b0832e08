"""Fake chat models for the tests: LangChain's GenericFakeChatModel, recording and tool-ready."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import GenericFakeChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from memtrellis import Memory
from pydantic import Field, PrivateAttr


class FakeChat(GenericFakeChatModel):
    """Answers from ``messages`` in order; records every call's messages and kwargs."""

    calls: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)
    fail_first: int = 0  # raise on this many calls before answering
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            self.calls.append((list(messages), dict(kwargs)))
            if self.fail_first:
                self.fail_first -= 1
                raise ConnectionError("the fake provider is down")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def sent(self, index: int = -1) -> list[BaseMessage]:
        """The messages of one call."""
        return self.calls[index][0]


class BrokenStreamChat(FakeChat):
    """Streams the first word of its answer, then fails."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        chunks = super()._stream(messages, stop=stop, run_manager=run_manager, **kwargs)
        yield next(iter(chunks))
        raise ConnectionError("the connection dropped mid-stream")


class StreamingChat(FakeChat):
    """Streams its answer word by word, and its tool calls as tool-call chunks (as a
    provider does); each answer has a message id of its own (``msg-1``, ``msg-2``...)."""

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages, stop=stop, **kwargs).generations[0].message
        assert isinstance(message, AIMessage)
        message_id = message.id or f"msg-{len(self.calls)}"
        pieces = [p for p in re.split(r"(\s)", message.text) if p]
        chunks = [AIMessageChunk(content=piece, id=message_id) for piece in pieces]
        chunks += [
            AIMessageChunk(
                content="",
                id=message_id,
                tool_call_chunks=[
                    tool_call_chunk(
                        name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=i
                    )
                ],
            )
            for i, call in enumerate(message.tool_calls)
        ]
        for chunk in chunks:
            generation = ChatGenerationChunk(message=chunk)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=generation)
            yield generation


def reply(text: str = "", **tool_call: Any) -> AIMessage:
    """An answer, optionally calling one tool: ``reply(name="f", args={...})``."""
    if tool_call:
        call = {"id": "call-1", "type": "tool_call", **tool_call}
        return AIMessage(content=text, tool_calls=[call])
    return AIMessage(content=text)


def texts(memory: Memory, entity_id: str | None = None) -> list[str]:
    """Every stored memory's text, once the capture queue has drained."""
    assert memory.flush(30)
    return [item.text for item in memory.list(entity_id=entity_id, limit=1000)]
