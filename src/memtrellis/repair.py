"""Repairing a damaged store: [`repair_store`][memtrellis.repair_store], the CLI's ``repair``.

It chooses the embedder and calls `memtrellis.store.repair.repair_files`, which holds
the repair itself (and the vocabulary: a repair rebuilds damaged copies on request;
recovery after a crash happens on every open, without one).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memtrellis.embeddings.base import Embedder, as_embedder
from memtrellis.store.manifest import EmbedderInfo
from memtrellis.store.repair import Source, StoreRepairReport, recorded_embedder, repair_files

__all__ = ["StoreRepairReport", "repair_store"]


def _by_name(info: EmbedderInfo | None) -> Embedder | None:
    """The embedder ``info`` names, when memtrellis can build it by name."""
    if info is None:
        return None
    from memtrellis.embeddings.minilm import MODEL_ID

    if info.model_id == MODEL_ID:
        from memtrellis.embeddings import default_embedder

        return default_embedder()
    from memtrellis.store._corrupt import NAMED_EMBEDDERS

    if info.model_id in NAMED_EMBEDDERS:
        from memtrellis.embeddings.catalog import named_embedder

        named: Embedder = named_embedder(NAMED_EMBEDDERS[info.model_id])
        return named
    if info.model_id == f"hashing-{info.dimension}":
        from memtrellis.testing import HashingEmbedder

        return HashingEmbedder(info.dimension)
    return None


def repair_store(
    path: str | os.PathLike[str],
    *,
    embedder: Embedder | Any | None = None,
    source: Source = "auto",
    dry_run: bool = False,
    lock_timeout: float = 60.0,
) -> StoreRepairReport:
    """Repair a damaged store: rebuild each damaged copy from the other; returns the report.

    Takes the store's lock and each entity shard's (close every program using the store
    first), finds for every entity which of its shard's files (``graph.json``, the
    write-ahead log, ``shard.json``) and its collection in ``chroma/`` is damaged, and
    rebuilds it: the graph from the item copies kept in the vector index (plus what the
    log still holds), the index from the graph (re-embedding the texts); and a lost
    manifest or catalog from what the store holds. Damaged files are renamed
    ``<name>.corrupt-<timestamp>``, never deleted. See `memtrellis.store.repair` for what
    can and cannot come back.

    Args:
        path: The store directory.
        embedder: The embedder the store was built with; default the one its manifest
            names (MiniLM or the hashing test embedder), else the offline MiniLM model.
        source: ``"auto"`` (rebuild whichever side is damaged), ``"index"`` (rebuild the
            graph from the index) or ``"graph"`` (rebuild the index from the graph).
        dry_run: Only work out and return the report; write nothing.
        lock_timeout: Seconds to wait for another process to release the store.

    Raises:
        InvalidInputError: ``path`` holds no store, or the embedder does not match it.
        StoreCorruptError: An entity's graph and its vectors are both damaged.
        StoreLockedError: Another process kept the store locked.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from memtrellis import Memory, repair_store
        >>> from memtrellis.testing import HashingEmbedder
        >>> path = Path(tempfile.mkdtemp()) / "store"
        >>> from memtrellis.store.shardfiles import shard_dir
        >>> with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        ...     _ = memory.add("Ana lives in Porto", memory_type="fact")
        >>> graph = shard_dir(path, "ana") / "graph.json"
        >>> _ = graph.write_text('{"nodes": [')  # cut short
        >>> report = repair_store(path)
        >>> name = graph.relative_to(path).as_posix()
        >>> report.damaged[name][:10], report.graph_source, report.memories
        ('unreadable', 'index', 1)
        >>> with Memory(path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        ...     [item.text for item in memory.list()]
        ['Ana lives in Porto']
    """
    root = Path(path)
    found = as_embedder(embedder) if embedder is not None else _by_name(recorded_embedder(root))
    if found is None:
        from memtrellis.embeddings import default_embedder

        found = default_embedder()  # what Memory() uses when given no embedder
    model = found
    given = EmbedderInfo(model_id=model.model_id, dimension=model.dimension)
    return repair_files(
        root,
        embedder=given,
        embed=lambda texts: model.embed_documents(texts),
        source=source,
        dry_run=dry_run,
        lock_timeout=lock_timeout,
    )
