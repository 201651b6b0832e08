"""``MemtrellisLLM``: any LlamaIndex LLM with long-term memory."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field, SerializeAsAny
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import LLM, ToolSelection
from memtrellis import InvalidInputError
from memtrellis.binding import Binding
from memtrellis.context import MemoryContext

from llama_index.memory.memtrellis._messages import (
    StreamedReply,
    internal_call,
    latest_query,
    new_turn,
    place_context,
    text_of,
    tool_calls_of,
)
from llama_index.memory.memtrellis._settings import TAGS, RecallFields
from llama_index.memory.memtrellis._transcript import conversation

if TYPE_CHECKING:
    from llama_index.core.tools.types import BaseTool

__all__ = ["MemtrellisLLM"]


class MemtrellisLLM(RecallFields, FunctionCallingLLM):
    """Wrap any LlamaIndex LLM: memory context in, captured turns out.

    Each ``chat``/``achat``/``stream_chat``/``astream_chat`` recalls the memories
    relevant to the latest user message, places them as a memory-context block in the
    system message (a copy: the caller's messages are left alone), delegates to the
    wrapped LLM, and captures the turn (the user's new messages and the reply, without
    the memory context) with ``Memory.capture``, which returns at once. Tool calling
    (``chat_with_tools``, ``predict_and_call``, agents) goes through the wrapped LLM's
    own tool support; a reply that only calls tools is captured with the final answer.
    Completion calls (``complete`` and its variants) pass through without memory.

    A memory failure is logged and counted in `failures` and the call goes on
    without memory; ``strict=True`` raises instead.

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Attributes:
        llm: The LlamaIndex LLM to wrap (a ``FunctionCallingLLM`` for tool calling).
        memory: The memtrellis [`Memory`][memtrellis.Memory].
        entity_id: Whose memory (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        session_id: Session recorded on captured memories.
        k: Most memories recalled per call.
        token_budget: Most tokens (``o200k_base``) of the memory-context block.
        recall: Place memory context (``False``: capture only).
        capture: Capture turns (``False``: read-only memory).
        mode: Extraction mode of captured turns (``"fast"``/``"fine"``).
        strict: Raise memory failures instead of answering without memory.
        recent_turns: Most messages of the block's recent-conversation stage (4; 0:
            none): only conversation the call does not carry, never a message of it.
        open_items: Most of the user's open decisions and action items the block keeps
            room for, recalled or not (10; 0: only those recall returns).
        context_hint: Let the messages before the question steer recall (True).
        session_history: Read up to this many of the session's earlier messages that the
            call lacks for the recent stage (0: off; needs a session id).

    Examples:
        >>> import tempfile
        >>> from llama_index.core.llms import ChatMessage, MockLLM
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is allergic to peanuts")
        >>> llm = MemtrellisLLM(llm=MockLLM(), memory=memory)
        >>> reply = llm.chat([ChatMessage(role="user", content="A snack without peanuts?")])
        >>> "allergic to peanuts" in reply.message.content  # MockLLM echoes its prompt
        True
        >>> memory.close()
    """

    llm: SerializeAsAny[LLM] = Field(description="The wrapped LLM.")
    session_id: str | None = Field(default=None, description="Session of captured turns.")
    recall: bool = Field(default=True, description="Place memory context.")
    capture: bool = Field(default=True, description="Capture turns.")

    @classmethod
    def class_name(cls) -> str:
        """The class name LlamaIndex serialises LLMs by."""
        return "MemtrellisLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """The wrapped LLM's metadata (context window, chat and function-calling support)."""
        return self.llm.metadata

    # -- memory in and out ------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "session_id": self.session_id or None}

    def _place(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        query = latest_query(messages) if self.recall else ""
        if not query:
            return list(messages)
        binding = self._binding
        said = conversation(messages)
        context = binding.context(query, binding.scope(), messages=said)
        return self._placed(binding, messages, context)

    async def _aplace(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        query = latest_query(messages) if self.recall else ""
        if not query:
            return list(messages)
        binding = self._binding
        said = conversation(messages)
        context = await binding.acontext(query, binding.scope(), messages=said)
        return self._placed(binding, messages, context)

    @staticmethod
    def _placed(
        binding: Binding, messages: Sequence[ChatMessage], context: MemoryContext
    ) -> list[ChatMessage]:
        with binding.guard("context"):
            return place_context(messages, context, binding.options.position)
        return list(messages)

    def _capture(
        self, messages: Sequence[ChatMessage], reply: str, calls: list[dict[str, Any]]
    ) -> None:
        if not self.capture:
            return
        binding = self._binding
        turn: list[dict[str, Any]] = []
        with binding.guard("capture"):
            turn = new_turn(messages, reply, calls)
        binding.capture(turn, binding.scope(), tags=TAGS)

    # -- chat -------------------------------------------------------------------------------
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Chat with memory context placed; the turn is captured."""
        placed = self._place(messages)
        with internal_call("wrapper"):
            response = self.llm.chat(placed, **kwargs)
        self._capture(messages, text_of(response.message), tool_calls_of(response.message))
        return response

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """Async [`chat`][llama_index.memory.memtrellis.MemtrellisLLM.chat]; recall runs off the
        event loop."""
        placed = await self._aplace(messages)
        with internal_call("wrapper"):
            response = await self.llm.achat(placed, **kwargs)
        self._capture(messages, text_of(response.message), tool_calls_of(response.message))
        return response

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        """Stream with memory context placed; the turn is captured when the stream ends."""
        placed = self._place(messages)
        with internal_call("wrapper"):
            stream = self.llm.stream_chat(placed, **kwargs)
        return self._relay(messages, stream)

    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        """Async [`stream_chat`][llama_index.memory.memtrellis.MemtrellisLLM.stream_chat]."""
        placed = await self._aplace(messages)
        with internal_call("wrapper"):
            stream = await self.llm.astream_chat(placed, **kwargs)
        return self._arelay(messages, stream)

    def _relay(
        self, messages: Sequence[ChatMessage], stream: ChatResponseGen
    ) -> Generator[ChatResponse, None, None]:
        # The delegate's events fire while it runs, i.e. inside next(): tag only that, so
        # the tag never leaks into the caller's code between chunks.
        reply = StreamedReply()
        try:
            while True:
                with internal_call("wrapper"):
                    try:
                        chunk = next(stream)
                    except StopIteration:
                        break
                reply.add(chunk)
                yield chunk
        finally:
            with internal_call("wrapper"):
                stream.close()
        self._capture(messages, reply.text(), reply.calls())

    async def _arelay(
        self, messages: Sequence[ChatMessage], stream: ChatResponseAsyncGen
    ) -> AsyncGenerator[ChatResponse, None]:
        reply = StreamedReply()
        try:
            while True:
                with internal_call("wrapper"):
                    try:
                        chunk = await stream.__anext__()
                    except StopAsyncIteration:
                        break
                reply.add(chunk)
                yield chunk
        finally:
            with internal_call("wrapper"):
                await stream.aclose()
        self._capture(messages, reply.text(), reply.calls())

    # -- completion: passed through ------------------------------------------------------------
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The wrapped LLM's ``complete``, without memory."""
        return self.llm.complete(prompt, formatted=formatted, **kwargs)

    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        """The wrapped LLM's ``acomplete``, without memory."""
        return await self.llm.acomplete(prompt, formatted=formatted, **kwargs)

    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """The wrapped LLM's ``stream_complete``, without memory."""
        return self.llm.stream_complete(prompt, formatted=formatted, **kwargs)

    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        """The wrapped LLM's ``astream_complete``, without memory."""
        return await self.llm.astream_complete(prompt, formatted=formatted, **kwargs)

    # -- tool calling: the wrapped LLM's own ----------------------------------------------------
    def _tool_llm(self) -> FunctionCallingLLM:
        if not isinstance(self.llm, FunctionCallingLLM):
            raise InvalidInputError(
                f"{type(self.llm).__name__} does not support tool calling "
                "(it is not a FunctionCallingLLM)"
            )
        return self.llm

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[BaseTool],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return self._tool_llm()._prepare_chat_with_tools_compat(
            tools,
            user_msg=user_msg,
            chat_history=chat_history,
            verbose=verbose,
            allow_parallel_tool_calls=allow_parallel_tool_calls,
            tool_required=tool_required,
            **kwargs,
        )

    def _validate_chat_with_tools_response(
        self,
        response: ChatResponse,
        tools: Sequence[BaseTool],
        allow_parallel_tool_calls: bool = False,
        **kwargs: Any,
    ) -> ChatResponse:
        return self._tool_llm()._validate_chat_with_tools_response(
            response, tools, allow_parallel_tool_calls=allow_parallel_tool_calls, **kwargs
        )

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        """The wrapped LLM's tool calls in ``response``."""
        return self._tool_llm().get_tool_calls_from_response(
            response, error_on_no_tool_call=error_on_no_tool_call, **kwargs
        )
