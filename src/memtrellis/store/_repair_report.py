"""The report of a store repair (`memtrellis.store.repair.repair_files`)."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field, fields
from typing import Any

from memtrellis._deprecated import renamed

__all__ = ["StoreRepairReport"]


@dataclass
class StoreRepairReport:
    """What a repair found damaged, what the repaired store holds and what is lost.

    Counts describe the store after the repair (or as it would be, with ``dry_run``),
    summed over every shard. Paths (``damaged``, ``moved_aside``) are relative to the store.
    ``tenants`` and ``entities``, the old names of ``entities_with_memories`` and
    ``subjects``, still construct and read (with a ``DeprecationWarning``) and stay in
    `to_dict` (``--json``) for one release.

    Examples:
        >>> report = StoreRepairReport(path="store", memories=3, entities_with_memories=1)
        >>> report.lines()[3]
        'repaired: 3 memories of 1 entities, 0 subject nodes'
    """

    path: str
    dry_run: bool = False
    damaged: dict[str, str] = field(default_factory=dict)
    graph_source: str = "snapshot"
    memories: int = 0
    #: Entities (``entity_id``) holding memories, and the subject nodes they mention.
    entities_with_memories: int = 0
    subjects: int = 0
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
    # The old names, accepted by the constructor (then warned and moved over).
    tenants: InitVar[int | None] = None
    entities: InitVar[int | None] = None

    def __post_init__(self, tenants: int | None, entities: int | None) -> None:
        if tenants is not None:
            renamed("StoreRepairReport.tenants", "StoreRepairReport.entities_with_memories")
            self.entities_with_memories = tenants
        if entities is not None:
            renamed("StoreRepairReport.entities", "StoreRepairReport.subjects")
            self.subjects = entities

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON types (``memtrellis repair --json``); ``tenants`` and
        ``entities`` repeat ``entities_with_memories`` and ``subjects`` under their old
        names."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update(tenants=self.entities_with_memories, entities=self.subjects)
        return out

    def lines(self) -> list[str]:
        """The report as text lines, as ``memtrellis repair`` prints it."""
        head = "would repair" if self.dry_run else "repaired"
        edges = ", ".join(f"{k} {v}" for k, v in sorted(self.edges.items()) if v) or "none"
        out = [f"store: {self.path}{' (dry run: nothing written)' if self.dry_run else ''}"]
        out += [f"damaged: {name}: {problem}" for name, problem in self.damaged.items()]
        if not self.damaged:
            out.append("damaged: nothing")
        out += [
            f"graph rebuilt from: {self.graph_source}",
            f"{head}: {self.memories} memories of {self.entities_with_memories} entities, "
            f"{self.subjects} subject nodes",
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


def _old_name(old: str, new: str) -> property:
    def read(self: StoreRepairReport) -> int:
        renamed(f"StoreRepairReport.{old}", f"StoreRepairReport.{new}")
        value: int = getattr(self, new)
        return value

    return property(read, doc=f"Deprecated: ``{new}``.")


# Read under the old names too (set after @dataclass, which took them as InitVars).
setattr(StoreRepairReport, "tenants", _old_name("tenants", "entities_with_memories"))  # noqa: B010
setattr(StoreRepairReport, "entities", _old_name("entities", "subjects"))  # noqa: B010
