"""Repairing one entity's shard: what survives of it, its graph rebuilt, its vectors fixed.

`memtrellis.store.repair` finds the shards and the vector index of a store and calls
these functions once per entity; each works on that entity's files and collection only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtrellis.errors import InvalidInputError, StoreCorruptError
from memtrellis.store._files import atomic_write_bytes
from memtrellis.store._open_checks import WITH_RID
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.vectors import VectorIndex
from memtrellis.store.wal import replay_record
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem, utcnow

__all__ = ["IndexSide", "ShardFound", "ShardRepair", "holds_files", "read_shard"]

EmbedFn = Callable[[list[str]], list[list[float]]]

WAL = re.compile(r"^wal-(\d+)\.jsonl$")
_BATCH = 256
LOST_EDGES = (
    "supports, contradicts, extends and follows edges (and supersedes edges between "
    "conversation turns) not in the log (they are kept only in graph.json)"
)
LOST_HISTORY = "history events written before the last snapshot (kept only in graph.json)"
LOST_RECALLS = "recall counts since each memory last changed (kept only in graph.json)"


@dataclass
class IndexSide:
    """One entity's collection as read: its item copies, or ``ok=False`` when damaged."""

    copies: dict[str, MemoryItem] = field(default_factory=dict)
    unreadable: int = 0
    ok: bool = True


@dataclass
class ShardFound:
    """What survives of one shard directory, read without writing anything.

    ``damaged`` maps paths relative to the store to what is wrong with them.
    """

    entity_id: str
    directory: Path
    root: Path
    pointer: int | None = None  # the generation shard.json names (None: absent/unreadable)
    snapshot: MemoryGraph | None = None
    generation: int = 0
    logs: list[tuple[int, Path]] = field(default_factory=list)
    damaged: dict[str, str] = field(default_factory=dict)

    def rel(self, target: Path) -> str:
        """``target`` relative to the store (the key of reports)."""
        return target.relative_to(self.root).as_posix()

    @property
    def graph_ok(self) -> bool:
        """Whether the snapshot read (or the log holds every change since the start)."""
        return self.snapshot is not None


def read_pointer(directory: Path) -> tuple[dict[str, Any] | None, bool]:
    """``shard.json`` as a dict (``None`` when absent or unreadable) and whether it read."""
    target = directory / "shard.json"
    try:
        data = json.loads(target.read_bytes())
    except FileNotFoundError:
        return None, True
    except ValueError:
        return None, False
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("entity_id"), str)
        and isinstance(data.get("generation"), int)
        and data["generation"] >= 0
    )
    return (data, True) if ok else (None, False)


def holds_files(directory: Path) -> bool:
    """Whether a shard directory holds anything but its lock (which taking it creates)."""
    return directory.is_dir() and any(p.name != "shard.lock" for p in directory.iterdir())


def read_shard(root: Path, entity_id: str, directory: Path, *, keep_snapshot: bool) -> ShardFound:
    """Read the pointer, snapshot and logs of one shard (``keep_snapshot=False``: the
    snapshot is read only to judge it, as ``--from-index`` does)."""
    found = ShardFound(entity_id=entity_id, directory=directory, root=root)
    if not holds_files(directory):
        found.damaged[found.rel(directory)] = "missing"
        return found
    pointer, readable = read_pointer(directory)
    if not readable:
        found.damaged[found.rel(directory / "shard.json")] = "unreadable"
    elif pointer is not None:
        found.pointer = int(pointer["generation"])
    logs = sorted(
        (int(m.group(1)), p) for p in directory.glob("wal-*.jsonl") if (m := WAL.match(p.name))
    )
    _read_snapshot(found, logs, keep_snapshot)
    if found.snapshot is not None:
        start = found.generation
    elif found.pointer is not None:
        start = found.pointer
    else:
        start = logs[-1][0] if logs else 0
    found.logs = [(gen, p) for gen, p in logs if gen >= start]
    return found


def _read_snapshot(found: ShardFound, logs: list[tuple[int, Path]], keep: bool) -> None:
    target = found.directory / "graph.json"
    name = found.rel(target)
    if not target.exists():
        # A shard never compacted has no snapshot: its first log holds every change.
        never_compacted = (
            found.pointer == 0
            if found.pointer is not None
            else (not logs or logs[0][0] == 0) and name not in found.damaged
        )
        if never_compacted:
            found.snapshot = MemoryGraph()
        else:
            found.damaged[name] = "missing"
        return
    try:
        graph, generation = MemoryGraph.load(target, store=found.root)
    except StoreCorruptError as exc:
        cause = exc.__cause__
        found.damaged[name] = f"unreadable ({type(cause).__name__}: {str(cause)[:120]})"
        return
    if found.pointer is not None and generation < found.pointer:
        found.damaged[name] = f"out of date (generation {generation}, shard.json {found.pointer})"
        return
    if keep:
        found.snapshot, found.generation = graph, generation


def _log_records(found: ShardFound, log: Path, tally: dict[str, int]) -> list[dict[str, Any]]:
    """The readable records of one log; a torn last line is not damage."""
    lines = log.read_bytes().split(b"\n")
    lines.pop()  # after the last newline: empty, or a torn last record (not damage)
    records: list[dict[str, Any]] = []
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get("op"), str):
                raise ValueError("not a log record")
            if record["op"] in WITH_RID and not isinstance(record.get("rid"), str):
                raise ValueError("a change record without its record id")
        except ValueError:
            bad += 1
            continue
        records.append(record)
    if bad:
        found.damaged[found.rel(log)] = f"{bad} unreadable record(s)"
        tally["log_unreadable"] += bad
    return records


def entity_in_log(log: Path) -> str | None:
    """The entity a shard's log names (in a ``put`` item's scope or a ``drop``), if any."""
    try:
        lines = log.read_bytes().split(b"\n")
    except OSError:
        return None
    for line in lines:
        try:
            record = json.loads(line)
            if record.get("op") == "put":
                return str(record["item"]["scope"]["entity_id"])
            if record.get("op") in ("drop", "del") and "entity_id" in record:
                return str(record["entity_id"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return None


@dataclass
class ShardRepair:
    """One entity's repaired graph and the index changes it needs, with exact counts."""

    found: ShardFound
    index: IndexSide
    rebuild_index: bool  # every vector of the entity is written again
    graph: MemoryGraph = field(default_factory=MemoryGraph)
    graph_from_index: bool = False
    removed: set[str] = field(default_factory=set)  # ids whose index entries go
    embed_now: list[MemoryItem] = field(default_factory=list)
    update: list[MemoryItem] = field(default_factory=list)
    tally: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            ("from_snapshot", "from_index", "from_log", "log_records", "log_unreadable"), 0
        )
    )

    def build(self) -> None:
        """Work out the graph and the index changes (nothing is written)."""
        self._build_graph()
        if self.rebuild_index:
            self.removed = set()
        self._plan_index()

    @property
    def changes_anything(self) -> bool:
        """Whether the shard or its collection must be written."""
        return bool(
            self.found.damaged
            or self.graph_from_index
            or self.tally["from_index"]
            or self.rebuild_index
            or self.embed_now
            or self.update
            or self.removed
        )

    def _replay(self) -> tuple[set[str], set[str], bool]:
        """Replay the logs; returns ids the log changed, ids it deleted, whether it dropped
        the entity."""
        changed: set[str] = set()
        deleted: set[str] = set()
        dropped = False
        on_copies = self.found.snapshot is None
        for _, log in self.found.logs:
            for record in _log_records(self.found, log, self.tally):
                op = record["op"]
                if op == "ok" or (on_copies and op == "touch"):
                    continue  # touches on top of index copies would count some recalls twice
                try:
                    if op == "drop":
                        deleted.update(self.graph.memory_ids(str(record["entity_id"])))
                        dropped = True
                    replay_record(self.graph, record)
                except (ValueError, KeyError, TypeError):
                    self.tally["log_unreadable"] += 1
                    self.found.damaged[self.found.rel(log)] = "records that cannot be applied"
                    continue
                self.tally["log_records"] += 1
                if op == "put":
                    changed.add(str(record["item"]["id"]))
                    deleted.discard(str(record["item"]["id"]))
                elif op == "del":
                    deleted.update(str(i) for i in record["ids"])
        return changed, deleted, dropped

    def _build_graph(self) -> None:
        restored = HistoryEvent(at=utcnow(), action="restored", detail={"from": "index"})
        copies = self.index.copies
        if self.found.snapshot is not None:
            self.graph = self.found.snapshot
            self.tally["from_snapshot"] = len(self.graph)
        else:
            self.graph_from_index = True
            self.graph = MemoryGraph()
            # Creation order stands in for the order memories were first stored (list order).
            for item in sorted(copies.values(), key=lambda i: (i.created_at, i.id)):
                self.graph.put(item.model_copy(deep=True), restored)
        changed, deleted, dropped = self._replay()
        for memory_id, item in copies.items():
            gone = memory_id in deleted or (dropped and memory_id not in changed)
            if memory_id not in self.graph and not gone:
                self.graph.put(item.model_copy(deep=True), restored)  # never drop what it holds
                self.tally["from_index"] += 1
            elif not self.graph_from_index and _newer(item, self.graph.item(memory_id)):
                # The index is written after the log: a newer copy there is a change the
                # log lost (cut short or deleted). Keep it, not the older graph node.
                self.graph.put(item.model_copy(deep=True), restored)
                self.tally["from_index"] += 1
        if self.graph_from_index:
            self.tally["from_index"] = sum(1 for i in self.graph.items() if i.id in copies)
        self.tally["from_log"] = sum(1 for i in changed if i in self.graph)
        for item in list(self.graph.items()):
            if item.superseded_by is not None:
                self.graph.add_edge(item.superseded_by, item.id, EdgeKind.SUPERSEDES)
        self.removed = {i for i in copies if i not in self.graph}

    def _plan_index(self) -> None:
        items = list(self.graph.items())
        copies = self.index.copies
        if self.rebuild_index:
            self.embed_now = items
            return
        for item in items:
            copy = copies.get(item.id)
            if copy is None or copy.search_text() != item.search_text():
                # Missing, or a change of text the index never got (cut off mid-commit).
                self.embed_now.append(item)
            elif copy.model_dump() != item.model_dump():
                self.update.append(item)

    def write_index(self, vectors: VectorIndex, embed: EmbedFn | None, *, drop_first: bool) -> None:
        """Write the planned vector changes of this entity (``drop_first``: its collection
        is rebuilt in an index that holds one)."""
        if self.embed_now and embed is None:
            raise InvalidInputError(
                f"{len(self.embed_now)} memories of {self.found.root} need embedding: pass "
                "the embedder the store was built with"
            )
        if self.rebuild_index and drop_first:
            vectors.drop_entity(self.found.entity_id)
        for start in range(0, len(self.embed_now), _BATCH):
            batch = self.embed_now[start : start + _BATCH]
            assert embed is not None
            vectors.upsert(batch, embed([i.search_text() for i in batch]))
        if self.update:
            vectors.update_metadata(self.update)
        if self.removed:
            vectors.delete(self.found.entity_id, sorted(self.removed))

    def write_files(self, generation: int, stamp: str, moved_aside: dict[str, str]) -> None:
        """Move damaged files aside, then save the graph as snapshot ``generation`` and
        point ``shard.json`` at it (call with the shard's lock held)."""
        found = self.found
        directory = found.directory
        directory.mkdir(parents=True, exist_ok=True)
        for name in found.damaged:
            target = found.root / name
            if target.is_file():
                moved = aside(target, stamp)
                target.rename(moved)
                moved_aside[name] = found.rel(moved)
        graph_file = directory / "graph.json"
        if self.graph_from_index and graph_file.exists():  # readable: replaced (--from-index)
            moved = aside(graph_file, stamp, "replaced")
            graph_file.rename(moved)
            moved_aside[found.rel(graph_file)] = found.rel(moved)
        self.graph.save(graph_file, generation)
        payload = {"entity_id": found.entity_id, "generation": generation}
        atomic_write_bytes(directory / "shard.json", json.dumps(payload).encode())
        # The logs this snapshot replaces go (a damaged one was moved aside above).
        for _, log in found.logs:
            log.unlink(missing_ok=True)


def _newer(copy: MemoryItem, item: MemoryItem | None) -> bool:
    """Whether an index copy holds a change its graph node lacks: a later update or merge
    (``updated_at``), or a supersession the node does not know of."""
    if item is None:
        return False
    if copy.updated_at is not None and (
        item.updated_at is None or copy.updated_at > item.updated_at
    ):
        return True
    return copy.superseded_by is not None and item.superseded_by is None


def aside(target: Path, stamp: str, why: str = "corrupt") -> Path:
    """Where a damaged (or replaced) file or directory is moved to."""
    return target.with_name(f"{target.name}.{why}-{stamp}")


def next_generation(found: ShardFound) -> int:
    """A generation above every one the shard's files name."""
    named = [found.generation, found.pointer or 0, *(g for g, _ in found.logs)]
    return max(named) + 1
