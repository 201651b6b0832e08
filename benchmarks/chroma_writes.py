"""Chroma writes as the store grows: one user's collection served among N others.

Issue 16, item 2. A store of N collections of 500 vectors (one collection per entity, as
``memtrellis.store.vectors`` lays them out) grows around one served collection, and at each
N the script measures, for several HNSW settings in one run:

* ``upsert`` p50/p99 of one record into the served collection, while single writes are
  spread at random over all collections (the write pattern of real use: three writes to
  random other entities between two writes of the served one);
* the bytes Chroma writes per upsert (``wchar`` of ``/proc/self/io``): what a small
  ``sync_threshold`` costs, since every persist rewrites the segment's HNSW files;
* rows in ``embeddings_queue`` (Chroma's log in ``chroma.sqlite3``), disk size, RSS;
* ``query`` p50 (top 10) and recall@10 against exact cosine search, in the live client and
  after reopening it (the index as loaded from disk plus the replayed log).

Why the settings matter: the embedded (and server) Chroma appends every write to
``embeddings_queue`` and, for each write, reads the collection's log from the point where
its HNSW segment last persisted and purges what lies before it. Neither query can use an
index on the collection (``topic``), so both walk the rows of *every* collection in that
range. A segment persists only every ``sync_threshold`` writes (default 1000): collections
with fewer writes never persist, the log is never purged and each write walks all of it.
The steady-state log is about ``collections x sync_threshold / 2`` rows.

Each setting runs in a fresh child process (clean RSS); the store grows in it from the
smallest N to the largest. Collections are built with one 500-record upsert each, then
every collection gets a random number (below its ``sync_threshold``) of unpersisted
writes, so that the log is in the state that a long run of random single writes leaves.
Vectors are random (384-d by default) and each record carries a 700-byte metadata copy of
its item, like memtrellis' records.

Run:  python benchmarks/chroma_writes.py            (N = 10, 100, 400: a few minutes)
      python benchmarks/chroma_writes.py --quick    (N = 10, 50, fewer writes)
Prints a table and each figure's ratio against the smallest N, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

#: name -> (hnsw settings beyond memtrellis' space/ef, number of clients the entities are
#: spread over). ``memtrellis`` is whatever ``memtrellis.store.vectors`` applies.
VARIANTS: dict[str, tuple[dict[str, int], int]] = {
    "default": ({}, 1),
    "s100": ({"sync_threshold": 100, "batch_size": 100}, 1),
    "s30": ({"sync_threshold": 30, "batch_size": 30}, 1),
    "s10": ({"sync_threshold": 10, "batch_size": 10}, 1),
    "s1": ({"sync_threshold": 1, "batch_size": 1}, 1),
    "buckets16": ({}, 16),
}
RECORDS = 500
META_BYTES = 700


def _rss_mb() -> float:
    with Path("/proc/self/status").open() as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _wchar() -> int:
    with Path("/proc/self/io").open() as io:
        for line in io:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    return 0


def _dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Store:
    """N collections over ``buckets`` embedded clients, with the vectors of the served one."""

    def __init__(self, base: Path, hnsw: dict[str, Any], buckets: int, dim: int) -> None:
        import chromadb
        import numpy as np

        self.np = np
        self.chromadb = chromadb
        self.base = base
        self.dim = dim
        self.buckets = buckets
        self.config = {
            "hnsw": {"space": "cosine", "ef_search": 200, "ef_construction": 200, **hnsw}
        }
        self.sync = int(hnsw.get("sync_threshold", 1000))
        self.rng = np.random.default_rng(0)
        self.clients: list[Any] = []
        self.collections: list[Any] = []
        self.served_ids: list[str] = []
        self.served_vectors: list[Any] = []
        self.serial = 0
        self._open_clients()

    def _open_clients(self) -> None:
        from chromadb.config import Settings

        self.clients = [
            self.chromadb.PersistentClient(
                path=str(self.base / f"b{b}"), settings=Settings(anonymized_telemetry=False)
            )
            for b in range(self.buckets)
        ]

    def _client(self, index: int) -> Any:
        return self.clients[zlib.crc32(str(index).encode()) % self.buckets]

    def _records(self, n: int) -> tuple[list[str], Any, list[dict[str, Any]]]:
        ids = [f"m{self.serial + i}" for i in range(n)]
        self.serial += n
        vectors = self.rng.standard_normal((n, self.dim)).astype("float32")
        metas = [{"entity_id": "e", "item": "x" * META_BYTES} for _ in range(n)]
        return ids, vectors, metas

    def write(self, index: int, n: int) -> None:
        ids, vectors, metas = self._records(n)
        self.collections[index].upsert(ids=ids, embeddings=vectors, metadatas=metas)
        if index == 0:
            self.served_ids.extend(ids)
            self.served_vectors.extend(vectors)

    def grow(self, total: int) -> None:
        start = len(self.collections)
        for index in range(start, total):
            self.collections.append(
                self._client(index).get_or_create_collection(
                    f"mt-{index:05d}", configuration=self.config, embedding_function=None
                )
            )
            self.write(index, RECORDS)
        # Unpersisted tails (uniform below sync_threshold), as random single writes leave
        # them. Above 500 the build itself left every collection unpersisted.
        if self.sync <= RECORDS:
            for index in self.rng.permutation(range(start, total)):
                k = int(self.rng.integers(0, self.sync))
                if k:
                    self.write(int(index), k)

    def measure_writes(self, writes: int, others: int) -> dict[str, float]:
        n = len(self.collections)
        served: list[float] = []
        spread: list[float] = []
        wrote = 0
        for _ in range(writes):
            before = _wchar()
            t0 = time.perf_counter()
            self.write(0, 1)
            served.append(time.perf_counter() - t0)
            wrote += _wchar() - before
            for _ in range(others):
                index = int(self.rng.integers(1, n)) if n > 1 else 0
                t0 = time.perf_counter()
                self.write(index, 1)
                spread.append(time.perf_counter() - t0)
        return {
            "upsert_p50_ms": 1000 * statistics.median(served),
            "upsert_p99_ms": 1000 * _pct(served, 0.99),
            "any_upsert_p50_ms": 1000 * statistics.median(spread) if spread else float("nan"),
            "kb_written_per_upsert": wrote / writes / 1000,
        }

    def measure_queries(self, queries: int) -> tuple[float, float]:
        np = self.np
        data = np.asarray(self.served_vectors, dtype="float32")
        data /= np.linalg.norm(data, axis=1, keepdims=True)
        ids = np.asarray(self.served_ids)
        latencies: list[float] = []
        hits = 0
        for _ in range(queries):
            q = self.rng.standard_normal(self.dim).astype("float32")
            exact = set(ids[np.argsort(-(data @ (q / np.linalg.norm(q))))[:10]])
            t0 = time.perf_counter()
            got = self.collections[0].query(query_embeddings=[q], n_results=10, include=[])
            latencies.append(time.perf_counter() - t0)
            hits += len(exact & set(got["ids"][0]))
        return 1000 * statistics.median(latencies), hits / (10 * queries)

    def reopen(self) -> None:
        for client in self.clients:
            client.close()
        self._open_clients()
        self.collections = [
            self._client(i).get_collection(f"mt-{i:05d}", embedding_function=None)
            for i in range(len(self.collections))
        ]

    def queue_rows(self) -> int:
        rows = 0
        for b in range(self.buckets):
            with sqlite3.connect(
                f"file:{self.base / f'b{b}' / 'chroma.sqlite3'}?mode=ro", uri=True
            ) as db:
                rows += int(db.execute("SELECT count(*) FROM embeddings_queue").fetchone()[0])
        return rows


def child(
    variant: str, sizes: list[int], dim: int, writes: int, others: int, directory: str | None
) -> None:
    if variant == "memtrellis":
        from memtrellis.store.vectors import HNSW_CONFIGURATION

        hnsw = {
            k: v for k, v in HNSW_CONFIGURATION.items() if k in ("sync_threshold", "batch_size")
        }
        buckets = 1
    else:
        hnsw, buckets = VARIANTS[variant]
    base = Path(tempfile.mkdtemp(prefix="chroma-writes-", dir=directory))
    try:
        store = Store(base, hnsw, buckets, dim)
        for n in sizes:
            t0 = time.perf_counter()
            store.grow(n)
            row: dict[str, Any] = {"variant": variant, "n": n}
            row["build_s"] = time.perf_counter() - t0
            row.update(store.measure_writes(writes, others))
            row["query_p50_ms"], row["recall10"] = store.measure_queries(40)
            row["queue_rows"] = store.queue_rows()
            row["disk_mb"] = _dir_mb(base)
            row["rss_mb"] = _rss_mb()
            store.reopen()
            row["reopened_query_p50_ms"], row["reopened_recall10"] = store.measure_queries(40)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


COLUMNS = [
    ("upsert_p50_ms", "upsert p50 ms", "{:.1f}"),
    ("upsert_p99_ms", "p99 ms", "{:.1f}"),
    ("any_upsert_p50_ms", "others p50", "{:.1f}"),
    ("kb_written_per_upsert", "KB written/upsert", "{:.0f}"),
    ("queue_rows", "queue rows", "{:,}"),
    ("disk_mb", "disk MB", "{:.0f}"),
    ("rss_mb", "RSS MB", "{:.0f}"),
    ("query_p50_ms", "query p50 ms", "{:.2f}"),
    ("recall10", "recall@10", "{:.3f}"),
    ("reopened_recall10", "after reopen", "{:.3f}"),
]
RATIOS = ["upsert_p50_ms", "upsert_p99_ms", "queue_rows", "disk_mb", "rss_mb", "query_p50_ms"]


def report(rows: list[dict[str, Any]]) -> None:
    header = ["variant", "N"] + [label for _, label, _ in COLUMNS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        cells = [row["variant"], str(row["n"])]
        cells += [fmt.format(row[key]) for key, _, fmt in COLUMNS]
        print("| " + " | ".join(cells) + " |")
    print()
    print("Ratios against the smallest N of the same variant:")
    header = ["variant", "N", *RATIOS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    first: dict[str, dict[str, Any]] = {}
    for row in rows:
        base = first.setdefault(row["variant"], row)
        cells = [row["variant"], str(row["n"])]
        cells += [f"{row[k] / base[k]:.2f}x" if base[k] else "-" for k in RATIOS]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 10, 50 and fewer writes")
    parser.add_argument("--sizes", help="comma-separated N (default 10,100,400)")
    parser.add_argument(
        "--variants",
        default="default,s100,s30,s10,s1",
        help=f"comma-separated, from {', '.join([*VARIANTS, 'memtrellis'])}",
    )
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--writes", type=int, help="timed writes into the served collection")
    parser.add_argument("--others", type=int, default=3, help="random writes between them")
    parser.add_argument(
        "--dir", help="where the stores go (default: the temp dir; /dev/shm leaves fsync out)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    sizes = [int(s) for s in (args.sizes or ("10,50" if args.quick else "10,100,400")).split(",")]
    writes = args.writes or (40 if args.quick else 100)
    if args.child:
        child(args.child, sizes, args.dim, writes, args.others, args.dir)
        return
    rows: list[dict[str, Any]] = []
    for variant in args.variants.split(","):
        t0 = time.perf_counter()
        cmd = [sys.executable, __file__, "--child", variant, "--sizes", ",".join(map(str, sizes))]
        cmd += ["--dim", str(args.dim), "--writes", str(writes), "--others", str(args.others)]
        cmd += ["--dir", args.dir] if args.dir else []
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        print(f"# {variant}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    report(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
