"""``MemtrellisMemoryBlock``: long-term memory as a block of LlamaIndex's ``Memory``."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from memtrellis.binding import Stages

from llama_index.memory.memtrellis._messages import latest_query
from llama_index.memory.memtrellis._react import ReactCheck
from llama_index.memory.memtrellis._settings import TAGS, RecallFields, given
from llama_index.memory.memtrellis._transcript import Transcripts, conversation, to_capture
from llama_index.memory.memtrellis.events import handler_captures_into

__all__ = ["MemtrellisMemoryBlock"]

_KEEP_RENDERED = 16

Capture = Literal["turns", "flushed", "off"]


class MemtrellisMemoryBlock(RecallFields, BaseMemoryBlock[str]):
    """memtrellis as a memory block of ``llama_index.core.memory.Memory``.

    Reading the block (`aget`) recalls the memories relevant to the latest user
    message and returns them rendered as a memory-context block within
    ``token_budget`` tokens; ``Memory`` places it in the system message (or the latest
    user message with ``insert_method="user"``).

    Capture (``capture``):

    * ``"turns"`` (default): every message of the conversation is captured once, as the
      conversation goes. ``Memory`` hands the block the session's chat history at every
      read, before each model call: the block captures the user and assistant messages
      it has not captured yet (the user's message at once, the reply at the next read;
      agents read their memory again after the final answer, so an agent's whole turn is
      in before ``run`` returns). Messages ``Memory`` later flushes out of its
      short-term queue are not captured again.
    * ``"flushed"``: only what ``Memory`` flushes out of its short-term queue (LlamaIndex's
      own rule for blocks; with the default limits that is after some 21,000 tokens of
      chat, so a short session stores nothing).
    * ``"off"``: recall only, when something else captures the turns (a
      [`MemtrellisLLM`][llama_index.memory.memtrellis.MemtrellisLLM], your own code).

    While a [`MemtrellisEventHandler`][llama_index.memory.memtrellis.MemtrellisEventHandler]
    that captures into the same ``Memory`` is attached, the block captures nothing
    itself, so that block and handler together store each message once.

    Captured messages go to memtrellis' background extraction under this block's scope
    and the LlamaIndex session id. System messages, tool calls and results, memory
    context and a ``ReActAgent``'s reasoning (only its answer is kept) are not captured.

    ``ReActAgent`` without a ``system_prompt`` drops the system message, and with it the
    memory context: use ``Memory.from_defaults(..., insert_method="user")`` with it (the
    block warns once when it sees that setup).

    A memory failure is logged and counted in `failures` and the block reads as
    empty, so the agent still answers; ``strict=True`` raises instead.

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Attributes:
        memory: The memtrellis [`Memory`][memtrellis.Memory] to read and write.
        name: The block's name in the ``<memory>`` section (default ``"memtrellis"``).
        entity_id: Whose memory (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        k: Most memories recalled per read.
        token_budget: Most tokens (``o200k_base``) the rendered block may take.
        capture: When messages are captured: ``"turns"``, ``"flushed"`` or ``"off"``.
        mode: Extraction mode of captured messages (``"fast"``/``"fine"``; default: fine
            when the ``Memory`` has an LLM).
        strict: Raise memory failures instead of reading as empty.
        recent_turns: Most messages of the block's recent-conversation stage (4; 0:
            none). It holds only conversation the chat history lacks (the session's
            earlier turns, with ``session_history``), never a message of it.
        open_items: Most of the user's open decisions and action items the block keeps
            room for, recalled or not (10; 0: only those recall returns).
        context_hint: Let the chat history before the question steer recall (True).
        session_history: Read up to this many of the session's earlier messages that the
            chat history lacks (those ``Memory`` flushed, a session resumed with a short
            history) for the recent stage (0: off); the session is ``Memory``'s
            ``session_id``.

    Examples:
        >>> import asyncio, tempfile
        >>> from llama_index.core.llms import ChatMessage
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is allergic to peanuts")
        >>> block = MemtrellisMemoryBlock(memory=memory, mode="fast")
        >>> text = asyncio.run(block.aget([ChatMessage(role="user", content="peanuts?")]))
        >>> "allergic to peanuts" in text, text.startswith("<memory_context>")
        (True, True)
        >>> memory.flush()  # the question itself was captured as the user's message
        True
        >>> sorted(m.text for m in memory.list())
        ['Alice is allergic to peanuts', 'peanuts?']
        >>> memory.close()
    """

    name: str = Field(default="memtrellis", description="The block's name.")
    description: str | None = Field(
        default="Long-term memories recalled for the latest user message (memtrellis)."
    )

    capture: Capture = Field(default="turns", description="When messages are captured.")

    _transcripts: Transcripts = PrivateAttr(default_factory=Transcripts)
    _react: ReactCheck = PrivateAttr(default_factory=ReactCheck)
    # Recent renderings (text -> its stages and tokens), so that
    # atruncate can render the same recall again within fewer tokens.
    _rendered: OrderedDict[str, tuple[Stages, int]] = PrivateAttr(default_factory=OrderedDict)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        self._react.check()
        session = block_kwargs.get("session_id")
        text = await self._recall(messages or [], session)
        # Captured after recall, so that the question is never recalled as its own answer.
        if self.capture == "turns" and messages:
            await self._capture(self._transcripts.read(str(session or ""), messages), session)
        return text

    async def _recall(self, messages: list[ChatMessage], session: object) -> str:
        query = latest_query(messages)
        if not query:
            return ""
        binding = self._binding
        # The chat history the block receives steers recall and is never repeated in the
        # block; the recent stage holds only the session's turns it lacks (session_history).
        scope = binding.scope(given(session_id=session))
        stages = await binding.agather(query, scope, conversation(messages))
        context = binding.render(stages)
        if stages.result is not None and context.text:
            self._rendered[context.text] = (stages, context.tokens)
            while len(self._rendered) > _KEEP_RENDERED:
                self._rendered.popitem(last=False)
        return context.text

    async def aput(
        self,
        messages: list[ChatMessage],
        from_short_term_memory: bool = False,
        session_id: str | None = None,
    ) -> None:
        """Capture ``messages``: flushed by ``Memory`` (``from_short_term_memory``), only
        those not captured yet; put directly, all of their conversation."""
        if self.capture == "off" or (from_short_term_memory and not self.accept_short_term_memory):
            return
        session = session_id or next(
            (
                str(m.additional_kwargs["session_id"])
                for m in messages
                if m.additional_kwargs.get("session_id")
            ),
            None,
        )
        if from_short_term_memory and self.capture == "turns":
            turn = self._transcripts.flushed(session or "", messages)
        else:
            turn = conversation(messages)
        await self._capture(turn, session)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await self.aput(messages)

    async def _capture(self, turn: list[dict[str, Any]], session: object) -> None:
        turn = to_capture(turn)
        if not turn or handler_captures_into(self.memory):
            return
        binding = self._binding
        await binding.acapture(turn, binding.scope(given(session_id=session)), tags=TAGS)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The block rendered again within fewer tokens, or ``None`` to drop it.

        ``Memory`` calls this for blocks with a ``priority`` above 0 when the blocks and
        the chat history exceed its token limit.
        """
        rendered = self._rendered.get(content)
        if rendered is None:
            return None
        stages, tokens = rendered
        budget = max(0, tokens - max(tokens_to_truncate, 1))
        context = self._binding.render(stages, token_budget=budget)
        return context.text or None
