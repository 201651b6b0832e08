"""``MemoryRetriever``: memtrellis recall as a LlamaIndex retriever."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from memtrellis import Memory, RecalledMemory, RecallResult
from memtrellis.binding import DEFAULT_K, AdapterStats

from llama_index.memory.memtrellis._settings import binding_for

__all__ = ["MemoryRetriever", "to_node"]

# Provenance and scores are for the application, not for the model answering from the
# nodes: they stay out of the text LlamaIndex puts into prompts and embeds.
_HIDDEN_FROM_LLM = ["sources", "explanation", "memory_id", "scope", "entities", "tags"]


def to_node(hit: RecalledMemory) -> NodeWithScore:
    """One recalled memory as a ``NodeWithScore``; the node id is the memory id.

    Metadata: ``memory_id``, ``memory_type``, ``confidence``, ``created_at``,
    ``valid_from``/``valid_until`` (ISO strings or ``None``), ``tags``, ``entities``,
    ``scope``, ``sources`` (message id, role, speaker, timestamp, excerpt of each) and
    ``explanation`` (dense, keyword and graph scores, decay, final score).
    """
    item = hit.memory
    metadata: dict[str, Any] = {
        "memory_id": item.id,
        "memory_type": item.memory_type.value,
        "confidence": item.confidence,
        "created_at": item.created_at.isoformat(),
        "valid_from": item.valid_from.isoformat() if item.valid_from else None,
        "valid_until": item.valid_until.isoformat() if item.valid_until else None,
        "tags": list(item.tags),
        "entities": list(item.entities),
        "scope": item.scope.model_dump(),
        "sources": [source.model_dump(mode="json") for source in item.sources],
        "explanation": hit.explanation.model_dump(mode="json"),
    }
    node = TextNode(
        id_=item.id,
        text=item.text,
        metadata=metadata,
        excluded_llm_metadata_keys=list(_HIDDEN_FROM_LLM),
        excluded_embed_metadata_keys=list(_HIDDEN_FROM_LLM),
    )
    return NodeWithScore(node=node, score=hit.score)


class MemoryRetriever(BaseRetriever):
    """Recall from memtrellis as LlamaIndex nodes, best first.

    Each node is one memory; its score is the recall's final score and its metadata
    carries the provenance (``sources``), ``confidence`` and the ``explanation`` of the
    score (see `to_node`). `aretrieve` runs recall off the event loop
    (``Memory.arecall``). Works on its own, in a ``RetrieverQueryEngine`` and among
    the retrievers of a ``QueryFusionRetriever``.

    A memory failure is logged and counted in
    [`failures`][llama_index.memory.memtrellis.MemoryRetriever.failures] and the retriever returns
    no nodes; ``strict=True`` raises instead.

    Args:
        memory: The memtrellis [`Memory`][memtrellis.Memory].
        k: Most memories per query.
        entity_id: Whose memory (default: the ``Memory``'s own).
        process_id: Which app or agent (default: the ``Memory``'s own).
        session_id: Only memories of this session (default: every session).
        token_budget: Stop before the memories' text exceeds this many tokens.
        strict: Raise memory failures instead of returning no nodes.
        callback_manager: LlamaIndex callback manager.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("The deploy freeze starts on Friday")
        >>> [node] = MemoryRetriever(memory, k=3).retrieve("when does the freeze start?")
        >>> node.text, node.metadata["memory_type"], "final_score" in node.metadata["explanation"]
        ('The deploy freeze starts on Friday', 'fact', True)
        >>> memory.close()
    """

    def __init__(
        self,
        memory: Memory,
        *,
        k: int = DEFAULT_K,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        token_budget: int | None = None,
        strict: bool = False,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise TypeError(f"memory must be a memtrellis Memory, not {type(memory).__name__}")
        super().__init__(callback_manager=callback_manager)
        self.memory = memory
        self.k = k
        self.entity_id = entity_id
        self.process_id = process_id
        self.session_id = session_id
        self.token_budget = token_budget
        self._stats = AdapterStats()
        # The core binding's fail-open and counting (the retriever's k and budget are its own:
        # it returns memories as nodes, not a rendered block).
        self._binding = binding_for(memory, self._stats, strict=strict)

    @property
    def failures(self) -> int:
        """Memory failures so far (logged; raised only when ``strict``)."""
        return self._stats.failures

    def _recall_args(self) -> dict[str, Any]:
        return {
            "entity_id": self.entity_id,
            "process_id": self.process_id,
            "session_id": self.session_id,
            "k": self.k,
            "token_budget": self.token_budget,
        }

    @staticmethod
    def _nodes(result: RecallResult) -> list[NodeWithScore]:
        return [to_node(hit) for hit in result.items]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        with self._binding.guard("recall"):
            return self._nodes(self.memory.recall(query_bundle.query_str, **self._recall_args()))
        return []

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not query_bundle.query_str.strip():
            return []
        with self._binding.guard("recall"):
            result = await self.memory.arecall(query_bundle.query_str, **self._recall_args())
            return self._nodes(result)
        return []
