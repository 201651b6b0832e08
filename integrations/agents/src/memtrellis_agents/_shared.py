"""What the frameworks' modules share, framework-free: the check of an ``entity_id``
option and the ``relate_memories`` tool's work."""

from __future__ import annotations

from typing import Any

from memtrellis import InvalidInputError, Memory
from memtrellis.context import relations_text

__all__ = ["DESCRIPTION", "check_entity", "relate_answer"]

#: What the model is told the tool does.
DESCRIPTION = (
    "Find how two people, places or things the user mentioned are related, through the "
    "user's memories. Returns the chains of memories that connect them."
)


def check_entity(entity_id: Any) -> None:
    """Refuse an ``entity_id`` that is neither an id, a callable of the run context nor None.

    Examples:
        >>> check_entity(lambda ctx: ctx.deps.user_id)
        >>> check_entity(3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: entity_id must be a string, a callable of ...
    """
    if entity_id is not None and not (isinstance(entity_id, str) or callable(entity_id)):
        raise InvalidInputError("entity_id must be a string, a callable of the context or None")


async def relate_answer(
    memory: Memory, a: str, b: str, *, entity_id: str | None, process_id: str | None
) -> str:
    """What the tool answers: `relations_text` of ``Memory.arelate`` (off the event
    loop), or why the two cannot be related.

    Examples:
        >>> import asyncio, tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     asyncio.run(relate_answer(memory, "Hana", "Kyoto", entity_id=None,
        ...                               process_id=None))
        'Nothing in the memories is about Hana or Kyoto.'
    """
    try:
        found = await memory.arelate(a, b, entity_id=entity_id, process_id=process_id)
    except InvalidInputError as exc:
        return f"Cannot relate them: {exc}"
    return relations_text(found)
