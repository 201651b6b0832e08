"""``memtrellis repair STORE_DIR``: repair a damaged store (`memtrellis.repair_store`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from memtrellis.cli._state import CliError, EmbedderChoice, StoreEmbedderOption, get_state

__all__ = ["repair"]


def repair(
    ctx: typer.Context,
    store_dir: Annotated[Path, typer.Argument(help="The store directory to repair.")],
    from_index: Annotated[
        bool,
        typer.Option("--from-index", help="Rebuild the graph from the vector index's copies."),
    ] = False,
    from_graph: Annotated[
        bool,
        typer.Option("--from-graph", help="Rebuild the vector index from the graph."),
    ] = False,
    embedder: StoreEmbedderOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what the repair would do; write nothing.")
    ] = False,
) -> None:
    """Repair a damaged store: rebuild each damaged copy (graph, index, manifest) from the other.

    Damaged files are moved aside (NAME.corrupt-TIMESTAMP), never deleted. Close every
    program using the store first: the repair takes its write lock.
    """
    from memtrellis.repair import repair_store

    state = get_state(ctx)
    if from_index and from_graph:
        raise CliError("give --from-index or --from-graph, not both")
    if embedder is EmbedderChoice.HASHING:
        from memtrellis.testing import HashingEmbedder

        chosen: object | None = HashingEmbedder()
    elif embedder is EmbedderChoice.MINILM:
        from memtrellis.embeddings import default_embedder

        chosen = default_embedder()
    elif embedder in (EmbedderChoice.MULTILINGUAL, EmbedderChoice.MULTILINGUAL_E5):
        from memtrellis.embeddings.catalog import named_embedder

        chosen = named_embedder(embedder.value)
    else:
        chosen = None
    report = repair_store(
        store_dir,
        embedder=chosen,
        source="index" if from_index else "graph" if from_graph else "auto",
        dry_run=dry_run,
    )
    if state.json:
        state.emit_json(report.to_dict())
        return
    for line in report.lines():
        state.out.print(escape(line), soft_wrap=True)
