"""langchain-memtrellis: long-term memory for LangChain chat models, chains and agents.

* [`ChatMemoryWrapper`][langchain_memtrellis.ChatMemoryWrapper]: wraps any chat model; recalls
before, captures after.
* [`MemoryCallbackHandler`][langchain_memtrellis.MemoryCallbackHandler] /
  [`AsyncMemoryCallbackHandler`][langchain_memtrellis.AsyncMemoryCallbackHandler]: capture the turns
  of any chain or agent.
* [`MemoryRetriever`][langchain_memtrellis.MemoryRetriever]: recalled memories as ``Document``s.
* [`memory_context`][langchain_memtrellis.memory_context]: LCEL step placing memory context into a
prompt's messages.
* `MemoryMiddleware`: ``create_agent`` middleware (``agents`` extra).
* `MemtrellisStore`: a LangGraph ``BaseStore`` for ``create_agent(..., store=...)`` and
  ``StateGraph.compile(store=...)`` (needs ``langgraph``: the ``store`` extra).
* [`memory_tools`][langchain_memtrellis.memory_tools]: agent tools to save, search, relate and
  forget memories ([`SaveMemoryTool`][langchain_memtrellis.SaveMemoryTool],
  [`SearchMemoryTool`][langchain_memtrellis.SearchMemoryTool],
  [`RelateMemoriesTool`][langchain_memtrellis.RelateMemoriesTool],
  [`ForgetMemoryTool`][langchain_memtrellis.ForgetMemoryTool]).
* [`MemoryChatMessageHistory`][langchain_memtrellis.MemoryChatMessageHistory]: a session's messages
for ``RunnableWithMessageHistory``.
* [`skip_capture`][langchain_memtrellis.skip_capture]: a run config that no piece captures.
* [`as_llm`][langchain_memtrellis.as_llm]: a chat model as the core's extraction LLM (also automatic
  through the ``memtrellis.llm_adapters`` entry point).

Examples:
    >>> import tempfile
    >>> from langchain_core.language_models import GenericFakeChatModel
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
    >>> chat = memory.register(langchain=GenericFakeChatModel(messages=iter(["ok"])))
    >>> type(chat).__name__
    'ChatMemoryWrapper'
    >>> memory.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_memtrellis._bridge import AdapterStats
from langchain_memtrellis._skip import SKIP_CAPTURE_KEY, SKIP_CAPTURE_TAG, skip_capture
from langchain_memtrellis.adapters import LangChainLLM, as_llm
from langchain_memtrellis.callbacks import AsyncMemoryCallbackHandler, MemoryCallbackHandler
from langchain_memtrellis.history import MemoryChatMessageHistory
from langchain_memtrellis.middleware import MemoryContextRunnable, memory_context
from langchain_memtrellis.retriever import MemoryRetriever
from langchain_memtrellis.tools import (
    ForgetMemoryTool,
    RelateMemoriesTool,
    SaveMemoryTool,
    SearchMemoryTool,
    memory_tools,
)
from langchain_memtrellis.wrapper import ChatMemoryWrapper

if TYPE_CHECKING:
    from langchain_memtrellis.agent import MemoryMiddleware
    from langchain_memtrellis.store import MemtrellisStore

__version__ = "0.1.0"

__all__ = [
    "SKIP_CAPTURE_KEY",
    "SKIP_CAPTURE_TAG",
    "AdapterStats",
    "AsyncMemoryCallbackHandler",
    "ChatMemoryWrapper",
    "ForgetMemoryTool",
    "LangChainLLM",
    "MemoryCallbackHandler",
    "MemoryChatMessageHistory",
    "MemoryContextRunnable",
    "MemoryMiddleware",
    "MemoryRetriever",
    "MemtrellisStore",
    "RelateMemoriesTool",
    "SaveMemoryTool",
    "SearchMemoryTool",
    "__version__",
    "as_llm",
    "memory_context",
    "memory_tools",
    "skip_capture",
]


def __getattr__(name: str) -> Any:
    # Lazy: the agent middleware needs `langchain` (the `agents` extra) and the store
    # `langgraph` (the `store` extra); the rest only langchain-core.
    if name == "MemoryMiddleware":
        from langchain_memtrellis.agent import MemoryMiddleware

        return MemoryMiddleware
    if name == "MemtrellisStore":
        from langchain_memtrellis.store import MemtrellisStore

        return MemtrellisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
