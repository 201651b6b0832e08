"""Put a memory wrapper where a chat model sits inside a runnable the model built.

``bind_tools`` and ``with_structured_output`` return runnables around the inner model
(a binding, a sequence with a parser, a map with fallbacks for ``include_raw``). Each
chat model found in that tree is replaced by the wrapper around it, so the provider's
own tool and schema handling is kept and memory stays in the call path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableParallel,
    RunnableSequence,
    RunnableWithFallbacks,
)
from langchain_core.runnables.passthrough import RunnableAssign
from memtrellis import InvalidInputError

if TYPE_CHECKING:
    from langchain_memtrellis.wrapper import ChatMemoryWrapper

__all__ = ["rehost"]


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
            return wrapper if node is wrapper.llm else wrapper.model_copy(update={"llm": node})
        if isinstance(node, RunnableBinding):
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
            "model inside that memtrellis can wrap; call the inner model directly instead"
        )
    return out
