"""When a run is not captured: the documented skip switch, LangChain's own internal calls,
and runs whose messages a `MemoryChatMessageHistory` already stores.

Every capturing piece (the wrapper, the callback handlers, the agent middleware) asks
`capture_skipped` before it captures, so the rules are written once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig, ensure_config
from memtrellis import Memory

from langchain_memtrellis.history import MemoryChatMessageHistory

__all__ = [
    "SKIP_CAPTURE_KEY",
    "SKIP_CAPTURE_TAG",
    "capture_skipped",
    "history_stores",
    "skip_capture",
]

#: Run metadata key: ``config={"metadata": {"memtrellis_skip_capture": True}}``.
SKIP_CAPTURE_KEY = "memtrellis_skip_capture"
#: Run tag with the same meaning: ``chain.with_config(tags=["memtrellis:skip_capture"])``.
SKIP_CAPTURE_TAG = "memtrellis:skip_capture"

# Metadata LangChain puts on model calls a middleware makes for itself
# (SummarizationMiddleware's summary call: ``lc_source`` and ``lc_internal_call``).
_INTERNAL_KEY = "lc_internal_call"
_INTERNAL_SOURCES = frozenset({"summarization"})


def skip_capture(config: RunnableConfig | None = None) -> RunnableConfig:
    """A run config whose run (and everything it calls) no memtrellis piece captures.

    The LangChain counterpart of the LlamaIndex package's ``skip_capture()``: pass it as
    a call's config, or merge it into a runnable with ``with_config``. Recall and
    placement still happen; only capture is skipped. It sets the tag `SKIP_CAPTURE_TAG`;
    the metadata key `SKIP_CAPTURE_KEY` set to true does the same.

    Args:
        config: A config to extend (copied, not changed); default an empty one.

    Examples:
        >>> from langchain_memtrellis import skip_capture
        >>> skip_capture()
        {'tags': ['memtrellis:skip_capture']}
        >>> skip_capture({"tags": ["rag"], "metadata": {"user": "alice"}})["tags"]
        ['rag', 'memtrellis:skip_capture']
    """
    out: RunnableConfig = {**(config or {})}
    tags = list(out.get("tags") or [])
    if SKIP_CAPTURE_TAG not in tags:
        tags.append(SKIP_CAPTURE_TAG)
    out["tags"] = tags
    return out


def capture_skipped(
    tags: Iterable[str] | None = None, metadata: Mapping[str, Any] | None = None
) -> bool:
    """Whether a run with these tags and metadata is left uncaptured.

    True for the skip switch (tag or metadata key) and for LangChain's internal model
    calls (a summarization middleware's summary call).

    Examples:
        >>> capture_skipped(["memtrellis:skip_capture"], {})
        True
        >>> capture_skipped([], {"lc_source": "summarization"})
        True
        >>> capture_skipped(["rag"], {"memtrellis_entity_id": "bob"})
        False
    """
    if SKIP_CAPTURE_TAG in (tags or ()):
        return True
    if not metadata:
        return False
    return (
        metadata.get(SKIP_CAPTURE_KEY) is True
        or bool(metadata.get(_INTERNAL_KEY))
        or metadata.get("lc_source") in _INTERNAL_SOURCES
    )


def history_stores(memory: Memory, config: RunnableConfig | None = None) -> bool:
    """Whether the current run is one of ``RunnableWithMessageHistory`` whose history is a
        `MemoryChatMessageHistory` writing to ``memory``: that history stores the run's
        messages, so the other pieces do not capture them again.

        ``config`` defaults to the config of the runnable being run (LangChain keeps it in a
        context variable while a chain's step runs).

        Examples:
            >>> import tempfile
            >>> from memtrellis import Memory

    from langchain_memtrellis.history import MemoryChatMessageHistory
            >>> from memtrellis.testing import HashingEmbedder
            >>> from langchain_memtrellis import MemoryChatMessageHistory
            >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
            >>> history = MemoryChatMessageHistory("s1", memory)
            >>> history_stores(memory, {"configurable": {"message_history": history}})
            True
            >>> history_stores(memory, {})
            False
            >>> memory.close()
    """
    current = ensure_config(config)
    history = (current.get("configurable") or {}).get("message_history")
    return isinstance(history, MemoryChatMessageHistory) and history.memory is memory
