"""The LLM protocol the core uses for fine-mode extraction, and nothing framework-shaped.

Any object with ``complete(messages) -> str`` is an [`LLM`][memtrellis.LLM]; ``acomplete`` is used
when present (else ``complete`` runs in a worker thread). An adapter that can return
structured output also implements `StructuredLLM`; extraction then asks for the
answer model's JSON schema and still parses the result defensively. Adapters for
LangChain, LlamaIndex and SDK clients live with their integrations.

Examples:
    >>> from memtrellis.testing import ScriptedLLM
    >>> llm = ScriptedLLM(['{"memories": []}'])
    >>> isinstance(llm, LLM), llm.complete([{"role": "user", "content": "hi"}])
    (True, '{"memories": []}')
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from memtrellis.errors import InvalidInputError

__all__ = ["LLM", "ChatMessage", "StructuredLLM", "acomplete", "as_llm", "complete"]

#: ``{"role": "system"|"user"|"assistant", "content": str}``
ChatMessage = Mapping[str, str]


@runtime_checkable
class LLM(Protocol):
    """A chat model that answers a list of messages with text.

    Any object with ``complete(messages) -> str`` is one (a structural protocol); give it
    to ``Memory(llm=...)`` for fine-mode extraction.

    Examples:
        >>> from memtrellis import LLM
        >>> class Echo:
        ...     def complete(self, messages):
        ...         return messages[-1]["content"]
        >>> isinstance(Echo(), LLM)
        True
    """

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """Answer ``messages``; the reply's text."""
        ...


@runtime_checkable
class StructuredLLM(Protocol):
    """A chat model that can be asked for JSON matching a schema."""

    def complete_json(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any]) -> str:
        """Answer ``messages`` with JSON text that should match ``schema``."""
        ...


def complete(llm: LLM, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None) -> str:
    """Call ``llm`` with structured output when it supports it and a schema is given."""
    if schema is not None and isinstance(llm, StructuredLLM):
        return llm.complete_json(messages, schema)
    return llm.complete(messages)


async def acomplete(
    llm: LLM, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None
) -> str:
    """Async `complete`: native ``acomplete``/``acomplete_json`` when present."""
    if schema is not None and isinstance(llm, StructuredLLM):
        native_json = getattr(llm, "acomplete_json", None)
        if native_json is not None:
            return str(await native_json(messages, schema))
        return await asyncio.to_thread(llm.complete_json, messages, schema)
    native = getattr(llm, "acomplete", None)
    if native is not None:
        return str(await native(messages))
    return await asyncio.to_thread(llm.complete, messages)


def as_llm(obj: Any) -> LLM:
    """``obj`` as an [`LLM`][memtrellis.LLM]: itself when it is one, else what an installed adapter
    makes.

    Adapters come from the ``memtrellis.llm_adapters`` entry-point group (see
    [`memtrellis.registry`][memtrellis.registry]); installing ``langchain-memtrellis`` makes any
    LangChain chat model usable as ``Memory(llm=chat_model)``, installing
    ``llama-index-memory-memtrellis`` any LlamaIndex LLM. An adapter named after a package that
    ``obj``'s class (or a base class) comes from is asked first, because a framework model may have
    a ``complete`` method that is not this protocol's.

    Raises:
        InvalidInputError: Neither ``obj`` nor any adapter provides ``complete``.

    Examples:
        >>> from memtrellis.testing import ScriptedLLM
        >>> llm = ScriptedLLM(["{}"])
        >>> as_llm(llm) is llm
        True
    """
    from memtrellis.registry import llm_adapters

    # A framework's model can have a complete() of another shape (a LlamaIndex LLM's takes
    # a prompt string): the adapter named after a package its class comes from is asked
    # before the object is taken as it is. Only those adapters load here, so a plain LLM
    # never imports a framework.
    packages = {cls.__module__.partition(".")[0] for cls in type(obj).__mro__}
    for adapter in llm_adapters(packages):
        adapted = adapter(obj)
        if adapted is not None:
            return _checked(adapter, adapted)
    if isinstance(obj, LLM):
        return obj
    for adapter in llm_adapters(skip=packages):
        adapted = adapter(obj)
        if adapted is not None:
            return _checked(adapter, adapted)
    raise InvalidInputError(
        f"llm must have a complete(messages) -> str method; got {type(obj).__name__} "
        "(LangChain chat models and LlamaIndex LLMs work once their memtrellis "
        "integration is installed)"
    )


def _checked(adapter: Any, adapted: Any) -> LLM:
    if not isinstance(adapted, LLM):
        raise InvalidInputError(
            f"the llm adapter {adapter!r} returned {type(adapted).__name__}, "
            "which has no complete(messages) method"
        )
    return adapted
