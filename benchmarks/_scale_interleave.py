"""Recall at every size in one process, the sizes' calls interleaved (``scale.py``).

On a shared machine the load changes within minutes, and the rows of ``scale.py`` run one
after another in fresh processes, so a recall ratio between two rows also measures how
busy the machine was at each. Here one process opens every size's store and asks the
same questions of each size's served entity in turn (the order shuffled per question, a
fixed seed), after a warm-up of each: the load falls on every size alike, and the ratio
of the p50s is the store's own.
"""

from __future__ import annotations

import random
import time
from typing import Any

from _locomo import percentile
from _scale_build import entity_name, open_memory
from _synth import UserStream

#: The served entity: the first of each store.
SERVED = 0


def interleave_child(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec["stores"]``: ``[size, path, namespace]`` per size; the p50/p99 of each."""
    stores = [(int(size), path, namespace) for size, path, namespace in spec["stores"]]
    served = {size: entity_name(SERVED, namespace) for size, _p, namespace in stores}
    stream = UserStream(entity_name(SERVED, ""), seed=spec["seed"])
    asked = [m.question for m in stream.take(spec["per_entity"]) if m.question]
    if not asked:  # an entity too small to hold a question
        return {"queries": 0, "sizes": {}, "recall_p50_ratio": None}
    queries = [asked[i % len(asked)] for i in range(spec["queries"])]
    memories = {size: open_memory(path, spec) for size, path, _ns in stores}
    latencies: dict[int, list[float]] = {size: [] for size in memories}
    order = random.Random(spec["seed"])
    try:
        for question in queries[: spec.get("warmup", 10)]:
            for size, memory in memories.items():
                memory.recall(question, entity_id=served[size], k=10)
        for question in queries:
            sizes = list(memories)
            order.shuffle(sizes)
            for size in sizes:
                started = time.perf_counter()
                memories[size].recall(question, entity_id=served[size], k=10)
                latencies[size].append((time.perf_counter() - started) * 1000)
    finally:
        for memory in memories.values():
            memory.close()
    figures = {
        str(size): {
            "recall_p50_ms": round(percentile(values, 0.5), 2),
            "recall_p99_ms": round(percentile(values, 0.99), 2),
        }
        for size, values in latencies.items()
    }
    smallest, largest = min(latencies), max(latencies)
    ratio = figures[str(largest)]["recall_p50_ms"] / figures[str(smallest)]["recall_p50_ms"]
    return {"queries": len(queries), "sizes": figures, "recall_p50_ratio": round(ratio, 3)}
