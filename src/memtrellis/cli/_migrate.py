"""``memtrellis migrate STORE_DIR``: move a store written by memtrellis 0.1 to entity shards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from memtrellis.cli._state import EmbedderChoice, StoreEmbedderOption, get_state

__all__ = ["migrate"]


def _lazy_embed(store_dir: Path, choice: EmbedderChoice | None) -> Callable[[list[str]], Any]:
    """Embeds with the store's embedder, built on the first call only (most migrations
    embed nothing, and the MiniLM model takes a while to load)."""
    from memtrellis.repair import _by_name
    from memtrellis.store.repair import recorded_embedder

    built: list[Any] = []

    def embed(texts: list[str]) -> Any:
        if not built:
            recorded = recorded_embedder(store_dir)
            if choice is EmbedderChoice.HASHING:
                from memtrellis.testing import HashingEmbedder

                model: Any = HashingEmbedder(recorded.dimension if recorded else 64)
            elif choice is EmbedderChoice.MINILM:
                from memtrellis.embeddings import default_embedder

                model = default_embedder()
            elif choice in (EmbedderChoice.MULTILINGUAL, EmbedderChoice.MULTILINGUAL_E5):
                from memtrellis.embeddings.catalog import named_embedder

                model = named_embedder(choice.value)
            else:
                model = _by_name(recorded)
                if model is None:
                    from memtrellis.embeddings import default_embedder

                    model = default_embedder()
            if recorded is not None:
                from memtrellis.store.manifest import Manifest

                Manifest(embedder=recorded).check_embedder(
                    model.model_id, model.dimension, store_dir
                )
            built.append(model)
        return built[0].embed_documents(texts)

    return embed


def migrate(
    ctx: typer.Context,
    store_dir: Annotated[Path, typer.Argument(help="The store directory to migrate.")],
    embedder: StoreEmbedderOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Migrate a store written by memtrellis 0.1 to the entity-shard layout.

    Safe to interrupt and to run again: until it finishes the store stays as 0.1 wrote
    it. Close every program using the store first: the migration takes its write lock.
    The vectors stay where they are; only changes that a 0.1 process never wrote to the
    vector index are embedded again.
    """
    from memtrellis.store.migrate import migrate_store

    state = get_state(ctx)
    # --chroma-url: the server holding the vectors of a store opened with chroma_url=.
    report = migrate_store(
        store_dir, embed=_lazy_embed(store_dir, embedder), chroma_url=state.chroma_url
    )
    if state.json or json_output:
        state.emit_json(report.to_dict())
        return
    for line in report.lines():
        state.out.print(escape(line), soft_wrap=True)
