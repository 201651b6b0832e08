"""Recall latency and ingest throughput at scale, against a dense-only Chroma baseline.

Builds one store with ``--n`` memories spread over ``--tenants`` entities, then times:

* ``memtrellis``: ``Memory.recall`` end to end (query embedding, dense + BM25, fusion,
  graph hop, budget) for one tenant;
* ``dense-only``: a bare Chroma query on the same tenant's collection with the same
  query vector (no embedding), the floor any Chroma-backed recall pays;

in the same process, and prints p50/p95 and their ratio. Figures also go to
``benchmarks/results/recall_latency.json``.

    python benchmarks/recall_latency.py --n 20000 --tenants 10
    python benchmarks/recall_latency.py --n 100000 --tenants 100 --embedder minilm
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from memtrellis import Memory
from memtrellis.store import collection_name

WORDS = [
    "alice",
    "bob",
    "clara",
    "dave",
    "tea",
    "coffee",
    "lisbon",
    "porto",
    "oslo",
    "berlin",
    "cat",
    "dog",
    "greyhound",
    "piano",
    "cello",
    "deadline",
    "report",
    "launch",
    "budget",
    "meeting",
    "friday",
    "monday",
    "spring",
    "winter",
    "vegan",
    "allergy",
    "peanut",
    "project",
    "postgres",
    "mongo",
    "design",
    "review",
    "flight",
    "hotel",
    "birthday",
    "sister",
    "brother",
    "manager",
    "team",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="memories in the store")
    parser.add_argument("--tenants", type=int, default=10, help="entities they are spread over")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=500, help="memories per add() call")
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()

    if args.embedder == "hashing":
        from memtrellis.testing import HashingEmbedder

        embedder = HashingEmbedder(dimension=384)
    else:
        from memtrellis.embeddings import default_embedder

        embedder = default_embedder()  # type: ignore[assignment]

    rng = random.Random(7)
    tenants = [f"user-{i}" for i in range(args.tenants)]
    with tempfile.TemporaryDirectory() as tmp, Memory(tmp, embedder=embedder) as memory:
        started = time.perf_counter()
        per_tenant = args.n // args.tenants
        for tenant in tenants:
            for start in range(0, per_tenant, args.batch):
                count = min(args.batch, per_tenant - start)
                memory.add([sentence(rng) for _ in range(count)], entity_id=tenant)
        ingest_s = time.perf_counter() - started

        target = tenants[0]
        queries = [sentence(rng) for _ in range(args.queries)]
        ours: list[float] = []
        for query in queries:
            t0 = time.perf_counter()
            memory.recall(query, entity_id=target, k=10)
            ours.append((time.perf_counter() - t0) * 1000)

        vectors = [embedder.embed_query(q) for q in queries]
        collection = memory._store.vectors._client.get_collection(collection_name(target))
        dense: list[float] = []
        for vector in vectors:
            t0 = time.perf_counter()
            collection.query(query_embeddings=[vector], n_results=10, include=["distances"])
            dense.append((time.perf_counter() - t0) * 1000)
        embed_ms = []
        for query in queries[:50]:
            t0 = time.perf_counter()
            embedder.embed_query(query)
            embed_ms.append((time.perf_counter() - t0) * 1000)

    figures = {
        "n": args.n,
        "tenants": args.tenants,
        "per_tenant": per_tenant,
        "embedder": embedder.model_id,
        "ingest_s": round(ingest_s, 2),
        "ingest_per_s": round(args.n / ingest_s, 1),
        "memtrellis": {
            "latency_p50_ms": round(statistics.median(ours), 3),
            "latency_p95_ms": round(percentile(ours, 0.95), 3),
        },
        "dense_only": {
            "latency_p50_ms": round(statistics.median(dense), 3),
            "latency_p95_ms": round(percentile(dense, 0.95), 3),
        },
        "query_embedding_p50_ms": round(statistics.median(embed_ms), 3),
    }
    figures["p50_ratio_vs_dense_only"] = round(
        figures["memtrellis"]["latency_p50_ms"] / figures["dense_only"]["latency_p50_ms"], 2
    )
    print(json.dumps(figures, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "recall_latency.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
