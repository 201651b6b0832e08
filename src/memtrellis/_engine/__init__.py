"""The engine under the [`Memory`][memtrellis.Memory] facade (private).

One `Engine` holds a memory's collaborators (`Parts`: the store, embedder, extractor,
lifecycle, relation judge, stats and scopes) and the three that work with them and never
with the ``Memory``: the `Reader` (by id, pages, recall), the `Writer` (the one owner of
the write lock, the refresh under it and the lifecycle's commit) and the `Capturer` (the
spool and worker, storing through the writer). ``memory.py`` checks arguments and
delegates to them in one line.
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtrellis._engine.args import timeout_arg
from memtrellis._engine.capturer import Capturer
from memtrellis._engine.parts import Parts
from memtrellis._engine.reader import Reader
from memtrellis._engine.scopes import DEFAULT_ENTITY, Scopes
from memtrellis._engine.sessions import pending_turns, session_turns, stored_turns
from memtrellis._engine.stats import FacadeStats, store_figures
from memtrellis._engine.usage import UsageWatch, health_usage
from memtrellis._engine.writer import Writer
from memtrellis.capture.config import CaptureConfig, resolve_capture_config
from memtrellis.embeddings.base import Embedder, as_embedder
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.pipeline import ExtractionConfig, Extractor
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.lifecycle.relation_judge import LLMRelationJudge, llm_relation_judge
from memtrellis.lifecycle.relation_model import model_failures
from memtrellis.recall.rerank import RerankStage, as_reranker
from memtrellis.store import EmbedderInfo, Store
from memtrellis.types import Health, Scope, SourceRef, utcnow

__all__ = [
    "DEFAULT_ENTITY",
    "Capturer",
    "Engine",
    "Parts",
    "Reader",
    "Scopes",
    "Writer",
    "engine_of",
    "open_engine",
]

log = logging.getLogger("memtrellis")


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
        judge: LLMRelationJudge | None,
        capture: CaptureConfig,
        default_scope: Scope,
        reranker: RerankStage | None = None,
    ) -> None:
        self.parts = Parts(
            path=path,
            store=store,
            embedder=embedder,
            extractor=extractor,
            lifecycle=lifecycle,
            judge=judge,
            capture=capture,
            stats=FacadeStats(),
            scopes=Scopes(default_scope),
            reranker=reranker,
        )
        self.store = store
        self.stats = self.parts.stats
        self.scopes = self.parts.scopes
        self.usage_watch = UsageWatch()
        self.reader = Reader(self.parts)
        self.writer = Writer(self.parts)
        self.capturer = Capturer(self.parts, self.writer)
        self.writer.spool = self.capturer.service  # forget(entity_id=) purges its turns
        self._closers: dict[int, Callable[[], object]] = {}  # Memory.on_close, by ticket
        self._tickets = itertools.count()

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Keep ``callback`` for `run_close_hooks`; returns a function that drops it."""
        if not callable(callback):
            raise InvalidInputError(f"on_close takes a function, not {type(callback).__name__}")
        ticket = next(self._tickets)
        self._closers[ticket] = callback
        return lambda: self._closers.pop(ticket, None) and None

    def run_close_hooks(self) -> None:
        """Run every hook once, last kept first; one that raises is logged, the others run."""
        while self._closers:
            hook = self._closers.pop(max(self._closers), None)
            try:
                if hook is not None:
                    hook()
            except Exception:
                log.warning("memtrellis: an on_close hook failed", exc_info=True)

    def session_turns(self, scope: Scope, session_id: str, limit: int) -> list[SourceRef]:
        """The latest ``limit`` messages of a session (`memtrellis._engine.sessions`): the
        captured turns not stored yet are read before the stored memories, so a turn
        stored meanwhile is found at least once."""
        pending = pending_turns(self.capturer.service.pending(), scope, session_id)
        stored = stored_turns(self.store, scope, session_id, limit)
        return session_turns(pending, stored, limit)

    def health(self) -> Health:
        """Counts, edges, latency, capture queue and disk size."""
        parts = self.parts
        parts.store.check_open()
        service = self.capturer.service
        capture = service.stats
        failures = parts.extractor.failures
        figures = store_figures(parts.store)
        usage = health_usage(
            parts.store, figures["edges_by_kind"], parts.lifecycle, self.usage_watch, utcnow()
        )
        return Health(
            path=str(parts.path.resolve()),
            embedder_model_id=parts.embedder.model_id,
            embedder_dimension=parts.embedder.dimension,
            capture_queue_depth=service.depth,
            capture_spooled=service.spool.open_entries,
            capture_retries=capture.retries,
            capture_failures=capture.failures,
            capture_overdue=capture.overdue,
            capture_quarantined=service.spool.quarantined,
            llm_failures=parts.extractor.llm_failures,
            extraction_timeouts=failures.timeouts,
            extraction_errors=failures.errors,
            extraction_garbage=failures.garbage,
            extraction_retries=failures.retries + capture.extraction_retries,
            relation_judge_failures=(parts.judge.failures if parts.judge is not None else 0)
            + (model_failures() if parts.lifecycle.relation_model else 0),
            **figures,
            **usage,
            **parts.stats.figures(),
        )


#: The engine under each open facade (tests reach it through `memtrellis.testing`).
_ENGINES: weakref.WeakKeyDictionary[Any, Engine] = weakref.WeakKeyDictionary()


def engine_of(facade: Any) -> Engine:
    """The engine `open_engine` made for ``facade`` (a ``Memory``); KeyError for another."""
    return _ENGINES[facade]


def open_engine(
    facade: Any,
    path: Path,
    default_scope: Scope,
    *,
    embedder: Any,
    llm: Any,
    extraction: ExtractionConfig | None,
    capture: CaptureConfig | None = None,
    lifecycle: Any,
    chroma_url: Any,
    postgres_url: Any,
    reranker: Any = None,
    **store_options: Any,
) -> Engine:
    """The engine of a ``Memory(...)``: every argument checked before the store is opened
    (and takes its lock); ``store_options`` go to `memtrellis.store.Store`. The engine is
    kept for `engine_of` while ``facade`` lives."""
    for name, url in (("chroma_url", chroma_url), ("postgres_url", postgres_url)):
        if url is not None and not isinstance(url, str):
            raise InvalidInputError(f"{name} must be a str, not {type(url).__name__}")
    if extraction is not None and not isinstance(extraction, ExtractionConfig):
        raise InvalidInputError("extraction must be an ExtractionConfig")
    if "lock_timeout" in store_options and timeout_arg(store_options["lock_timeout"]) is None:
        raise InvalidInputError("lock_timeout must be a finite number of seconds")
    extractor = Extractor(llm, extraction)
    capture_config = resolve_capture_config(capture, extractor.config)
    if lifecycle is not None and not isinstance(lifecycle, LifecycleConfig):
        raise InvalidInputError("lifecycle must be a LifecycleConfig")
    # The extractor adapted the llm (a LangChain or LlamaIndex model, say) to the LLM
    # protocol; the relation judge asks the same adapted model.
    chat, timeout = extractor.llm, extractor.config.llm_timeout
    judge = llm_relation_judge(chat, timeout=timeout) if chat is not None else None
    if isinstance(reranker, str):
        from memtrellis.embeddings.catalog import named_reranker

        reranker = named_reranker(reranker)
    stage = as_reranker(reranker) if reranker is not None else None
    if embedder is None:
        from memtrellis.embeddings import default_embedder

        chosen: Embedder = default_embedder()
    else:
        chosen = as_embedder(embedder)
    store = Store(
        path,
        embedder=EmbedderInfo(model_id=chosen.model_id, dimension=chosen.dimension),
        embed=chosen.embed_documents,
        chroma_url=chroma_url,
        postgres_url=postgres_url,
        **store_options,
    )
    engine = _ENGINES[facade] = Engine(
        path=path,
        store=store,
        embedder=chosen,
        extractor=extractor,
        lifecycle=lifecycle or LifecycleConfig(),
        judge=judge,
        capture=capture_config,
        default_scope=default_scope,
        reranker=stage,
    )
    return engine
