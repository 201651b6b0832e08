"""What every command shares: the global options, the consoles and opening the store."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
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
    "entity_counts",
    "get_state",
    "plural",
    "require_store",
    "resolve_id",
]

#: How many memories one ``Memory.list`` call fetches while paging through a whole entity.
PAGE_SIZE = 500

#: Filters that make ``Memory.list`` return everything, including superseded and expired.
EVERYTHING: dict[str, Any] = {"include_superseded": True, "include_expired": True}


#: What a store directory holds once anything was written to it (a damaged store still has
#: some of them, and opening it then says how to repair it).
STORE_MARKERS = ("manifest.json", "graph.json", "chroma", "shards", "catalog.sqlite3")


class CliError(Exception):
    """A problem with the command line itself (a missing file, bad JSON): exit code 2."""


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun in the right number: "1 memory", "2 memories", "0 memories".

    Examples:
        >>> plural(1, "memory", "memories"), plural(3, "entity", "entities"), plural(0, "line")
        ('1 memory', '3 entities', '0 lines')
    """
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def require_store(path: str | os.PathLike[str] | None) -> Path:
    """The store directory at ``path`` (default: $MEMTRELLIS_HOME, else ./.memtrellis), or a
    `CliError` naming it when nothing is there: read-only commands never create a store.

    Examples:
        >>> try:
        ...     require_store("./no-store-here")
        ... except CliError as exc:
        ...     print(str(exc).split(" (")[0])
        no memtrellis store at ./no-store-here
    """
    # The default Memory opens (memtrellis._engine.args.default_store_path, below this layer).
    target = (
        Path(path) if path is not None else Path(os.environ.get("MEMTRELLIS_HOME") or ".memtrellis")
    )
    shown = os.fspath(path) if path is not None else os.fspath(target)
    if not target.is_absolute():
        shown += f" ({target.absolute()})"
    if path is None:
        shown += ", the default store (pass --path or set $MEMTRELLIS_HOME)"
    if target.is_dir() and (
        any((target / name).exists() for name in STORE_MARKERS) or any(target.glob("wal-*.jsonl"))
    ):
        return target
    what = "is not a directory" if target.exists() and not target.is_dir() else "holds no store"
    flag = "" if path is None else f" --path {_quoted(os.fspath(path))}"
    raise CliError(
        f"no memtrellis store at {shown}: the path {what}, and nothing was created there. "
        f"Check the path, or create a store with `memtrellis{flag} add TEXT` "
        f"(or `memtrellis{flag} import FILE`)."
    )


def _quoted(text: str) -> str:
    return text if text and all(c.isalnum() or c in "/._-~" for c in text) else repr(text)


class EmbedderChoice(str, Enum):
    """The embedders the command line can build by name."""

    MINILM = "minilm"
    MULTILINGUAL = "multilingual"
    MULTILINGUAL_E5 = "multilingual-e5"
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
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        vector_process: bool = False,
        create: bool = True,
    ) -> Memory:
        """Open the store the options name (or ``path``, when the caller overrides it).

        The import is deferred so that ``--help`` does not pay for loading Chroma.
        ``vector_process`` is for the long-running servers (see ``Memory``). With
        ``create=False`` (the commands that only read) a path that holds no store is an
        error instead of a new empty store; with PostgreSQL the store lives there, so the
        local directory is not checked.
        """
        from memtrellis.memory import Memory

        target = path if path is not None else self.path
        if not create and self.postgres_url is None:
            require_store(target)
        return Memory(
            target,
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
        if self.embedder in (EmbedderChoice.MULTILINGUAL, EmbedderChoice.MULTILINGUAL_E5):
            return self.embedder.value
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


def iter_all(
    memory: Memory, *, filters: dict[str, Any] | None = None, entity_id: str | None = None
) -> list[MemoryItem]:
    """Every memory of the store's entity (or ``entity_id``'s), fetched page by page."""
    items: list[MemoryItem] = []
    offset = 0
    while True:
        page = memory.list(
            entity_id=entity_id, limit=PAGE_SIZE, offset=offset, filters=filters or EVERYTHING
        )
        items.extend(page)
        if len(page) < PAGE_SIZE:
            return items
        offset += len(page)


def entity_counts(memory: Memory, *, most: int = 5) -> tuple[dict[str, int], int]:
    """How many memories the first ``most`` entities of the store hold, and how many entities
    there are in all (for the hint of a command that found nothing for ``--entity``)."""
    names = memory.entities()
    counts = {name: len(iter_all(memory, entity_id=name)) for name in names[:most]}
    return {name: count for name, count in counts.items() if count}, len(names)


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
