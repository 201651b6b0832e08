"""LiteLLM (``import litellm``): ``litellm.completion`` and ``litellm.acompletion``.

LiteLLM's API is module functions, not a client object, so the module is what is
registered: ``memory.register(litellm)`` (or ``memory.register(litellm=litellm)``)
sets memory-giving ``completion`` and ``acompletion`` on the ``litellm`` module, and
``memory.unregister(litellm)`` puts LiteLLM's own functions back. The module is one
object per process, so one `Memory` gives memory to every ``litellm.completion`` call
of the process (``Memory.scope`` still picks whose memory each call uses); registering
it with a second memory moves it there. A name imported before the registration
(``from litellm import completion``) is LiteLLM's own function and gets no memory:
call ``litellm.completion``.

Requests and replies are OpenAI-shaped whatever the provider behind LiteLLM, so the
memory context is placed as for OpenAI's Chat Completions (the leading system message,
or one of its own: LiteLLM turns it into each provider's system field) and replies and
stream chunks are read the same way. The provider LiteLLM routed the call to
(``openai``, ``anthropic``, ``ollama``...) is recorded as the turn's ``provider``; the
``sdk`` is ``litellm``. The module is never imported here.

Examples:
    >>> routed_provider({"model": "anthropic/claude-sonnet-5-5"})
    'anthropic'
    >>> routed_provider({"model": "gpt-4o-mini"}) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memtrellis.clients.calls import Api
from memtrellis.clients.openai import ChatCollector, chat_reply, place_chat
from memtrellis.clients.payload import Reply, field_of, request_messages

__all__ = ["LITELLM_APIS", "routed_provider"]


def routed_provider(kwargs: Mapping[str, Any]) -> str | None:
    """The provider a LiteLLM call names: ``custom_llm_provider``, else the prefix of
    ``model`` (``"anthropic/claude-..."``); None when LiteLLM infers it from the model."""
    named = kwargs.get("custom_llm_provider")
    if isinstance(named, str) and named:
        return named
    model = kwargs.get("model")
    if isinstance(model, str) and "/" in model:
        return model.split("/", 1)[0] or None
    return None


def _hidden_provider(response: Any) -> str | None:
    hidden = getattr(response, "_hidden_params", None)
    found = field_of(hidden, "custom_llm_provider") if isinstance(hidden, Mapping) else None
    return found if isinstance(found, str) and found else None


def litellm_reply(response: Any) -> Reply | None:
    """A ``ModelResponse``: read as a Chat Completion, with the provider it came from."""
    reply = chat_reply(response)
    if reply is not None:
        reply.provider = _hidden_provider(response)
    return reply


class LiteLLMCollector(ChatCollector):
    """`ChatCollector` over LiteLLM's OpenAI-shaped stream chunks, noting the provider."""

    def feed(self, chunk: Any) -> None:
        """Take one chunk."""
        super().feed(chunk)
        self.gathered.provider = _hidden_provider(chunk) or self.gathered.provider


def _completion(name: str, is_async: bool) -> Api:
    return Api(
        provider="litellm",
        name=name,
        path=(),
        methods={name: "call"},
        conversation=request_messages,
        place=place_chat,
        reply=litellm_reply,
        collector=LiteLLMCollector,
        is_async=is_async,
        positional=("model", "messages"),
        endpoint=lambda module: ("litellm", None),
        routed=routed_provider,
    )


#: The LiteLLM functions a registration patches on the module.
LITELLM_APIS = (_completion("completion", False), _completion("acompletion", True))
