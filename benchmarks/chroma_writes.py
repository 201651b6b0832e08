"""Chroma writes as the store grows: one user's collection served among N others.

Issue 16, item 2. A store of N collections of 500 vectors (one collection per entity, as
``memtrellis.store.vectors`` lays them out) grows around one served collection, and at each
N the script measures, for several HNSW settings in one run:

* ``upsert`` p50/p99 of one record into the served collection, while single writes are
  spread at random over all collections (the write pattern of real use: two writes to
  random other entities between two writes of the served one);
* the bytes Chroma writes per upsert (``wchar`` of ``/proc/self/io``): what a small
  ``sync_threshold`` costs, since every persist rewrites the segment's HNSW files;
* rows in ``embeddings_queue`` (Chroma's log in ``chroma.sqlite3``), disk size, RSS;
* ``query`` p50 (top 10) and recall@10 against exact cosine search, in the live client and
  after reopening it (the index as loaded from disk plus the replayed log), and the first
  query after reopening (it loads the segment and replays the collection's unpersisted log).

Why the settings matter: the embedded (and server) Chroma appends every write to
``embeddings_queue`` and, for each write, reads the collection's log from the point where
its HNSW segment last persisted and purges what lies before it. Neither query can use an
index on the collection (the table has none on ``topic``), so both walk the rows of
*every* collection in that range. A segment persists only every ``sync_threshold``
writes (default 1000): collections with fewer writes never persist, the log is never
purged and each write walks all of it.
The steady-state log is about ``collections x sync_threshold / 2`` rows.

Each setting runs in a fresh child process (clean RSS); the store grows in it from the
smallest N to the largest. Collections are built with one 500-record upsert each, then
every collection gets a random number (below its ``sync_threshold``) of unpersisted
writes, so that the log is in the state that a long run of random single writes leaves.
Vectors are random (384-d by default) and each record carries a 700-byte metadata copy of
its item, like memtrellis' records.

Run:  python benchmarks/chroma_writes.py          (N = 10, 100, 200: about 6 min on 2 cores)
      python benchmarks/chroma_writes.py --quick  (N = 10, 50, fewer writes: about 2 min)
      python benchmarks/chroma_writes.py --full   (N = 10, 100, 400, 100 timed writes:
          about 25 min, most of it Chroma's defaults at N = 400)
      --dir /dev/shm keeps fsync out of the figures, --variants picks the settings.
Prints a table and each figure's ratio against the smallest N, measured in the same run,
then a persist-cost table: at N = 10, all settings written in turns on the chosen disk.
The runs behind memtrellis' setting are in results/chroma_writes.json.
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
#: Variants that also add an index on (topic, seq_id) to Chroma's log table, so that its
#: per-write read and purge touch only the collection's own rows (not a Chroma setting:
#: a change to Chroma's schema, embedded mode only; measured to see what is left).
INDEXED = {"default+index": "default", "s10+index": "s10"}
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

    def __init__(
        self, base: Path, hnsw: dict[str, Any], buckets: int, dim: int, *, index: bool = False
    ) -> None:
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
        self.index = index
        self._open_clients()

    def _open_clients(self) -> None:
        from chromadb.config import Settings

        self.clients = [
            self.chromadb.PersistentClient(
                path=str(self.base / f"b{b}"), settings=Settings(anonymized_telemetry=False)
            )
            for b in range(self.buckets)
        ]
        if self.index:
            for b in range(self.buckets):
                with sqlite3.connect(self.base / f"b{b}" / "chroma.sqlite3") as db:
                    db.execute(
                        "CREATE INDEX IF NOT EXISTS bench_queue_topic"
                        " ON embeddings_queue (topic, seq_id)"
                    )

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


def _settings(variant: str) -> tuple[dict[str, Any], int]:
    if variant == "memtrellis":
        from memtrellis.store.vectors import HNSW_CONFIGURATION

        keys = ("sync_threshold", "batch_size")
        return {k: v for k, v in HNSW_CONFIGURATION.items() if k in keys}, 1
    return VARIANTS[INDEXED.get(variant, variant)]


def child(
    variant: str, sizes: list[int], dim: int, writes: int, others: int, directory: str | None
) -> None:
    hnsw, buckets = _settings(variant)
    base = Path(tempfile.mkdtemp(prefix="chroma-writes-", dir=directory))
    try:
        store = Store(base, hnsw, buckets, dim, index=variant in INDEXED)
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
            t1 = time.perf_counter()  # loads the segment and replays its unpersisted log
            store.collections[0].query(query_embeddings=[[1.0] * dim], n_results=10, include=[])
            row["first_query_ms"] = 1000 * (time.perf_counter() - t1)
            row["reopened_query_p50_ms"], row["reopened_recall10"] = store.measure_queries(40)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def persist_cost(variants: list[str], rounds: int, dim: int, directory: str | None) -> None:
    """What persisting costs, apart from the log: stores of 10 collections, one per setting,
    written in turns (10 served writes each, two random others between) so that the load of
    a shared machine falls on every setting alike. Prints one JSON row per setting."""
    base = Path(tempfile.mkdtemp(prefix="chroma-persist-", dir=directory))
    try:
        stores: dict[str, Store] = {}
        for variant in variants:
            hnsw, buckets = _settings(variant)
            (base / variant).mkdir()
            stores[variant] = Store(base / variant, hnsw, buckets, dim, index=variant in INDEXED)
            stores[variant].grow(10)
        latencies: dict[str, list[float]] = {v: [] for v in variants}
        wrote = dict.fromkeys(variants, 0)
        for _ in range(rounds):
            for variant, store in stores.items():
                for _ in range(10):
                    before = _wchar()
                    t0 = time.perf_counter()
                    store.write(0, 1)
                    latencies[variant].append(time.perf_counter() - t0)
                    wrote[variant] += _wchar() - before
                    for _ in range(2):
                        store.write(int(store.rng.integers(1, 10)), 1)
        for variant, values in latencies.items():
            row = {"variant": variant, "n": 10, "interleaved": True}
            row["upsert_p50_ms"] = 1000 * statistics.median(values)
            row["upsert_mean_ms"] = 1000 * statistics.mean(values)
            row["upsert_p90_ms"] = 1000 * _pct(values, 0.9)
            row["upsert_p99_ms"] = 1000 * _pct(values, 0.99)
            row["kb_written_per_upsert"] = wrote[variant] / len(values) / 1000
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
    ("first_query_ms", "1st query after reopen ms", "{:.0f}"),
]
RATIOS = ["upsert_p50_ms", "upsert_p99_ms", "queue_rows", "disk_mb", "rss_mb", "query_p50_ms"]


def report(rows: list[dict[str, Any]]) -> None:
    interleaved = [row for row in rows if row.get("interleaved")]
    rows = [row for row in rows if not row.get("interleaved")]
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
    if interleaved:
        print()
        print("Persisting, N = 10, the settings written in turns (ratio: mean against default):")
        print("| variant | upsert p50 ms | mean ms | p90 ms | p99 ms | KB written/upsert | mean |")
        print("|---|---|---|---|---|---|---|")
        ref = next((r for r in interleaved if r["variant"] == "default"), interleaved[0])
        for row in interleaved:
            cells = [row["variant"]]
            cells += [
                f"{row[k]:.1f}"
                for k in ("upsert_p50_ms", "upsert_mean_ms", "upsert_p90_ms", "upsert_p99_ms")
            ]
            cells += [f"{row['kb_written_per_upsert']:.0f}"]
            cells += [f"{row['upsert_mean_ms'] / ref['upsert_mean_ms']:.2f}x"]
            print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 10, 50 and fewer writes")
    parser.add_argument("--full", action="store_true", help="N = 10, 100, 400 (about 25 min)")
    parser.add_argument("--sizes", help="comma-separated N (default 10,100,200)")
    parser.add_argument(
        "--variants",
        default="default,s100,s30,s10,s1",
        help=f"comma-separated, from {', '.join([*VARIANTS, *INDEXED, 'memtrellis'])}",
    )
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--writes", type=int, help="timed writes into the served collection")
    parser.add_argument("--others", type=int, default=2, help="random writes between them")
    parser.add_argument(
        "--dir", help="where the stores go (default: the temp dir; /dev/shm leaves fsync out)"
    )
    parser.add_argument(
        "--persist-rounds",
        type=int,
        default=10,
        help="rounds of the interleaved persist-cost run at N = 10 (0: skip it)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    default_sizes = "10,50" if args.quick else "10,100,400" if args.full else "10,100,200"
    sizes = [int(s) for s in (args.sizes or default_sizes).split(",")]
    writes = args.writes or (30 if args.quick else 100 if args.full else 50)
    if args.child == "persist-cost":
        persist_cost(args.variants.split(","), args.persist_rounds, args.dim, args.dir)
        return
    if args.child:
        child(args.child, sizes, args.dim, writes, args.others, args.dir)
        return
    rows: list[dict[str, Any]] = []
    runs = args.variants.split(",")
    if args.persist_rounds:
        runs.append("persist-cost")
    for variant in runs:
        t0 = time.perf_counter()
        cmd = [sys.executable, __file__, "--child", variant, "--sizes", ",".join(map(str, sizes))]
        cmd += ["--dim", str(args.dim), "--writes", str(writes), "--others", str(args.others)]
        cmd += ["--dir", args.dir] if args.dir else []
        cmd += ["--variants", args.variants, "--persist-rounds", str(args.persist_rounds)]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:  # one row per N, as soon as it is measured
                if line.startswith("{"):
                    rows.append(json.loads(line))
                    print(f"# {line.strip()}", file=sys.stderr, flush=True)
                    if args.json:
                        args.json.write_text(json.dumps(rows, indent=1))
        if proc.returncode:
            raise SystemExit(f"the {variant} run failed ({proc.returncode})")
        print(f"# {variant}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    report(rows)


if __name__ == "__main__":
    main()
