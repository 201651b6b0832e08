"""What every command shares: the global options, the consoles and opening the store."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from memtrellis.errors import MemoryNotFoundError

if TYPE_CHECKING:
    from memtrellis.memory import Memory
    from memtrellis.types import MemoryItem

__all__ = [
    "CliError",
    "CliState",
    "EmbedderChoice",
    "StoreEmbedderOption",
    "get_state",
    "resolve_id",
]

#: How many memories one ``Memory.list`` call fetches while paging through a whole entity.
PAGE_SIZE = 500

#: Filters that make ``Memory.list`` return everything, including superseded and expired.
EVERYTHING: dict[str, Any] = {"include_superseded": True, "include_expired": True}


class CliError(Exception):
    """A problem with the command line itself (a missing file, bad JSON): exit code 2."""


class EmbedderChoice(str, Enum):
    """The embedders the command line can build by name."""

    MINILM = "minilm"
    HASHING = "hashing"


#: ``--embedder`` of the commands that work on a store directory itself (repair, migrate).
StoreEmbedderOption = Annotated[
    EmbedderChoice | None,
    typer.Option(
        "--embedder",
        case_sensitive=False,
        help="The embedder the store was built with (default: the one its manifest names).",
    ),
]


def make_console(*, stderr: bool = False) -> Console:
    """A console that keeps long lines whole when the output is piped to a file."""
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


@dataclass
class CliState:
    """The global options, kept on the click context for every command to read."""

    path: str | None = None
    entity: str = "default"
    process: str | None = None
    chroma_url: str | None = None
    postgres_url: str | None = None
    embedder: EmbedderChoice = EmbedderChoice.MINILM
    json: bool = False
    out: Console = field(default_factory=make_console)
    err: Console = field(default_factory=lambda: make_console(stderr=True))

    def open(
        self, path: str | os.PathLike[str] | None = None, *, vector_process: bool = False
    ) -> Memory:
        """Open the store the options name (or ``path``, when the caller overrides it).

        The import is deferred so that ``--help`` does not pay for loading Chroma.
        ``vector_process`` is for the long-running servers (see ``Memory``).
        """
        from memtrellis.memory import Memory

        return Memory(
            path if path is not None else self.path,
            entity_id=self.entity,
            process_id=self.process,
            embedder=self.build_embedder(),
            chroma_url=self.chroma_url,
            postgres_url=self.postgres_url,
            vector_process=vector_process,
        )

    def build_embedder(self) -> Any:
        """The embedder object to hand to ``Memory``; ``None`` means its default (MiniLM)."""
        if self.embedder is EmbedderChoice.HASHING:
            from memtrellis.testing import HashingEmbedder

            return HashingEmbedder()
        return None

    def emit_json(self, payload: Any) -> None:
        """Write machine-readable output to stdout, unstyled."""
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def get_state(ctx: typer.Context) -> CliState:
    """The `CliState` the main callback stored, or defaults when run without it."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def iter_all(memory: Memory, *, filters: dict[str, Any] | None = None) -> list[MemoryItem]:
    """Every memory of the store's entity, fetched page by page."""
    items: list[MemoryItem] = []
    offset = 0
    while True:
        page = memory.list(limit=PAGE_SIZE, offset=offset, filters=filters or EVERYTHING)
        items.extend(page)
        if len(page) < PAGE_SIZE:
            return items
        offset += len(page)


def resolve_id(memory: Memory, ident: str) -> str:
    """Turn a full id or a unique prefix of one (as ``list`` prints them) into a full id.

    Raises:
        MemoryNotFoundError: No memory of this entity has that id or id prefix.
        CliError: The prefix matches more than one memory.
    """
    try:
        found: str = memory.get(ident).id
        return found
    except MemoryNotFoundError:
        matches = [item.id for item in iter_all(memory) if item.id.startswith(ident)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise
        shown = ", ".join(match[:12] for match in matches[:5])
        raise CliError(f"id prefix {ident!r} is ambiguous: {shown}") from None
