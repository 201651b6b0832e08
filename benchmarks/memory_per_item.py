"""Resident bytes per memory after opening a store, split by what holds them.

    python benchmarks/memory_per_item.py                     # 20k memories, 20 users
    python benchmarks/memory_per_item.py --memories 5000 --users 5
    python benchmarks/memory_per_item.py --store /tmp/s20k --keep   # reuse a built store

A store is built through the library with the hashing embedder (``memtrellis.testing``;
no model, so only the store is measured): synthetic chat sessions of ``_synth.py``
stored with ``Memory.add(..., mode="fast")`` one session per call, the session's people
and places as its entities, so every memory is one message with its source (message id,
role, timestamp, the text as excerpt) and a ``created`` event. Then about one memory in
five is updated (tags, so a second ``updated`` event), one in twenty updated twice, and
a few hundred recalls count in ``recall_count``. The store is closed (one ``graph.json``).

Then, each in a fresh process that has imported memtrellis and Chroma first:

* ``rss``: RSS before and after ``Memory(path)`` (and its peak during the open); the
  same for an empty store, whose delta (the Chroma client, lazily imported modules) is
  subtracted, so that ``(delta - empty delta) / memories`` is what each memory costs;
* ``trace``: ``tracemalloc`` running during the open: the Python bytes still allocated
  after it, split by walking the objects the store keeps, each object counted once and
  in the first part that reaches it, in this order:

  - ``item fields``: each ``MemoryItem`` (its ``__dict__``, fields set, strings, dates,
    lists of tags and entities, metadata) without its sources;
  - ``sources``: the item's ``sources`` list and ``SourceRef`` objects;
  - ``history``: the node's events (``HistoryEvent`` objects, or however the graph keeps
    them);
  - ``graph``: networkx's dicts (nodes and their attribute dicts, successor and
    predecessor adjacency, edge key and attribute dicts), entity node attributes and
    ``MemoryGraph``'s own indexes;
  - ``keyword``: the BM25 index (postings, slots, numpy arrays);
  - ``other``: what tracemalloc counts beyond those (Chroma's Python side, caches,
    modules imported during open, the store's bookkeeping).

Figures go to ``benchmarks/results/memory_per_item.json`` (``--label`` names the run, so
that a "before" and an "after" sit side by side in it).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Any

from memtrellis.testing import store_of

sys.path.insert(0, str(Path(__file__).parent))

PARTS = ["item fields", "sources", "history", "graph", "keyword"]


# -- building --------------------------------------------------------------------------------
def build(path: Path, memories: int, users: int, seed: int) -> dict[str, Any]:
    """Store ``memories`` fast-mode messages of ``users`` users, then update and recall some."""
    import random

    from _synth import UserStream

    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder

    started = time.perf_counter()
    per_user = [memories // users + (1 if u < memories % users else 0) for u in range(users)]
    rng = random.Random(seed)
    updates = 0
    recalls = 0
    with Memory(path, embedder=HashingEmbedder()) as memory:
        for number, count in enumerate(per_user):
            user = f"user-{number:03d}"
            messages = UserStream(user, seed=seed + number).take(count)
            groups: list[list[Any]] = []
            for message in messages:
                if groups and groups[-1][-1].session == message.session:
                    groups[-1].append(message)
                else:
                    groups.append([message])
            for group in groups:
                memory.add(
                    [m.as_dict() for m in group],
                    entity_id=user,
                    entities=list(group[0].entities),
                    mode="fast",
                )
            ids = [item.id for item in memory.list(entity_id=user, limit=2 * count)]
            for memory_id in rng.sample(ids, len(ids) // 5):
                memory.update(memory_id, entity_id=user, tags=["mode:fast", "reviewed"])
                updates += 1
            for memory_id in rng.sample(ids, len(ids) // 20):
                memory.update(memory_id, entity_id=user, confidence=0.9)
                updates += 1
            questions = [m.question for m in messages if m.question][:20]
            for question in questions:
                memory.recall(question, entity_id=user, k=5)
                recalls += 1
        stored = memory.health().total_memories
    return {
        "memories": stored,
        "users": users,
        "updates": updates,
        "recalls": recalls,
        "build_s": round(time.perf_counter() - started, 1),
        # every entity's shard snapshot (shards/xx/<hash>/graph.json)
        "graph_json_bytes": sum(p.stat().st_size for p in path.glob("shards/*/*/graph.json")),
    }


# -- measuring (fresh process) ---------------------------------------------------------------
def rss_bytes() -> int:
    """Current resident set size of this process."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (``VmHWM``), 0 where unknown."""
    try:
        with Path("/proc/self/status").open(encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _skippable(obj: object) -> bool:
    # Shared by everything (types, functions, enum members, singletons, cached small
    # ints): not a cost of any one memory.
    if obj is None or obj is True or obj is False:
        return True
    if isinstance(obj, type | ModuleType | FunctionType | BuiltinFunctionType | Enum):
        return True
    return type(obj) is int and -5 <= obj <= 256  # type: ignore[operator]


class Walker:
    """Sums ``sys.getsizeof`` over everything reachable, each object once."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def size(self, roots: Iterable[object], stop: set[int] | None = None) -> int:
        """Bytes reachable from ``roots`` not counted before; ``stop`` ids are not entered."""
        total = 0
        stack = list(roots)
        while stack:
            obj = stack.pop()
            key = id(obj)
            if key in self.seen or _skippable(obj):
                continue
            if stop is not None and key in stop:
                continue
            self.seen.add(key)
            total += sys.getsizeof(obj)
            if isinstance(obj, dict):
                stack.extend(obj.keys())
                stack.extend(obj.values())
            elif isinstance(obj, list | tuple | set | frozenset):
                stack.extend(obj)
            elif isinstance(obj, str | bytes | int | float):
                continue
            else:
                stack.extend(r for r in gc.get_referents(obj) if not isinstance(r, type))
        return total

    def mark(self, objs: Iterable[object]) -> None:
        """Count these objects as seen without their size (shells walked separately)."""
        self.seen.update(id(o) for o in objs)


def split(memory: Any) -> dict[str, int]:
    """Bytes per part (see the module docstring), for one open ``Memory``."""
    store = store_of(memory)
    walker = Walker()
    parts = dict.fromkeys(PARTS, 0)
    shards = [store.shard(entity) for entity in store.entities()]
    for shard in shards:  # one walker: what shards share is counted once
        graph = shard.graph
        ids = graph.memory_ids(shard.entity_id)
        items = [graph.item(i) for i in ids]
        sources = [item.sources for item in items]
        stop = {id(s) for s in sources}
        parts["item fields"] += walker.size(items, stop)
        parts["sources"] += walker.size(sources)
        parts["history"] += walker.size(_history_roots(graph, ids))
        parts["graph"] += walker.size([graph])
        parts["keyword"] += walker.size([shard.keywords])
    return parts


def _history_roots(graph: Any, ids: list[str]) -> list[object]:
    # Whatever the node holds for its history, without decoding it (which would allocate).
    roots: list[object] = []
    for memory_id in ids:
        data = graph.g._node[memory_id]
        if "history" in data:
            roots.append(data["history"])
        roots.extend(v for k, v in data.items() if k not in ("kind", "item", "history"))
    return roots


def measure(path: Path, mode: str) -> dict[str, Any]:
    """Open the store at ``path`` (after importing everything) and report ``mode``'s figures."""
    import tracemalloc

    import chromadb  # noqa: F401  (imported before the baseline, like memtrellis)

    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder

    embedder = HashingEmbedder()
    gc.collect()
    if mode == "trace":
        tracemalloc.start()
    before = rss_bytes()
    started = time.perf_counter()
    memory = Memory(path, embedder=embedder)
    # Opening loads no shard: load every entity's, as serving them all would.
    for entity in store_of(memory).entities():
        store_of(memory).shard(entity)
    opened = time.perf_counter() - started
    gc.collect()
    after = rss_bytes()
    figures: dict[str, Any] = {
        "rss_before": before,
        "rss_after": after,
        "rss_peak": peak_rss_bytes(),
        "open_s": opened,
    }
    if mode == "trace":
        traced, _ = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        figures["traced"] = traced
        figures["by_file"] = {
            str(stat.traceback[0].filename).rsplit("site-packages/", 1)[-1]: stat.size
            for stat in snapshot.statistics("filename")[:10]
        }
        figures["parts"] = split(memory)
        figures["memories"] = sum(
            len(store_of(memory).graph_of(e)) for e in store_of(memory).entities()
        )
    memory.close()
    return figures


def in_fresh_process(path: Path, mode: str) -> dict[str, Any]:
    """``measure`` run by a new interpreter; its figures."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(path), "--mode", mode],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# -- report ------------------------------------------------------------------------------------
def report(
    built: dict[str, Any], rss: dict[str, Any], empty: dict[str, Any], trace: dict[str, Any]
):
    """Per-memory figures from the three measurements."""
    n = trace["memories"]
    parts = trace["parts"]
    other = trace["traced"] - sum(parts.values())
    per = {name: round(size / n) for name, size in {**parts, "other": other}.items()}
    delta = rss["rss_after"] - rss["rss_before"]
    empty_delta = empty["rss_after"] - empty["rss_before"]
    return {
        **built,
        "memories": n,
        "rss_delta_mb": round(delta / 2**20, 1),
        "rss_empty_delta_mb": round(empty_delta / 2**20, 1),
        "rss_peak_delta_mb": round((rss["rss_peak"] - rss["rss_before"]) / 2**20, 1),
        "rss_per_memory": round((delta - empty_delta) / n),
        "traced_per_memory": round(trace["traced"] / n),
        "open_s": round(rss["open_s"], 2),
        "per_memory": per,
        "traced_by_file_per_memory": {k: round(v / n) for k, v in trace["by_file"].items()},
    }


def print_report(figures: dict[str, Any]) -> None:
    """The figures as a small table."""
    print(
        f"{figures['memories']} memories of {figures['users']} users "
        f"({figures['updates']} updates, {figures['recalls']} recalls); "
        f"graph.json {figures['graph_json_bytes'] / 2**20:.1f} MB; open {figures['open_s']} s"
    )
    print(
        f"RSS after open: +{figures['rss_delta_mb']} MB "
        f"(empty store +{figures['rss_empty_delta_mb']} MB; peak during open "
        f"+{figures['rss_peak_delta_mb']} MB): {figures['rss_per_memory']} B/memory"
    )
    print(f"tracemalloc after open: {figures['traced_per_memory']} B/memory")
    print(f"{'part':<14}{'B/memory':>10}")
    for name, value in figures["per_memory"].items():
        print(f"{name:<14}{value:>10}")
    print("allocated by (tracemalloc, innermost Python file), B/memory:")
    for name, value in figures["traced_by_file_per_memory"].items():
        print(f"  {value:>8}  {name}")


def main() -> None:
    """Build (or reuse) a store, measure it in fresh processes, print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", type=Path, help="store directory (built when absent)")
    parser.add_argument("--keep", action="store_true", help="keep the store afterwards")
    parser.add_argument("--label", default="current", help="name of this run in the JSON")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="rss", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.mode)))
        return
    root = Path(tempfile.mkdtemp(prefix="mt-ram-"))
    path = args.store or root / "store"
    try:
        info_path = path / "bench-build.json"
        if info_path.exists():
            built = json.loads(info_path.read_text())
        else:
            print(f"building {args.memories} memories in {path} ...", flush=True)
            built = build(path, args.memories, args.users, args.seed)
            info_path.write_text(json.dumps(built))
        built["graph_json_bytes"] = sum(
            p.stat().st_size for p in path.glob("shards/*/*/graph.json")
        )
        empty = root / "empty"
        from memtrellis import Memory
        from memtrellis.testing import HashingEmbedder

        Memory(empty, embedder=HashingEmbedder()).close()
        figures = report(
            built,
            in_fresh_process(path, "rss"),
            in_fresh_process(empty, "rss"),
            in_fresh_process(path, "trace"),
        )
        print_report(figures)
        out = Path(__file__).parent / "results" / "memory_per_item.json"
        saved = json.loads(out.read_text()) if out.exists() else {}
        saved[args.label] = figures
        out.write_text(json.dumps(saved, indent=2) + "\n")
    finally:
        shutil.rmtree(root / "empty", ignore_errors=True)
        if not args.keep:
            shutil.rmtree(path, ignore_errors=True)
        if not args.keep or args.store is not None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
