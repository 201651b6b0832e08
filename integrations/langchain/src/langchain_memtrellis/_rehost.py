"""Put a memory wrapper where a chat model sits inside a runnable the model built.

``bind_tools`` and ``with_structured_output`` return runnables around the inner model
(a binding, a sequence with a parser, a map with fallbacks for ``include_raw``). Each
chat model found in that tree is replaced by the wrapper around it, so the provider's
own tool and schema handling is kept and memory stays in the call path.

The wrapper also takes a runnable around a chat model (``.bind``, ``.with_retry``,
``.with_fallbacks``, a configurable ``init_chat_model``); `apply_through` calls a chat
model's method through those layers, keeping them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import (
    Runnable,
    RunnableParallel,
    RunnableSequence,
    RunnableWithFallbacks,
)
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.passthrough import RunnableAssign
from memtrellis import InvalidInputError

if TYPE_CHECKING:
    from langchain_memtrellis.wrapper import ChatMemoryWrapper

__all__ = ["apply_through", "chat_model_in", "rehost"]


def chat_model_in(runnable: Runnable[Any, Any]) -> BaseChatModel | None:
    """The chat model inside bindings, retries and fallbacks (the first one); None when
    there is none to see (a configurable model is built at call time)."""
    node: Any = runnable
    while not isinstance(node, BaseChatModel):
        if isinstance(node, RunnableBindingBase):
            node = node.bound
        elif isinstance(node, RunnableWithFallbacks):
            node = node.runnable
        else:
            return None
    return node


def apply_through(
    runnable: Runnable[Any, Any], name: str, *args: Any, **kwargs: Any
) -> Runnable[Any, Any]:
    """``runnable`` with the chat model in it replaced by ``model.<name>(*args, **kwargs)``.

    A binding (``.bind``, ``.with_retry``, ``.with_config``) keeps its arguments and
    config around the result, fallbacks get the call each, a configurable model queues
    it (as its own method does).

    Raises:
        InvalidInputError: ``runnable`` is not a chat model nor built around one.
    """
    if isinstance(runnable, BaseChatModel):
        built: Runnable[Any, Any] = getattr(runnable, name)(*args, **kwargs)
        return built
    if isinstance(runnable, RunnableBindingBase):
        return runnable.model_copy(
            update={"bound": apply_through(runnable.bound, name, *args, **kwargs)}
        )
    if isinstance(runnable, RunnableWithFallbacks):
        return runnable.model_copy(
            update={
                "runnable": apply_through(runnable.runnable, name, *args, **kwargs),
                "fallbacks": [apply_through(f, name, *args, **kwargs) for f in runnable.fallbacks],
            }
        )
    method = getattr(runnable, name, None)
    if callable(method):  # e.g. init_chat_model(configurable_fields=...): queued
        out: Runnable[Any, Any] = method(*args, **kwargs)
        return out
    raise InvalidInputError(
        f"{type(runnable).__name__} has no {name}(): wrap the chat model itself, "
        f"ChatMemoryWrapper(model).{name}(...), and add the other layers around that"
    )


def rehost(runnable: Runnable[Any, Any], wrapper: ChatMemoryWrapper) -> Runnable[Any, Any]:
    """``runnable`` with every chat model in it wrapped like ``wrapper`` wraps its own.

    Raises:
        InvalidInputError: No chat model was found, so memory could not be kept in the
            call path (the provider built something this walk does not know).
    """
    found = 0

    def visit(node: Runnable[Any, Any]) -> Runnable[Any, Any]:
        nonlocal found
        if isinstance(node, BaseChatModel):
            found += 1
            return wrapper.model_copy(update={"llm": node})
        if isinstance(node, RunnableBindingBase):
            return node.model_copy(update={"bound": visit(node.bound)})
        if isinstance(node, RunnableSequence):
            return RunnableSequence(*(visit(step) for step in node.steps), name=node.name)
        if isinstance(node, RunnableParallel):
            return RunnableParallel({key: visit(step) for key, step in node.steps__.items()})
        if isinstance(node, RunnableAssign):
            return node.model_copy(update={"mapper": visit(node.mapper)})
        if isinstance(node, RunnableWithFallbacks):
            return node.model_copy(
                update={
                    "runnable": visit(node.runnable),
                    "fallbacks": [visit(f) for f in node.fallbacks],
                }
            )
        return node

    out = visit(runnable)
    if not found:
        raise InvalidInputError(
            f"{type(wrapper.llm).__name__} returned a {type(runnable).__name__} with no chat "
            "model inside that memtrellis can wrap (a configurable init_chat_model builds its "
            "model only at call time): choose the model first and wrap it, "
            "ChatMemoryWrapper(init_chat_model('provider:model')).with_structured_output(...)"
        )
    return out
