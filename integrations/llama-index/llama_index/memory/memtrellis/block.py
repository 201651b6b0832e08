"""``MemtrellisMemoryBlock``: long-term memory as a block of LlamaIndex's ``Memory``."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock
from memtrellis import RecallResult
from memtrellis.context import build_context

from llama_index.memory.memtrellis._messages import flushed_turn, latest_query
from llama_index.memory.memtrellis._recall import arecall_context
from llama_index.memory.memtrellis._settings import RecallFields

__all__ = ["MemtrellisMemoryBlock"]

_KEEP_RENDERED = 16


class MemtrellisMemoryBlock(RecallFields, BaseMemoryBlock[str]):
    """memtrellis as a memory block of ``llama_index.core.memory.Memory``.

    Reading the block (`aget`) recalls the memories relevant to the latest user
    message and returns them rendered as a memory-context block within
    ``token_budget`` tokens; ``Memory`` places it in the system message (or the latest
    user message). Messages that ``Memory`` flushes out of its short-term queue are
    captured (`aput`): they go to memtrellis' background extraction and are stored
    under this block's scope and the LlamaIndex session id.

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
        mode: Extraction mode of captured messages (``"fast"``/``"fine"``; default: fine
            when the ``Memory`` has an LLM).
        strict: Raise memory failures instead of reading as empty.

    Examples:
        >>> import asyncio, tempfile
        >>> from llama_index.core.llms import ChatMessage
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is allergic to peanuts")
        >>> block = MemtrellisMemoryBlock(memory=memory)
        >>> text = asyncio.run(block.aget([ChatMessage(role="user", content="peanuts?")]))
        >>> "allergic to peanuts" in text, text.startswith("<memory_context>")
        (True, True)
        >>> memory.close()
    """

    name: str = Field(default="memtrellis", description="The block's name.")
    description: str | None = Field(
        default="Long-term memories recalled for the latest user message (memtrellis)."
    )

    # Recent renderings (text -> what was recalled, its tokens), so that atruncate can
    # render the same recall again within fewer tokens.
    _rendered: OrderedDict[str, tuple[RecallResult, int]] = PrivateAttr(default_factory=OrderedDict)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        query = latest_query(messages)
        if not query:
            return ""
        with self._guard.guard("recall"):
            result, context = await arecall_context(self.memory, query, self._settings)
            if context.text:
                self._rendered[context.text] = (result, context.tokens)
                while len(self._rendered) > _KEEP_RENDERED:
                    self._rendered.popitem(last=False)
            return context.text
        return ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        turn = flushed_turn(messages)
        if not turn:
            return
        session = next(
            (
                str(m.additional_kwargs["session_id"])
                for m in messages
                if m.additional_kwargs.get("session_id")
            ),
            None,
        )
        with self._guard.guard("capture"):
            await self.memory.acapture(
                turn,
                entity_id=self.entity_id,
                process_id=self.process_id,
                session_id=session,
                mode=self.mode,
                tags=["llama_index"],
            )

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """The block rendered again within fewer tokens, or ``None`` to drop it.

        ``Memory`` calls this for blocks with a ``priority`` above 0 when the blocks and
        the chat history exceed its token limit.
        """
        rendered = self._rendered.get(content)
        if rendered is None:
            return None
        result, tokens = rendered
        with self._guard.guard("truncate"):
            budget = max(0, tokens - max(tokens_to_truncate, 1))
            return build_context(result, token_budget=budget).text or None
        return None
