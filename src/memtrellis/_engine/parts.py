"""The collaborators of one ``Memory``: what its reader, writer and capturer share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memtrellis._engine.scopes import Scopes
from memtrellis._engine.stats import FacadeStats
from memtrellis.capture.config import CaptureConfig
from memtrellis.embeddings.base import Embedder
from memtrellis.extraction.pipeline import Extractor
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.lifecycle.relation_judge import LLMRelationJudge
from memtrellis.recall.rerank import RerankStage
from memtrellis.store import Store

__all__ = ["Parts"]


@dataclass
class Parts:
    """Everything the engine's reader, writer and capturer work with (never the ``Memory``).

    Attributes:
        path: The store directory (the capture spool lives under it).
        store: The store: entity shards, vectors, catalog; its ``writing(entity)`` is the
            write lock, taken by the writer alone.
        embedder: Embeds documents and queries.
        extractor: Turns messages, text and documents into memories.
        lifecycle: Validity, confidence, decay and matching thresholds.
        judge: The relation judge (how a new memory relates to the closest ones), when
            there is an LLM.
        capture: How captured turns are retried.
        stats: The counters ``Memory.health()`` reports.
        scopes: The default scope and the active ``Memory.scope()`` blocks.
        reranker: The second stage of recall, or ``None`` (first-stage order).
    """

    path: Path
    store: Store
    embedder: Embedder
    extractor: Extractor
    lifecycle: LifecycleConfig
    judge: LLMRelationJudge | None
    capture: CaptureConfig
    stats: FacadeStats
    scopes: Scopes
    reranker: RerankStage | None = None
