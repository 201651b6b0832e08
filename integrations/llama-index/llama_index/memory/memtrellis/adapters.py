"""LlamaIndex objects as memtrellis parts, and the ``llama_index`` named registration.

* [`LlamaIndexExtractionLLM`][llama_index.memory.memtrellis.LlamaIndexExtractionLLM]: a LlamaIndex
  LLM as the chat model of memtrellis' fine-mode extraction (``complete(messages) -> str``, native
  ``acomplete``).
* `llm_adapter`: the ``memtrellis.llm_adapters`` entry point, so that
  ``Memory(llm=any_llamaindex_llm)`` runs fine mode.
* `register`: the ``memtrellis.integrations`` entry point ``llama_index``, so that
  ``memory.register(llama_index=llm)`` returns the LLM wrapped with memory.
* A LlamaIndex ``BaseEmbedding`` needs no adapter: ``Memory(embedder=embed_model)``
  recognises it (``memtrellis.embeddings.as_embedder``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.llm import LLM
from memtrellis import InvalidInputError, Memory

from llama_index.memory.memtrellis._messages import internal_call, text_of
from llama_index.memory.memtrellis.llm import MemtrellisLLM

__all__ = ["LlamaIndexExtractionLLM", "llm_adapter", "register"]


class LlamaIndexExtractionLLM:
    """A LlamaIndex LLM as the chat model of memtrellis' fine-mode extraction.

    Calls go through the LLM's ``chat``/``achat`` and are tagged so that a
    [`MemtrellisEventHandler`][llama_index.memory.memtrellis.MemtrellisEventHandler] does not
    capture the extraction prompts as conversation.

    Examples:
        >>> from llama_index.core.llms import MockLLM
        >>> llm = LlamaIndexExtractionLLM(MockLLM())
        >>> llm.complete([{"role": "user", "content": "hi"}])  # MockLLM echoes
        'user: hi\\nassistant:'
    """

    def __init__(self, llm: BaseLLM) -> None:
        if not isinstance(llm, BaseLLM):
            raise InvalidInputError(f"expected a LlamaIndex LLM, got {type(llm).__name__}")
        self.llm = llm

    @staticmethod
    def _messages(messages: Sequence[Mapping[str, str]]) -> list[ChatMessage]:
        return [ChatMessage(role=m["role"], content=m["content"]) for m in messages]

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The LLM's reply to ``messages`` (``{"role", "content"}`` dicts), as text."""
        with internal_call("extraction"):
            response = self.llm.chat(self._messages(messages))
        return text_of(response.message)

    async def acomplete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Async [`complete`][llama_index.memory.memtrellis.LlamaIndexExtractionLLM.complete]
        through the LLM's native ``achat``."""
        with internal_call("extraction"):
            response = await self.llm.achat(self._messages(messages))
        return text_of(response.message)

    def __repr__(self) -> str:
        return f"LlamaIndexExtractionLLM({self.llm.class_name()})"


def llm_adapter(obj: Any) -> LlamaIndexExtractionLLM | None:
    """The ``memtrellis.llm_adapters`` entry point: an adapter for a LlamaIndex LLM, else
    ``None`` (the object is not this integration's to adapt)."""
    if isinstance(obj, BaseLLM):
        return LlamaIndexExtractionLLM(obj)
    return None


def register(memory: Memory, obj: Any, **options: Any) -> MemtrellisLLM:
    """The ``memtrellis.integrations`` entry point ``llama_index``.

    ``memory.register(llama_index=llm)`` returns ``llm`` wrapped in a
    [`MemtrellisLLM`][llama_index.memory.memtrellis.MemtrellisLLM] over ``memory``.
    ``memtrellis.registry.register(memory, "llama_index", llm, **options)`` passes
    ``options`` on as its settings (``entity_id``, ``session_id``, ``token_budget``...).

    Raises:
        InvalidInputError: ``obj`` is not a LlamaIndex LLM.

    Examples:
        >>> import tempfile
        >>> from llama_index.core.llms import MockLLM
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> register(memory, MockLLM(), session_id="s1").session_id
        's1'
        >>> memory.close()
    """
    if not isinstance(obj, LLM):
        raise InvalidInputError(
            f"the llama_index integration wraps LlamaIndex LLMs, not {type(obj).__name__}"
        )
    return MemtrellisLLM(llm=obj, memory=memory, **options)
