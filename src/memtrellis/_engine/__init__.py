"""The engine under the [`Memory`][memtrellis.Memory] facade (private).

One `Engine` holds a memory's collaborators (`Parts`: the store, embedder, extractor,
lifecycle, relation judge, stats and scopes) and the three that work with them and never
with the ``Memory``: the `Reader` (by id, pages, recall), the `Writer` (the one owner of
the write lock, the refresh under it and the lifecycle's commit) and the `Capturer` (the
spool and worker, storing through the writer). ``memory.py`` checks arguments and
delegates to them in one line.
"""

from __future__ import annotations

from pathlib import Path

from memtrellis._engine.capturer import Capturer
from memtrellis._engine.parts import Parts
from memtrellis._engine.reader import Reader
from memtrellis._engine.scopes import DEFAULT_ENTITY, Scopes
from memtrellis._engine.stats import FacadeStats, store_figures
from memtrellis._engine.writer import Writer
from memtrellis.embeddings.base import Embedder
from memtrellis.extraction.pipeline import Extractor
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.lifecycle.judge import LLMJudge
from memtrellis.store import Store
from memtrellis.types import Health, Scope

__all__ = ["DEFAULT_ENTITY", "Capturer", "Engine", "Parts", "Reader", "Scopes", "Writer"]


class Engine:
    """A memory's collaborators and its reader, writer and capturer."""

    def __init__(
        self,
        *,
        path: Path,
        store: Store,
        embedder: Embedder,
        extractor: Extractor,
        lifecycle: LifecycleConfig,
        judge: LLMJudge | None,
        default_scope: Scope,
    ) -> None:
        self.parts = Parts(
            path=path,
            store=store,
            embedder=embedder,
            extractor=extractor,
            lifecycle=lifecycle,
            judge=judge,
            stats=FacadeStats(),
            scopes=Scopes(default_scope),
        )
        self.store = store
        self.stats = self.parts.stats
        self.scopes = self.parts.scopes
        self.reader = Reader(self.parts)
        self.writer = Writer(self.parts)
        self.capturer = Capturer(self.parts, self.writer)
        self.writer.spool = self.capturer.service  # forget(entity_id=) purges its turns

    def health(self) -> Health:
        """Counts, edges, latency, capture queue and disk size."""
        parts = self.parts
        parts.store.check_open()
        service = self.capturer.service
        capture = service.stats
        failures = parts.extractor.failures
        return Health(
            path=str(parts.path.resolve()),
            embedder_model_id=parts.embedder.model_id,
            embedder_dimension=parts.embedder.dimension,
            capture_queue_depth=service.depth,
            capture_spooled=service.spool.open_entries,
            capture_retries=capture.retries,
            capture_failures=capture.failures,
            llm_failures=parts.extractor.llm_failures,
            extraction_timeouts=failures.timeouts,
            extraction_errors=failures.errors,
            extraction_garbage=failures.garbage,
            extraction_retries=failures.retries + capture.extraction_retries,
            judge_failures=parts.judge.failures if parts.judge is not None else 0,
            **store_figures(parts.store),
            **parts.stats.figures(),
        )
