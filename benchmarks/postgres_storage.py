"""Round trips of the PostgreSQL shard storage, beside the file storage, in one run.

    pip install -e ".[dev]"                  # psycopg, psycopg_pool and pgserver
    python benchmarks/postgres_storage.py    # --rounds 500 --memories 500

Starts a throwaway PostgreSQL server (the pgserver wheel, Unix socket, in a temp dir that
is removed afterwards) and times, per call, on one entity:

* ``stamp``: the per-shard version check a reader runs before each recall;
* ``append``: one write's records (a ``put`` of about 1 KB), durable and not;
* ``read_log``: the records after a position when one record is new;
* ``lock``: taking and releasing the entity's writer lock (uncontended);
* ``save`` / ``load``: a snapshot of ``--memories`` memories.

The same calls on `FileShardStorage` in a temp dir give the ratios. Figures are printed
(p50 and p99 in microseconds); nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memtrellis.store._pgscratch import ScratchServer
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.postgres import PostgresBackend
from memtrellis.store.shardfiles import FileShardStorage
from memtrellis.store.storage import ShardStorage
from memtrellis.types import MemoryItem, Scope


def timed(call: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """p50 and p99 of ``call`` in microseconds."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def record(number: int) -> dict[str, Any]:
    item = MemoryItem(text=f"Ana mentioned fact number {number}. " * 20, scope=Scope(entity_id="a"))
    return {"op": "put", "item": item.model_dump(mode="json"), "rid": str(number)}


def measure(storage: ShardStorage, rounds: int, memories: int) -> dict[str, tuple[float, float]]:
    figures: dict[str, tuple[float, float]] = {}
    counter = iter(range(10**9))
    with storage.lock(timeout=10):
        storage.append(0, [record(0)], durable=True)
    figures["stamp"] = timed(storage.stamp, rounds)
    figures["append durable"] = timed(
        lambda: storage.append(0, [record(next(counter))], durable=True), rounds
    )
    figures["append not durable"] = timed(
        lambda: storage.append(0, [{"op": "ok", "rid": "x"}], durable=False), rounds
    )
    position = storage.read_log(0, 0).position

    def read_one() -> None:
        storage.read_log(0, position - 1)

    figures["read_log (1 new)"] = timed(read_one, rounds)

    def lock() -> None:
        with storage.lock(timeout=10):
            pass

    figures["lock+unlock"] = timed(lock, rounds)
    graph = MemoryGraph()
    for number in range(memories):
        graph.put(MemoryItem(text=f"Ana said thing {number}.", scope=Scope(entity_id="a")))
    generations = iter(range(1, 10**9))
    figures[f"save {memories}"] = timed(lambda: storage.save(graph, next(generations)), 10)
    # TypeError: the file storage before MemoryGraph.load(path, store=...) exists
    with contextlib.suppress(TypeError):
        figures[f"load {memories}"] = timed(storage.load, 10)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--memories", type=int, default=500)
    args = parser.parse_args()
    server = ScratchServer()
    try:
        backend = PostgresBackend(server.new_database())
        try:
            postgres = measure(backend.storage("a"), args.rounds, args.memories)
        finally:
            backend.close()
    finally:
        server.close()
    with tempfile.TemporaryDirectory() as tmp:
        files = measure(FileShardStorage(Path(tmp), "a"), args.rounds, args.memories)
    print(f"{'call':<22}{'postgres p50':>14}{'p99':>10}{'files p50':>12}{'ratio':>8}")
    for name, (p50, p99) in postgres.items():
        file_p50 = files.get(name, (float("nan"),))[0]
        print(f"{name:<22}{p50:>12.0f}us{p99:>8.0f}us{file_p50:>10.0f}us{p50 / file_p50:>8.1f}")


if __name__ == "__main__":
    main()
