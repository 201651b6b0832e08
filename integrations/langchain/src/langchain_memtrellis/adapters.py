"""LangChain objects in the core's terms: a chat model as an extraction LLM, registration.

* [`as_llm`][langchain_memtrellis.as_llm] (and the ``memtrellis.llm_adapters`` entry point
  `llm_adapter`): ``Memory(llm=any_langchain_chat_model)`` runs fine-mode extraction through it.
* `register` (the ``memtrellis.integrations`` entry point ``langchain``):
  ``memory.register(langchain=chat_model)`` returns a
  [`ChatMemoryWrapper`][langchain_memtrellis.ChatMemoryWrapper].
* A LangChain ``Embeddings`` needs no adapter: ``Memory(embedder=embeddings)`` adapts
  ``embed_documents``/``embed_query`` by duck typing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage, convert_to_messages
from langchain_core.runnables import Runnable
from memtrellis import InvalidInputError, Memory

from langchain_memtrellis.wrapper import ChatMemoryWrapper

__all__ = ["LangChainLLM", "as_llm", "llm_adapter", "register"]


class LangChainLLM:
    """The core's [`LLM`][memtrellis.LLM] protocol over a LangChain chat model.

    ``complete`` and ``acomplete`` send the extraction prompt as chat messages and return
    the reply's text. A [`ChatMemoryWrapper`][langchain_memtrellis.ChatMemoryWrapper] is unwrapped
    first: extraction prompts must not recall memories or be captured as conversation.

    Args:
        model: Any LangChain chat model.

    Examples:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> llm = LangChainLLM(GenericFakeChatModel(messages=iter(['{"memories": []}'])))
        >>> messages = [{"role": "system", "content": "Extract"}, {"role": "user", "content": "hi"}]
        >>> llm.complete(messages)
        '{"memories": []}'
    """

    def __init__(self, model: BaseChatModel) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidInputError(f"expected a LangChain chat model, got {type(model).__name__}")
        # A wrapper's inner model (or runnable around one): extraction is not a user turn.
        self.model: Runnable[LanguageModelInput, BaseMessage] = (
            model.llm if isinstance(model, ChatMemoryWrapper) else model
        )

    @staticmethod
    def _messages(messages: Sequence[Mapping[str, str]]) -> list[BaseMessage]:
        return convert_to_messages([dict(m) for m in messages])

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The model's answer to ``messages`` as text."""
        return self.model.invoke(self._messages(messages)).text

    async def acomplete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """Async [`complete`][langchain_memtrellis.LangChainLLM.complete] through the model's
        ``ainvoke``."""
        return (await self.model.ainvoke(self._messages(messages))).text

    def __repr__(self) -> str:
        return f"LangChainLLM({type(self.model).__name__})"


def as_llm(model: BaseChatModel) -> LangChainLLM:
    """Make a LangChain chat model usable as ``Memory(llm=...)`` explicitly.

    Examples:
        >>> from langchain_core.language_models import GenericFakeChatModel
        >>> llm = as_llm(GenericFakeChatModel(messages=iter(['{"memories": []}'])))
        >>> llm.complete([{"role": "user", "content": "hi"}])
        '{"memories": []}'
    """
    return LangChainLLM(model)


def llm_adapter(obj: Any) -> LangChainLLM | None:
    """Entry point of ``memtrellis.llm_adapters``: an adapter for chat models, else None."""
    return LangChainLLM(obj) if isinstance(obj, BaseChatModel) else None


def register(memory: Memory, obj: Any, **options: Any) -> ChatMemoryWrapper:
    """Entry point of ``memtrellis.integrations``: wrap a chat model with ``memory``.

    Raises:
        InvalidInputError: ``obj`` is not a LangChain chat model.
    """
    if not isinstance(obj, BaseChatModel):
        raise InvalidInputError(
            f"the langchain integration wraps chat models; got {type(obj).__name__}"
        )
    return ChatMemoryWrapper(obj, memory=memory, **options)
