"""``MemoryRetriever``: recalled memories as LangChain ``Document``s."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from memtrellis import (
    InvalidInputError,
    Memory,
    MemoryItem,
    RecalledMemory,
    RecallExplanation,
    RecallResult,
)
from memtrellis.binding import DEFAULT_OPEN_ITEMS, AdapterOptions
from memtrellis.context import conversation_hint
from pydantic import Field

from langchain_memtrellis._defaults import default_memory
from langchain_memtrellis._messages import history_dicts

__all__ = ["MemoryRetriever", "to_document"]

log = logging.getLogger("langchain_memtrellis")


def to_document(hit: RecalledMemory) -> Document:
    """One recalled memory as a ``Document``: its text, and why and whence in metadata."""
    item = hit.memory
    why = hit.explanation
    return Document(
        id=item.id,
        page_content=item.text,
        metadata={
            "id": item.id,
            "type": item.memory_type.value,
            "confidence": item.confidence,
            "score": hit.score,
            "scores": {
                "dense": why.dense_score,
                "keyword": why.keyword_score,
                "fused": why.fused_score,
                "final": why.final_score,
            },
            "explanation": why.model_dump(mode="json"),
            "sources": [s.model_dump(mode="json", exclude_none=True) for s in item.sources],
            "tags": list(item.tags),
            "entities": list(item.entities),
            "scope": item.scope.model_dump(exclude_none=True),
            "created_at": item.created_at.isoformat(),
            "valid_until": item.valid_until.isoformat() if item.valid_until else None,
        },
    )


class MemoryRetriever(BaseRetriever):
    """A retriever over memtrellis recall: fused dense, keyword and graph scores.

    ``invoke(query, k=..., token_budget=...)`` overrides the defaults for one call. The
    async path awaits ``Memory.arecall``, which runs recall off the event loop.

    A failure inside memory (a store that cannot be read, say) does not break the chain:
    it is logged, counted in ``Memory.health().adapter_recall_failures`` and the
    retriever returns no documents, unless ``strict``. A wrong argument (a query that is
    not text, a bad ``k``) is the caller's error and raises ``InvalidInputError``.

    The attributes below are also the constructor's keyword arguments (pydantic fields).

    Attributes:
        memory: The store; default the shared ``Memory()``.
        k: Documents returned at most.
        token_budget: Stop before the memories' rendered lines exceed this many tokens.
        entity_id: Whose memories (default: the memory's default entity).
        process_id: Only this app's or agent's memories.
        session_id: Only this session's memories (default: every session).
        strict: Raise memory failures instead of returning no documents.
        context_hint: Whether the conversation steers recall
            (``Memory.recall(context_hint=...)``): ``True`` (default) takes the turns of
            ``invoke(query, chat_history=[...messages])``, ``False`` never steers, a
            string is the summary itself; per call, ``invoke(query, context_hint=...)``.
        open_items: Also return up to this many of the entity's open decisions and
            action items that recall did not (``metadata["open_item"]`` is True), after
            the recalled ones (0, the default: none; ``True``: the adapters' default, 10).
            The retriever has no recent-conversation stage: it returns documents, and
            the chain decides what else the prompt holds.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> from langchain_memtrellis import MemoryRetriever
        >>> memory = Memory(tempfile.mkdtemp(), entity_id="alice", embedder=HashingEmbedder())
        >>> _ = memory.add("Alice's cat is called Miso")
        >>> [doc] = MemoryRetriever(memory=memory, k=1).invoke("what is the cat called?")
        >>> doc.page_content, doc.metadata["type"]
        ("Alice's cat is called Miso", 'fact')
        >>> memory.close()
    """

    memory: Memory = Field(default_factory=default_memory, exclude=True)
    k: int = Field(default=4, ge=1, le=1000)
    token_budget: int | None = Field(default=None, ge=0)
    entity_id: str | None = None
    process_id: str | None = None
    session_id: str | None = None
    strict: bool = False
    context_hint: bool | str | None = True
    open_items: int = 0

    def __init__(self, /, **data: Any) -> None:
        # The adapters' checks (InvalidInputError) before pydantic's coercion.
        hint, opened = data.get("context_hint"), data.get("open_items", 0)
        if opened is True:
            data["open_items"] = DEFAULT_OPEN_ITEMS
        elif opened is not False:
            AdapterOptions(open_items=opened)
        if not (hint is None or isinstance(hint, (bool, str))):
            raise InvalidInputError("context_hint must be True, False or a summary text")
        super().__init__(**data)

    def _args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        hint = kwargs.get("context_hint", self.context_hint)
        history = kwargs.get("chat_history")
        if hint is True or hint is None:
            hint = None
            if history:
                said = [*history_dicts(history), {"role": "user", "content": "?"}]
                hint = conversation_hint(said)
        elif hint is False:
            hint = None
        return {
            "k": kwargs.get("k", self.k),
            "token_budget": kwargs.get("token_budget", self.token_budget),
            "entity_id": self.entity_id,
            "process_id": self.process_id,
            "session_id": self.session_id,
            "context_hint": hint,
        }

    def _documents(self, result: RecallResult, opened: Sequence[MemoryItem] = ()) -> list[Document]:
        documents = [to_document(hit) for hit in result.items]
        shown = {hit.memory.id for hit in result.items}
        for item in opened:
            if item.id not in shown:
                hit = RecalledMemory(memory=item, score=0.0, explanation=RecallExplanation())
                document = to_document(hit)
                document.metadata["open_item"] = True
                documents.append(document)
        return documents

    def _open_args(self) -> dict[str, Any]:
        return {
            "entity_id": self.entity_id,
            "process_id": self.process_id,
            "limit": self.open_items,
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        if isinstance(query, str) and not query.strip():
            return []  # a blank question has no memories (as in the LlamaIndex retriever)
        try:
            result = self.memory.recall(query, **self._args(kwargs))
            opened = self.memory.open_items(**self._open_args()) if self.open_items else []
            return self._documents(result, opened)
        except InvalidInputError:
            raise
        except Exception as exc:
            return self._failed(exc)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        if isinstance(query, str) and not query.strip():
            return []
        try:
            result = await self.memory.arecall(query, **self._args(kwargs))
            opened = await self.memory.aopen_items(**self._open_args()) if self.open_items else []
            return self._documents(result, opened)
        except InvalidInputError:
            raise
        except Exception as exc:
            return self._failed(exc)

    def _failed(self, exc: Exception) -> list[Document]:
        self.memory.report_failure("recall", source="langchain", error=exc)
        if self.strict:
            raise exc
        log.warning("memtrellis recall failed; the retriever returns no documents: %r", exc)
        return []
