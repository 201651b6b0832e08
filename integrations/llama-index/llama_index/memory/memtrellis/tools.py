"""``MemtrellisToolSpec``: tools an agent calls to save, search, relate and forget memories."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.tools.tool_spec.base import SPEC_FUNCTION_TYPE, BaseToolSpec
from memtrellis import InvalidInputError, Memory, MemoryNotFoundError
from memtrellis.context import escape_line, relations_text
from memtrellis.tool_calls import mark_memory_tools

__all__ = ["MemtrellisToolSpec"]

_TAGS = ("llama_index", "agent_tool")


class MemtrellisToolSpec(BaseToolSpec):
    """Agent tools over memtrellis, scoped to one entity: save, search, relate and forget.

    ``to_tool_list()`` gives four ``FunctionTool``\\ s for any LlamaIndex agent:
    `save_memory`, `search_memories`, `relate_memories` and `forget_memory`. Every call
    reads and writes only ``entity_id``'s memories (the model chooses what to remember,
    never whose): an id of another entity's memory is "not found". Saved memories are
    stored at once in fast mode (the model already wrote them as a memory), tagged
    ``llama_index`` and ``agent_tool``.

    Args:
        memory: The memtrellis [`Memory`][memtrellis.Memory].
        entity_id: Whose memories (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        session_id: Session recorded on saved memories.
        k: Most memories a search returns.

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> store = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> spec = MemtrellisToolSpec(store, entity_id="ann")
        >>> [tool.metadata.name for tool in spec.to_tool_list()]
        ['save_memory', 'search_memories', 'relate_memories', 'forget_memory']
        >>> saved = spec.save_memory("Ann is allergic to peanuts")
        >>> saved.startswith("Saved memory ")
        True
        >>> print(spec.search_memories("allergies?").split(": ", 1)[1])
        Ann is allergic to peanuts
        >>> spec.forget_memory(saved.split()[2].rstrip(":"))[:9]
        'Forgotten'
        >>> store.close()
    """

    spec_functions: list[SPEC_FUNCTION_TYPE] = [  # noqa: RUF012 (LlamaIndex's own attribute)
        "save_memory",
        "search_memories",
        "relate_memories",
        "forget_memory",
    ]

    def __init__(
        self,
        memory: Memory,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int = 5,
    ) -> None:
        self.memory = memory
        # Captured turns leave out these tools' calls and results: what they save is
        # stored by the tool itself, never a second time as a captured tool call.
        mark_memory_tools(str(name) for name in self.spec_functions)
        self.entity_id = memory.default_scope.entity_id if entity_id is None else entity_id
        self.process_id = process_id
        self.session_id = session_id
        self.k = k

    def save_memory(self, content: str) -> str:
        """Save one fact, preference or event about the user to long-term memory, to be
        remembered in later conversations. Write it as a short, self-contained sentence.

        Args:
            content: What to remember, e.g. "The user is allergic to peanuts".
        """
        try:
            items = self.memory.add(
                content,
                entity_id=self.entity_id,
                process_id=self.process_id,
                session_id=self.session_id,
                tags=_TAGS,
                mode="fast",
            )
        except InvalidInputError as exc:
            return f"Not saved: {exc}"
        if not items:
            return "Nothing to save: the text was empty."
        return "\n".join(f"Saved memory {item.id}: {escape_line(item.text)}" for item in items)

    def search_memories(self, query: str) -> str:
        """Search the user's long-term memories for what is relevant to a question. Returns
        one memory a line as "<id>: <text>"; the id is what forget_memory takes.

        Args:
            query: What to look for, e.g. "food allergies".
        """
        result = self.memory.recall(
            query, entity_id=self.entity_id, process_id=self.process_id, k=self.k
        )
        return _lines(result.memories) or "No memories found."

    def relate_memories(self, a: str, b: str) -> str:
        """Find how two people, places or things the user mentioned are related, through
        the user's memories. Returns one chain of memories a line, best supported first.

        Args:
            a: A person, place or thing, e.g. "Hana", or a memory id.
            b: Another one, e.g. "Kyoto".
        """
        try:
            found = self.memory.relate(a, b, entity_id=self.entity_id, process_id=self.process_id)
        except InvalidInputError as exc:
            return f"Cannot relate them: {exc}"
        return relations_text(found)

    def forget_memory(self, memory_id: str) -> str:
        """Forget one of the user's memories, e.g. one that is wrong or that the user asked
        to be forgotten. Find its id with search_memories first.

        Args:
            memory_id: The id of the memory, as search_memories listed it.
        """
        try:
            item = self.memory.get(memory_id.strip(), entity_id=self.entity_id)
            self.memory.forget(item.id, entity_id=self.entity_id)
        except (MemoryNotFoundError, InvalidInputError):
            return f"No memory {memory_id!r} to forget."
        return f"Forgotten: {escape_line(item.text)}"


def _lines(items: Sequence[object]) -> str:
    # What the model reads: escaped as in the memory context (markup, invisible characters).
    return "\n".join(
        f"{getattr(i, 'id', '')}: {escape_line(str(getattr(i, 'text', '')))}" for i in items
    )
