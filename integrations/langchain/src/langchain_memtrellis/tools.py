"""Agent tools over memtrellis: save, search, relate and forget a user's memories.

The user is the tool's ``entity_id`` when one is given; else the run names it, read as
every adapter of this package reads it (`langchain_memtrellis._bridge.scope_from`):
``memtrellis_entity_id`` in the run's metadata, ``configurable`` or LangGraph runtime
``context``, else ``user_key`` (default ``user_id``) in the context, the
``configurable`` or the metadata. The session is read the same way
(``memtrellis_session_id``, ``session_id``, ``thread_id``). A call that names no user is
refused with ``InvalidInputError`` when ``require_user=True``; otherwise it falls to
the memory's default entity, with a warning logged once per tool.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from memtrellis import InvalidInputError, Memory, MemoryItem, MemoryNotFoundError, MemoryType, Scope
from memtrellis.context import escape_line, relations_text
from memtrellis.tool_calls import mark_memory_tools
from pydantic import BaseModel, Field, PrivateAttr

from langchain_memtrellis._bridge import scope_from
from langchain_memtrellis._defaults import default_memory

__all__ = [
    "SAVED_TAG",
    "ForgetMemoryTool",
    "RelateMemoriesTool",
    "SaveMemoryTool",
    "SearchMemoryTool",
    "memory_tools",
]

log = logging.getLogger("langchain_memtrellis")

SAVED_TAG = "agent:saved"
"""The tag of every memory the save tool stores."""

MemoryKind = Literal["fact", "preference", "event", "decision", "state", "skill"]


class _MemoryTool(BaseTool):
    """What the tools share: the memory, whose memories, and how to find the user."""

    memory: Memory = Field(default_factory=default_memory, exclude=True)
    entity_id: str | None = None
    process_id: str | None = None
    user_key: str = "user_id"
    require_user: bool = False
    _warned: bool = PrivateAttr(default=False)

    def model_post_init(self, context: Any, /) -> None:
        """Name the tool as one of memtrellis's own: a captured turn leaves out its calls
        and results (what it saves is stored by the tool, never a second time)."""
        super().model_post_init(context)
        mark_memory_tools([self.name])

    def _named(self, config: RunnableConfig | None) -> dict[str, str]:
        """The scope the run names, read as every adapter reads it (`scope_from`)."""
        config = config or {}
        return scope_from(
            config.get("metadata"),
            configurable=config.get("configurable"),
            context=_context(),
            user_keys=(self.user_key,),
        )

    def _user(self, config: RunnableConfig | None) -> str:
        """The entity this call is for (see the module's docstring for the order)."""
        if self.entity_id is not None:
            return self.entity_id
        found = self._named(config).get("entity_id")
        if found is not None:
            return found
        if self.require_user:
            raise InvalidInputError(
                f"the {self.name} tool needs a user: give it entity_id=, or run the agent "
                f"with context {self.user_key}= or config['configurable'][{self.user_key!r}]"
            )
        default = self.memory.default_scope.entity_id
        if not self._warned:
            self._warned = True
            log.warning(
                "the %s tool ran without a user; using the memory's default entity %r",
                self.name,
                default,
            )
        return default

    def _process(self) -> str | None:
        """The tool's process, else the memory's own."""
        return (
            self.process_id if self.process_id is not None else self.memory.default_scope.process_id
        )

    def _session(self, config: RunnableConfig | None) -> str | None:
        """The run's session (its ``thread_id`` unless it names one)."""
        return self._named(config).get("session_id")


def _context() -> Any:
    """The current LangGraph run's ``context``, if any."""
    try:
        from langgraph.runtime import get_runtime
    except ImportError:  # langchain-core alone: no graph, no runtime
        return None
    try:
        return get_runtime().context
    except (RuntimeError, AttributeError, KeyError):  # not inside a graph run
        return None


def _line(item: MemoryItem) -> str:
    # What the model reads: escaped as in the memory context (markup, invisible characters).
    text = escape_line(item.text)
    return f"- [{item.id}] {text} ({item.memory_type.value}, {item.created_at:%Y-%m-%d})"


# -- save -----------------------------------------------------------------------------------
class _SaveArgs(BaseModel):
    content: str = Field(description="The memory to keep, as one self-contained statement.")
    memory_type: MemoryKind = Field(default="fact", description="What kind of memory it is.")
    memory_id: str | None = Field(
        default=None, description="To correct a memory you found before: its id (replaces it)."
    )


class SaveMemoryTool(_MemoryTool):
    """Saves one memory of the user (or corrects one by id); answers with its id.

    A new memory goes through memtrellis's lifecycle: a duplicate of a memory the user
    already has is merged into it (the answer names that memory), and one that
    contradicts an older memory supersedes it. Saved memories carry the tag
    ``agent:saved`` and the run's thread as their session.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import SaveMemoryTool
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> tool = SaveMemoryTool(memory=memory, entity_id="alice")
        >>> tool.invoke({"content": "Alice is allergic to peanuts"})  # doctest: +ELLIPSIS
        'Saved memory ...: Alice is allergic to peanuts'
        >>> [m.text for m in memory.list(entity_id="alice")]
        ['Alice is allergic to peanuts']
        >>> memory.close()
    """

    name: str = "save_memory"
    description: str = (
        "Save a lasting fact, preference or decision about the user for later conversations. "
        "Pass memory_id to correct a memory found with search_memory."
    )
    args_schema: type[BaseModel] = _SaveArgs

    def _run(
        self,
        content: str,
        memory_type: MemoryKind = "fact",
        memory_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> str:
        entity = self._user(config)
        if memory_id is not None:
            try:
                item = self.memory.update(
                    memory_id, entity_id=entity, text=content, memory_type=memory_type
                )
            except MemoryNotFoundError:
                return f"No memory {memory_id} to correct; nothing was saved."
            return f"Updated memory {item.id}: {escape_line(item.text)}"
        scope = Scope(
            entity_id=entity, process_id=self._process(), session_id=self._session(config)
        )
        new = MemoryItem(
            text=content,
            memory_type=MemoryType(memory_type),
            tags=[SAVED_TAG],
            confidence=0.9,
            scope=scope,
        )
        stored = self.memory.store(new)
        if stored.id != new.id:
            return f"Already remembered as memory {stored.id}: {escape_line(stored.text)}"
        return f"Saved memory {stored.id}: {escape_line(stored.text)}"

    async def _arun(
        self,
        content: str,
        memory_type: MemoryKind = "fact",
        memory_id: str | None = None,
        *,
        config: RunnableConfig,
    ) -> str:
        # to_thread copies the context: the run's LangGraph runtime is still found there
        return await asyncio.to_thread(self._run, content, memory_type, memory_id, config=config)


# -- search ---------------------------------------------------------------------------------
class _SearchArgs(BaseModel):
    query: str = Field(description="What to look for in the user's memories.")
    limit: int | None = Field(default=None, ge=1, le=50, description="How many at most.")


class SearchMemoryTool(_MemoryTool):
    """Searches the user's memories with memtrellis recall; one line per memory.

    The answer lists each memory as ``- [id] text (type, date)``, best first, or says
    that none was found; the recalled memories are the tool message's ``artifact``.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import SearchMemoryTool
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice's cat is called Miso", entity_id="alice")
        >>> tool = SearchMemoryTool(memory=memory, entity_id="alice")
        >>> print(tool.invoke({"query": "cat"}))  # doctest: +ELLIPSIS
        - [...] Alice's cat is called Miso (fact, ...)
        >>> memory.close()
    """

    name: str = "search_memory"
    description: str = (
        "Search what you remember about the user from earlier conversations. "
        "Returns one memory per line with its id."
    )
    args_schema: type[BaseModel] = _SearchArgs
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    k: int = Field(default=5, ge=1, le=50)

    def _run(
        self, query: str, limit: int | None = None, *, config: RunnableConfig
    ) -> tuple[str, list[dict[str, Any]]]:
        entity = self._user(config)
        if not query.strip():
            return "No memories found.", []
        found = self.memory.recall(
            query, entity_id=entity, process_id=self._process(), k=limit or self.k
        )
        if not found.items:
            return "No memories found.", []
        lines = [_line(hit.memory) for hit in found.items]
        artifact = [
            {"id": hit.memory.id, "text": hit.memory.text, "score": hit.score}
            for hit in found.items
        ]
        return "\n".join(lines), artifact

    async def _arun(
        self, query: str, limit: int | None = None, *, config: RunnableConfig
    ) -> tuple[str, list[dict[str, Any]]]:
        return await asyncio.to_thread(self._run, query, limit, config=config)


# -- relate -------------------------------------------------------------------------------
class _RelateArgs(BaseModel):
    a: str = Field(description="A person, place or thing the user talked about, or a memory id.")
    b: str = Field(description="Another person, place or thing, or a memory id.")


class RelateMemoriesTool(_MemoryTool):
    """How two things in the user's memories are related, from the memory graph (no LLM).

    The answer lists each path, best supported first, as the memories it goes through
    (``- [id] text``) joined by the kind of each link; the paths are the tool message's
    ``artifact`` (`memtrellis.Relations.paths` as dicts). See ``Memory.relate``.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import RelateMemoriesTool
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Hana moved to Kyoto in 2023.", entity_id="alice")
        >>> tool = RelateMemoriesTool(memory=memory, entity_id="alice")
        >>> print(tool.invoke({"a": "Hana", "b": "Kyoto"}))  # doctest: +ELLIPSIS
        Hana and Kyoto are related through:
        1. Hana -mentions- [...] Hana moved to Kyoto in 2023. -mentions- Kyoto
        >>> memory.close()
    """

    name: str = "relate_memories"
    description: str = (
        "Find how two people, places or things the user mentioned are related, through "
        "the user's memories. Returns the chains of memories that connect them."
    )
    args_schema: type[BaseModel] = _RelateArgs
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def _run(self, a: str, b: str, *, config: RunnableConfig) -> tuple[str, list[dict[str, Any]]]:
        entity = self._user(config)
        if not a.strip() or not b.strip():
            return "Name two things to relate.", []
        found = self.memory.relate(a, b, entity_id=entity, process_id=self._process())
        return relations_text(found), [path.model_dump(mode="json") for path in found.paths]

    async def _arun(
        self, a: str, b: str, *, config: RunnableConfig
    ) -> tuple[str, list[dict[str, Any]]]:
        return await asyncio.to_thread(self._run, a, b, config=config)


# -- forget ---------------------------------------------------------------------------------
class _ForgetArgs(BaseModel):
    memory_id: str = Field(description="The id of the memory to forget, from search_memory.")


class ForgetMemoryTool(_MemoryTool):
    """Forgets one of the user's memories by id (never another user's).

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import ForgetMemoryTool
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> [item] = memory.add("Alice lives in Lyon", entity_id="alice")
        >>> tool = ForgetMemoryTool(memory=memory, entity_id="alice")
        >>> tool.invoke({"memory_id": item.id}) == f"Forgot memory {item.id}."
        True
        >>> memory.list(entity_id="alice")
        []
        >>> memory.close()
    """

    name: str = "forget_memory"
    description: str = (
        "Forget a memory about the user that is wrong or that they asked you to forget, "
        "by its id from search_memory."
    )
    args_schema: type[BaseModel] = _ForgetArgs

    def _run(self, memory_id: str, *, config: RunnableConfig) -> str:
        entity = self._user(config)
        try:
            self.memory.forget(memory_id, entity_id=entity)
        except MemoryNotFoundError:
            return f"No memory {memory_id} to forget."
        return f"Forgot memory {memory_id}."

    async def _arun(self, memory_id: str, *, config: RunnableConfig) -> str:
        return await asyncio.to_thread(self._run, memory_id, config=config)


def memory_tools(
    memory: Memory | None = None,
    *,
    entity_id: str | None = None,
    process_id: str | None = None,
    k: int = 5,
    user_key: str = "user_id",
    require_user: bool = False,
) -> list[BaseTool]:
    """The memory tools for an agent: save, search, relate and forget, sharing one scope.

    Args:
        memory: The store; default the shared ``Memory()``.
        entity_id: A fixed user; default the user each run names.
        process_id: The app or agent the memories belong to (saved with it, searched in it).
        k: Memories a search returns unless the model asks for fewer or more.
        user_key: The name of the user's id in the runtime context and ``configurable``.
        require_user: Refuse a call that names no user (``InvalidInputError``).

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import memory_tools
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> [tool.name for tool in memory_tools(memory)]
        ['save_memory', 'search_memory', 'relate_memories', 'forget_memory']
        >>> memory.close()
    """
    memory = memory if memory is not None else default_memory()
    shared: dict[str, Any] = {
        "memory": memory,
        "entity_id": entity_id,
        "process_id": process_id,
        "user_key": user_key,
        "require_user": require_user,
    }
    return [
        SaveMemoryTool(**shared),
        SearchMemoryTool(**shared, k=k),
        RelateMemoriesTool(**shared),
        ForgetMemoryTool(**shared),
    ]
