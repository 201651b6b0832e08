"""What a shard is kept in: the contract between an entity's shard and where it lives.

Every ``entity_id`` has a shard: its part of the graph as a snapshot, a write-ahead log of
the changes since, and a writer lock. A `ShardStorage` keeps those for one entity (files
in the store directory, or rows in PostgreSQL when several machines share a memory), and a
`Catalog` lists the entities with their figures, so that health, listings and exports
never load a shard they do not need.

The log is positional: ``append`` returns the position after the records, and
``read_log(generation, position)`` returns what was appended after ``position``. A new
snapshot moves the shard to a new generation, whose log starts empty.
"""

from __future__ import annotations

from collections.abc import Hashable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from memtrellis.store.graph import MemoryGraph
from memtrellis.types import MemoryItem

__all__ = ["Catalog", "EntityStats", "LogRead", "ShardStorage", "merged_count"]


def merged_count(item: MemoryItem) -> int:
    """How many duplicates the lifecycle merged into a memory (``metadata["lifecycle"]``).

    Read here, below the lifecycle that writes it, so that every shard figure counts it
    the same way.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> item = MemoryItem(text="x", scope=Scope(entity_id="a"),
        ...                   metadata={"lifecycle": {"merged": 2}})
        >>> merged_count(item)
        2
    """
    lifecycle = item.metadata.get("lifecycle")
    count = lifecycle.get("merged", 0) if isinstance(lifecycle, dict) else 0
    return count if isinstance(count, int) and count > 0 else 0


@dataclass
class EntityStats:
    """Figures of one entity's shard, kept in the catalog.

    ``validity`` lists ``(valid_until as a POSIX timestamp, superseded)`` for the memories
    that have a ``valid_until``, so that expired memories are counted at any time without
    loading the shard. ``log_position`` is how far the log of ``generation`` had been
    read or written when the figures were taken: a shard whose log is found shorter at
    that generation has lost acknowledged records.

    Examples:
        >>> stats = EntityStats(memories=3, superseded=1, validity=[(0.0, False)])
        >>> stats.expired(now=1.0), stats.active(now=1.0)
        (1, 1)
    """

    memories: int = 0
    superseded: int = 0
    merged_duplicates: int = 0
    subject_nodes: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    validity: list[tuple[float, bool]] = field(default_factory=list)
    generation: int = 0
    log_position: int = 0

    @classmethod
    def of(cls, graph: MemoryGraph, generation: int, log_position: int = 0) -> EntityStats:
        """The figures of one entity's graph (one pass over its memories).

        Examples:
            >>> from memtrellis import MemoryItem, Scope
            >>> graph = MemoryGraph()
            >>> graph.put(MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana")))
            >>> EntityStats.of(graph, generation=1).memories
            1
        """
        superseded = merged = 0
        validity: list[tuple[float, bool]] = []
        for item in graph.items():
            gone = item.superseded_by is not None
            superseded += gone
            merged += merged_count(item)
            if item.valid_until is not None:
                validity.append((item.valid_until.timestamp(), gone))
        return cls(
            memories=len(graph),
            superseded=superseded,
            merged_duplicates=merged,
            subject_nodes=graph.subject_count(),
            edges=graph.edge_counts(),
            validity=validity,
            generation=generation,
            log_position=log_position,
        )

    def expired(self, now: float) -> int:
        """Memories whose ``valid_until`` has passed at ``now``."""
        return sum(1 for until, _ in self.validity if until <= now)

    def active(self, now: float) -> int:
        """Memories neither superseded nor expired at ``now``."""
        expired_live = sum(1 for until, gone in self.validity if until <= now and not gone)
        return self.memories - self.superseded - expired_live

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types."""
        return {
            "memories": self.memories,
            "superseded": self.superseded,
            "merged_duplicates": self.merged_duplicates,
            # The catalog's key from before subject nodes were so named: processes of
            # older releases read the same rows.
            "entity_nodes": self.subject_nodes,
            "edges": dict(self.edges),
            "validity": [[until, gone] for until, gone in self.validity],
            "generation": self.generation,
            "log_position": self.log_position,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EntityStats:
        """The inverse of `to_dict`."""
        return cls(
            memories=int(data.get("memories", 0)),
            superseded=int(data.get("superseded", 0)),
            merged_duplicates=int(data.get("merged_duplicates", 0)),
            subject_nodes=int(data.get("entity_nodes", 0)),
            edges={str(k): int(v) for k, v in dict(data.get("edges", {})).items()},
            validity=[(float(u), bool(g)) for u, g in data.get("validity", [])],
            generation=int(data.get("generation", 0)),
            log_position=int(data.get("log_position", 0)),
        )


@dataclass
class LogRead:
    """What `ShardStorage.read_log` found after a position.

    ``torn`` is true when the log ends in a partial record (a crash in the middle of an
    append): that record was never acknowledged and is not returned.
    """

    records: list[dict[str, Any]]
    position: int
    torn: bool = False


class ShardStorage(Protocol):
    """Where one entity's snapshot, log and writer lock live.

    Implementations: `memtrellis.store.shardfiles.FileShardStorage` (the embedded store's
    directory) and the PostgreSQL storage of the several-machines mode.
    """

    entity_id: str

    @property
    def label(self) -> str:
        """Where the shard lives, for messages (a path, or a database and entity)."""
        ...

    def lock(self, timeout: float) -> AbstractContextManager[None]:
        """Hold the entity's writer lock across processes (and machines).

        Raises:
            StoreLockedError: Another writer held it for longer than ``timeout`` seconds.
        """
        ...

    def exists(self) -> bool:
        """Whether anything of this shard is stored."""
        ...

    def generation(self) -> int:
        """The generation of the current snapshot (0 before the first snapshot)."""
        ...

    def stamp(self) -> Hashable:
        """A cheap value that changes whenever the generation changes or the log grows."""
        ...

    def load(self) -> tuple[MemoryGraph, int]:
        """The current snapshot and the generation it was written at.

        Raises:
            StoreCorruptError: The snapshot cannot be read, or is older than the
                generation the shard records.
        """
        ...

    def read_log(self, generation: int, position: int) -> LogRead:
        """The whole records appended to ``generation``'s log after ``position``.

        Raises:
            StoreCorruptError: A record in the middle of the log cannot be read.
        """
        ...

    def append(self, generation: int, records: list[dict[str, Any]], *, durable: bool) -> int:
        """Append records to ``generation``'s log in one write; returns the new position.

        ``durable=True``: the records survive a crash once this returns.
        """
        ...

    def cut_torn(self, generation: int, position: int) -> bool:
        """Drop a partial record after ``position`` (under the lock); whether one was cut."""
        ...

    def save(self, graph: MemoryGraph, generation: int) -> None:
        """Write ``graph`` as snapshot ``generation`` and make it current (under the lock).

        Atomic: a crash leaves the old generation current or the new one, never half. The
        logs of older generations may be removed afterwards.
        """
        ...

    def cleanup(self) -> None:
        """Remove what crashed writers left behind: older logs, temporary files."""
        ...

    def destroy(self) -> None:
        """Remove everything of this shard (its entity was forgotten)."""
        ...


class Catalog(Protocol):
    """The entities a store holds, each with its `EntityStats`.

    Read without loading any shard; a shard records its figures when it writes a snapshot,
    closes or is evicted. An entity being forgotten is marked ``dropping`` first, so that a
    crash in the middle of a forget is finished by the next open.
    """

    def entities(self) -> list[str]:
        """Every entity with a shard, in the order they were first written."""
        ...

    def ensure(self, entity_id: str) -> None:
        """Record the entity (before its shard's first write); no-op when known."""
        ...

    def get(self, entity_id: str) -> EntityStats | None:
        """The entity's last recorded figures, or ``None`` when unknown."""
        ...

    def all(self) -> dict[str, EntityStats]:
        """Every entity's recorded figures."""
        ...

    def record(self, entity_id: str, stats: EntityStats) -> None:
        """Replace the entity's figures."""
        ...

    def mark_dropping(self, entity_id: str) -> None:
        """Mark the entity as being forgotten (before its shard is destroyed)."""
        ...

    def dropping(self) -> list[str]:
        """Entities whose forgetting was started and not finished."""
        ...

    def remove(self, entity_id: str) -> None:
        """Forget the entity's row (after its shard and vectors are gone)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...
