"""The report of a store repair (`memtrellis.store.repair.rebuild_store`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StoreRepairReport"]


@dataclass
class StoreRepairReport:
    """What `rebuild_store` found damaged, what it restored and what is lost.

    Counts describe the store after the repair (or as it would be, with ``dry_run``),
    summed over every shard. Paths (``damaged``, ``moved_aside``) are relative to the store.

    Examples:
        >>> report = StoreRepairReport(path="store", memories=3, tenants=1)
        >>> report.lines()[3]
        'restored: 3 memories of 1 entities, 0 entity nodes'
    """

    path: str
    dry_run: bool = False
    damaged: dict[str, str] = field(default_factory=dict)
    graph_source: str = "snapshot"
    memories: int = 0
    tenants: int = 0
    entities: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    from_snapshot: int = 0
    from_index: int = 0
    from_log: int = 0
    log_records: int = 0
    log_unreadable: int = 0
    index_unreadable: int = 0
    vectors_written: int = 0
    index_updated: int = 0
    index_removed: int = 0
    manifest_written: bool = False
    moved_aside: dict[str, str] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    #: Entity shards found, and those rewritten (or that would be).
    shards: int = 0
    shards_repaired: int = 0
    #: Entities whose graph came back from the index copies.
    graph_from_index: list[str] = field(default_factory=list)
    catalog_written: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON types (``memtrellis repair --json``)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def lines(self) -> list[str]:
        """The report as text lines, as ``memtrellis repair`` prints it."""
        head = "would restore" if self.dry_run else "restored"
        edges = ", ".join(f"{k} {v}" for k, v in sorted(self.edges.items()) if v) or "none"
        out = [f"store: {self.path}{' (dry run: nothing written)' if self.dry_run else ''}"]
        out += [f"damaged: {name}: {problem}" for name, problem in self.damaged.items()]
        if not self.damaged:
            out.append("damaged: nothing")
        out += [
            f"graph rebuilt from: {self.graph_source}",
            f"{head}: {self.memories} memories of {self.tenants} entities, "
            f"{self.entities} entity nodes",
            f"edges: {edges}",
            f"memories from the snapshot {self.from_snapshot}, from the index "
            f"{self.from_index}, changed by the log {self.from_log}",
            f"log records replayed {self.log_records}, unreadable {self.log_unreadable}; "
            f"unreadable index copies {self.index_unreadable}",
            f"index: vectors embedded {self.vectors_written}, copies updated "
            f"{self.index_updated}, removed {self.index_removed}",
            f"shards: {self.shards} found, {self.shards_repaired} repaired",
            f"manifest {'rewritten' if self.manifest_written else 'kept'}, "
            f"catalog {'rebuilt' if self.catalog_written else 'kept'}",
        ]
        out += [f"moved aside: {src} -> {dst}" for src, dst in self.moved_aside.items()]
        out += [f"lost: {what}" for what in self.lost] or ["lost: nothing"]
        return out

    def summary(self) -> str:
        """The report as one multi-line text."""
        return "\n".join(self.lines())
