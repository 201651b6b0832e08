"""Recall for a query and render it as a memory-context block: the one step every adapter
that puts memory into a prompt shares (the block, the LLM wrapper)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from memtrellis import Memory, RecallResult
from memtrellis.context import MemoryContext, build_context

__all__ = ["RecallSettings", "Recalled", "arecall_context", "recall_context"]


@dataclass(frozen=True)
class RecallSettings:
    """Whose memory to search and how much of it to place."""

    entity_id: str | None = None
    process_id: str | None = None
    k: int = 8
    token_budget: int = 600


Recalled = tuple[RecallResult, MemoryContext]


def _render(result: RecallResult, settings: RecallSettings, exclude: Collection[str]) -> Recalled:
    if exclude:
        kept = [entry for entry in result.items if entry.memory.text not in exclude]
        if len(kept) < len(result.items):
            result = result.model_copy(update={"items": kept})
    return result, build_context(result, token_budget=settings.token_budget)


def recall_context(
    memory: Memory, query: str, settings: RecallSettings, exclude: Collection[str] = ()
) -> Recalled:
    """Recall for ``query`` and render the block (its ``text`` is ``""`` when nothing fits).

    Memories whose text is one of ``exclude`` (the messages already in the prompt's chat
    history) are left out of the block.
    """
    result = memory.recall(
        query, entity_id=settings.entity_id, process_id=settings.process_id, k=settings.k
    )
    return _render(result, settings, exclude)


async def arecall_context(
    memory: Memory, query: str, settings: RecallSettings, exclude: Collection[str] = ()
) -> Recalled:
    """Async `recall_context`: recall runs off the event loop."""
    result = await memory.arecall(
        query, entity_id=settings.entity_id, process_id=settings.process_id, k=settings.k
    )
    return _render(result, settings, exclude)
