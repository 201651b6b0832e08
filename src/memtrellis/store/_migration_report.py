"""The report of a migration and the error that asks for ``memtrellis migrate``."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any

from memtrellis.errors import MemtrellisError

__all__ = ["SHARD_SCHEMA", "MigrationReport", "StoreMigrationError", "migrate_command"]

#: The schema of the entity-shard layout that `memtrellis.store.migrate` writes.
SHARD_SCHEMA = 2


class StoreMigrationError(MemtrellisError):
    """A 0.1 store cannot be migrated as asked; the message says what to run instead.

    ``command`` is the ``memtrellis migrate`` command line for the store.

    Examples:
        >>> error = StoreMigrationError("needs its embedder", command="memtrellis migrate s")
        >>> error.command, isinstance(error, MemtrellisError)
        ('memtrellis migrate s', True)
    """

    def __init__(self, message: str, *, command: str) -> None:
        super().__init__(message)
        self.command = command


def migrate_command(path: str | os.PathLike[str]) -> str:
    """The ``memtrellis migrate`` command line for the store directory ``path``.

    Examples:
        >>> migrate_command("my store")
        "memtrellis migrate 'my store'"
    """
    return f"memtrellis migrate {shlex.quote(str(path))}"


@dataclass
class MigrationReport:
    """What `migrate_store` did.

    ``migrated`` is false when the store was already in the shard layout (then only
    ``leftovers_removed`` can be non-empty). ``rolled_forward`` counts the 0.1 changes
    that had not reached the vector index; ``torn_records`` a partial last log line
    (a write cut off before it was acknowledged, dropped as 0.1 drops it).

    Examples:
        >>> report = MigrationReport(path="s", migrated=True, entities=2, memories=5)
        >>> report.lines()[1]
        'migrated: 5 memories of 2 entities into entity shards (schema 2)'
    """

    path: str
    migrated: bool = False
    entities: int = 0
    memories: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    rolled_forward: int = 0
    torn_records: int = 0
    cross_entity_edges: int = 0
    leftovers_removed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON types (``memtrellis migrate --json``)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def lines(self) -> list[str]:
        """The report as text lines, as ``memtrellis migrate`` prints it."""
        out = [f"store: {self.path}"]
        if not self.migrated:
            out.append(f"already in the entity-shard layout (schema {SHARD_SCHEMA}): nothing to do")
        else:
            edges = ", ".join(f"{k} {v}" for k, v in sorted(self.edges.items()) if v) or "none"
            out += [
                f"migrated: {self.memories} memories of {self.entities} entities into "
                f"entity shards (schema {SHARD_SCHEMA})",
                f"edges: {edges}",
                f"interrupted 0.1 changes rolled forward into the vector index: "
                f"{self.rolled_forward}; torn log records dropped: {self.torn_records}",
            ]
            if self.cross_entity_edges:
                out.append(f"edges between two entities left out: {self.cross_entity_edges}")
        if self.leftovers_removed:
            out.append(f"0.1 files removed: {', '.join(self.leftovers_removed)}")
        out.append(f"took {self.seconds:.2f} s")
        return out

    def summary(self) -> str:
        """The report as one multi-line text."""
        return "\n".join(self.lines())
