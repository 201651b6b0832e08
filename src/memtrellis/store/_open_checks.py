"""What opening a shard checks before it trusts what it loaded: O(1) per shard loaded.

A crash while appending can leave only one kind of damage in a log: a partial last line
(every append is one ``write`` of whole lines). Everything else that makes a shard's
graph and log hold less than was acknowledged (a log cut short, emptied or deleted, lines
lost at its end, a snapshot replaced by an older one) looks, to the log alone, like a
shorter history. So opening compares what it loaded with two copies kept elsewhere, both
read in one call:

* the catalog's row for the entity (its figures when they were last recorded): at the
  same generation the log must reach at least the position recorded then (and, at that
  very position, hold as many memories); the shard's generation must not be older;
* the entity's collection in the vector index: after every change of the log is in it,
  it holds exactly as many vectors as the graph holds memories. While changes are
  pending (logged, not yet confirmed in the index) the count must lie between what the
  index held before them and after them.

A disagreement raises [`StoreInconsistentError`][memtrellis.errors.StoreInconsistentError]
naming ``memtrellis repair`` (which restores every memory either copy still holds). The
count cannot tell a lost vector from a lost ``del`` record, nor see a lost change that
kept the number of memories (an update, an edge, a recall count) after the catalog's last
record of the entity: those limits are stated in docs/reliability.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtrellis.store._corrupt import damaged, inconsistent
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.storage import EntityStats

__all__ = ["WITH_RID", "check_catalog", "check_index", "check_record", "index_bounds"]

#: Records every writer gives a record id: the change records and their confirmations.
WITH_RID = frozenset({"put", "del", "drop", "ok"})


def check_record(record: dict[str, Any], log: Path, store: Path) -> None:
    """Refuse a log record that lacks what every writer writes (a change's record id).

    Examples:
        >>> from pathlib import Path
        >>> check_record({"op": "ok", "rid": "w:1"}, Path("wal.jsonl"), Path("s"))
        >>> try:
        ...     check_record({"op": "ok"}, Path("wal.jsonl"), Path("s"))
        ... except Exception as exc:
        ...     print(type(exc).__name__, exc.command)
        StoreCorruptError memtrellis repair s
    """
    if record.get("op") in WITH_RID and not isinstance(record.get("rid"), str):
        raise damaged(log, f"holds a record ({record['op']}) without a record id", store)


def check_catalog(
    recorded: EntityStats | None,
    *,
    generation: int,
    position: int,
    memories: int,
    shard: Path,
    log: Path,
    store: Path,
) -> None:
    """Compare a loaded shard with the catalog's last record of it (see the module).

    Examples:
        >>> from pathlib import Path
        >>> row = EntityStats(memories=3, generation=2, log_position=900)
        >>> check_catalog(row, generation=2, position=1200, memories=5,
        ...               shard=Path("s/shards/a0/x"), log=Path("wal"), store=Path("s"))
        >>> try:
        ...     check_catalog(row, generation=2, position=0, memories=2,
        ...                   shard=Path("s/shards/a0/x"), log=Path("wal"), store=Path("s"))
        ... except Exception as exc:
        ...     print(type(exc).__name__)
        StoreInconsistentError
    """
    if recorded is None:
        return
    if recorded.generation > generation:
        raise inconsistent(
            shard,
            f"holds generation {generation} of the entity's graph, but the catalog recorded "
            f"generation {recorded.generation}: its snapshot is older than the one acknowledged",
            store,
        )
    if recorded.generation < generation:
        return
    if position < recorded.log_position:
        what = "is missing" if position == 0 else f"ends at {position}"
        raise inconsistent(
            log,
            f"{what} but the catalog recorded {recorded.log_position} bytes of it: "
            "acknowledged changes were cut from the log",
            store,
        )
    if position == recorded.log_position and memories != recorded.memories:
        raise inconsistent(
            shard,
            f"holds {memories} memories where the catalog recorded {recorded.memories} at the "
            "same log position",
            store,
        )


def index_bounds(graph: MemoryGraph, pending: dict[str, dict[str, Any]]) -> tuple[int, int] | None:
    """How many vectors the entity's collection may hold while ``pending`` changes may or
    may not have reached it: ``(least, most)``; ``None`` when a pending ``drop`` (or any
    change but ``put`` and ``del``) leaves it open: the count is then checked once the
    changes are rolled forward.

    Examples:
        >>> index_bounds(MemoryGraph(), {})
        (0, 0)
        >>> index_bounds(MemoryGraph(), {"w:1": {"op": "del", "ids": ["m1"]}})
        (0, 1)
    """
    least = most = len(graph)
    for record in pending.values():
        op = record["op"]
        if op not in ("put", "del"):
            return None  # a drop (or a change kind this check does not know): no bound
        if op == "put" and str(record["item"]["id"]) in graph:
            least -= 1  # new, or changed: it may not be in the index yet
        elif op == "del":
            most += sum(1 for i in record["ids"] if str(i) not in graph)  # may still be there
    return max(least, 0), most


def check_index(
    count: int,
    bounds: tuple[int, int],
    *,
    memories: int,
    shard: Path,
    index: Path,
    store: Path,
    done: str | None = None,
) -> None:
    """Raise unless the collection's ``count`` lies within ``bounds``.

    Examples:
        >>> from pathlib import Path
        >>> check_index(5, (5, 5), memories=5, shard=Path("x"), index=Path("c"),
        ...             store=Path("s"))
    """
    least, most = bounds
    if least <= count <= most:
        return
    extra = {} if done is None else {"done": done}
    if count > most:
        raise inconsistent(
            shard,
            f"holds {memories} memories but the entity's vector index holds {count}: "
            "acknowledged changes are missing from the shard's log (cut short, emptied or "
            "deleted) or its snapshot is older than the index",
            store,
            **extra,
        )
    raise inconsistent(
        index,
        f"holds {count} vectors of an entity whose graph holds {memories} memories "
        f"(shard {shard}): the index lost vectors (its files replaced, cut short or "
        "deleted, or a repair cut off)",
        store,
        **extra,
    )
