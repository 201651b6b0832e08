"""The error a damaged store file raises: it names the file and the repair command."""

from __future__ import annotations

import shlex
from pathlib import Path

from memtrellis.errors import StoreCorruptError, StoreInconsistentError

__all__ = [
    "FROM_GRAPH",
    "FROM_INDEX",
    "NOTHING_CHANGED",
    "damaged",
    "embedder_flags",
    "inconsistent",
    "repair_command",
]

#: ``memtrellis repair`` flag: rebuild the graph from the item copies in the vector index.
FROM_INDEX = "--from-index"
#: ``memtrellis repair`` flag: rebuild the vector index from the graph (re-embedding).
FROM_GRAPH = "--from-graph"


#: model id -> the ``--embedder`` name of the optional embedders the command line builds.
NAMED_EMBEDDERS = {
    "use-multilingual-v3-numpy": "multilingual",
    "multilingual-e5-small-q4": "multilingual-e5",
}


def embedder_flags(model_id: str) -> tuple[str, ...]:
    """The ``--embedder`` option naming ``model_id`` for the command line, if it has one.

    The command line builds the default MiniLM model (no option needed), the
    multilingual one and the hashing test embedder; a store built with another embedder
    is repaired through ``memtrellis.repair_store(path, embedder=...)``.
    """
    if model_id in NAMED_EMBEDDERS:
        return ("--embedder", NAMED_EMBEDDERS[model_id])
    return ("--embedder", "hashing") if model_id == "hashing-64" else ()


def repair_command(store: Path, *flags: str) -> str:
    """The ``memtrellis repair`` command line for the store directory ``store``."""
    return " ".join(["memtrellis", "repair", shlex.quote(str(store)), *flags])


#: What a damaged-store message says when opening wrote nothing.
NOTHING_CHANGED = "Nothing was changed."


def _cure(command: str) -> str:
    return (
        f"Run `{command}` to rebuild it from the store's other copies (add --dry-run to see "
        "the report first); damaged files are moved aside, never deleted."
    )


def damaged(target: Path, problem: str, store: Path, *flags: str) -> StoreCorruptError:
    """A [`StoreCorruptError`][memtrellis.StoreCorruptError] for ``target`` with its cure."""
    command = repair_command(store, *flags)
    return StoreCorruptError(
        f"{target} {problem}. {NOTHING_CHANGED} {_cure(command)}",
        path=str(target),
        command=command,
    )


def inconsistent(
    target: Path, problem: str, store: Path, *, done: str = NOTHING_CHANGED
) -> StoreInconsistentError:
    """A [`StoreInconsistentError`][memtrellis.errors.StoreInconsistentError]: ``target``'s
    copies disagree; ``done`` says what was written before this was found."""
    command = repair_command(store)
    return StoreInconsistentError(
        f"{target} {problem}. {done} {_cure(command)}", path=str(target), command=command
    )
