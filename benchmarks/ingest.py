"""Fast-mode ingest throughput beside the bare embedder, in one process.

Texts are the LoCoMo turns (``../shared/bench/locomo10_dev.json``) when the file is there,
else generated sentences. Measured, in this order:

a. the bare default embedder (all-MiniLM-L6-v2 int8 ONNX) ``embed_documents`` over all
   texts in calls of 64 (and, for each batch size of b, in calls of that size);
b. ``Memory.add(batch, mode="fast")`` into a fresh temporary store at 1, 16, 64 and 256
   messages per call (batch size 1 on the first ``--subset-batch1`` turns): turns/s and
   the ratio to a, measured on the same texts right before (best of ``--rounds`` runs, as
   the machine may be shared);
c. ``Memory.store(item)`` of pre-built ``MemoryItem`` objects, one call per item (the
   library has no batch store), beside the same items written as one batch through the
   store's private ``put`` (what a batch store could reach);
d. ``Memory.capture(turn)`` latency p50/p99 in microseconds over ``--captures`` captures,
   and the time ``flush()`` then takes to drain them.

Where a fast-mode batch size runs below 0.8x the bare embedder, that batch size is run
again under cProfile and the top functions are printed (and saved under
``benchmarks/results/ingest_profile_b<N>.txt``). Figures go to
``benchmarks/results/ingest.json``.

    . /tmp/dev/bin/activate
    python benchmarks/ingest.py                 # LoCoMo turns when present
    python benchmarks/ingest.py --generated 3000 --no-profile
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from _locomo import code_version, data_path_or_none, load_locomo, percentile, results_dir

from memtrellis import Memory
from memtrellis.embeddings import default_embedder
from memtrellis.testing import store_of
from memtrellis.types import MemoryItem, MemoryType, Scope, SourceKind, SourceRef

BATCH_SIZES = (1, 16, 64, 256)
BARE_BATCH = 64
TARGET_RATIO = 0.8

Conversations = list[tuple[str, list[dict[str, Any]]]]  # (entity_id, messages)

_WORDS = (
    (
        "I went hiking with my sister last weekend near the lake and we saw a heron; "
        "my new job at the bakery starts on Monday, which is exciting but a bit scary; "
        "we adopted a greyhound called Miso from the shelter and she loves the park; "
        "I have been painting sunsets again since the art class in May; "
        "the conference in Lisbon was great and I met a mentor there"
    )
    .replace(";", "")
    .replace(",", "")
    .split()
)


def generated_conversations(count: int, seed: int = 7) -> Conversations:
    """``count`` generated chat turns in conversations of 400, LoCoMo-like in length."""
    rng = random.Random(seed)
    start = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    out: Conversations = []
    for number in range(0, count, 400):
        messages: list[dict[str, Any]] = []
        for i in range(number, min(count, number + 400)):
            words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 40))]
            messages.append(
                {
                    "role": "user",
                    "content": " ".join(words).capitalize() + ".",
                    "id": f"G{number // 400}:{i - number + 1}",
                    "timestamp": (start + timedelta(minutes=i)).isoformat(),
                    "speaker": "Ana" if i % 2 else "Ben",
                }
            )
        out.append((f"gen-{number // 400}", messages))
    return out


def batches(conversations: Conversations, size: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Batches of ``size`` messages, never spanning two conversations."""
    for entity, messages in conversations:
        for start in range(0, len(messages), size):
            yield entity, messages[start : start + size]


def subset(conversations: Conversations, limit: int) -> Conversations:
    """The first ``limit`` turns, conversation by conversation."""
    out: Conversations = []
    left = limit
    for entity, messages in conversations:
        if left <= 0:
            break
        out.append((entity, messages[:left]))
        left -= len(messages[:left])
    return out


def count(conversations: Conversations) -> int:
    """Number of turns."""
    return sum(len(messages) for _, messages in conversations)


def texts_of(conversations: Conversations) -> list[str]:
    """The message texts, in order."""
    return [str(m["content"]) for _, messages in conversations for m in messages]


# -- a. bare embedder ---------------------------------------------------------------------


def bare_embed(texts: Sequence[str], batch: int) -> tuple[float, float, list[list[float]]]:
    """Wall and CPU seconds of ``default_embedder().embed_documents`` in calls of ``batch``.

    Also returns the vectors (the Chroma diagnostic writes them). CPU time (all threads of
    this process) is less disturbed than wall time when other processes share the CPUs.
    """
    embedder = default_embedder()
    vectors: list[list[float]] = []
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch):
        vectors += embedder.embed_documents(list(texts[start : start + batch]))
    return time.perf_counter() - started, time.process_time() - cpu, vectors


# -- diagnostic: what a Chroma write costs ----------------------------------------------


def chroma_write_variants(
    items: Sequence[MemoryItem], vectors: Sequence[Sequence[float]], batch: int = BARE_BATCH
) -> dict[str, float]:
    """Items/s of bare Chroma upserts of precomputed vectors, with and without the extras.

    ``as stored`` mirrors ``memtrellis.store.vectors.VectorIndex.upsert``: the text as the
    Chroma document and the whole item as JSON in the metadata, besides the scope fields.
    The other rows leave out the document, the item JSON, or both, and try ``add``.
    """
    import chromadb
    from chromadb.config import Settings

    from memtrellis.store.vectors import HNSW_EF_SEARCH

    def metadata(item: MemoryItem, with_item: bool) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "entity_id": item.scope.entity_id,
            "process_id": item.scope.process_id or "",
            "session_id": item.scope.session_id or "",
            "memory_type": item.memory_type.value,
            "created_at": item.created_at.timestamp(),
        }
        if with_item:
            meta["item"] = item.model_dump_json()
        return meta

    def one(documents: bool, with_item: bool, op: str) -> float:
        root = tempfile.mkdtemp(prefix="memtrellis-chroma-")
        try:
            client = chromadb.PersistentClient(root, settings=Settings(anonymized_telemetry=False))
            collection = client.get_or_create_collection(
                "ingest-diagnostic",
                configuration={
                    "hnsw": {
                        "space": "cosine",
                        "ef_search": HNSW_EF_SEARCH,
                        "ef_construction": HNSW_EF_SEARCH,
                    }
                },
                embedding_function=None,
            )
            write = getattr(collection, op)
            started = time.perf_counter()
            for start in range(0, len(items), batch):
                chunk = items[start : start + batch]
                extra: dict[str, Any] = {}
                if documents:
                    extra["documents"] = [item.text for item in chunk]
                write(
                    ids=[item.id for item in chunk],
                    embeddings=[list(v) for v in vectors[start : start + batch]],
                    metadatas=[metadata(item, with_item) for item in chunk],
                    **extra,
                )
            return len(items) / (time.perf_counter() - started)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    return {
        "upsert as stored (document + item JSON)": round(one(True, True, "upsert"), 1),
        "upsert without document": round(one(False, True, "upsert"), 1),
        "upsert without item JSON": round(one(True, False, "upsert"), 1),
        "upsert without either": round(one(False, False, "upsert"), 1),
        "add as stored": round(one(True, True, "add"), 1),
    }


# -- b. Memory.add fast -------------------------------------------------------------------


class TempStore:
    """A fresh ``Memory`` (default embedder) in a temporary directory, removed afterwards."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="memtrellis-ingest-"))
        self.memory = Memory(self.path / "store")

    def __enter__(self) -> Memory:
        return self.memory

    def __exit__(self, *exc: object) -> None:
        self.memory.close()
        shutil.rmtree(self.path, ignore_errors=True)


def fast_add(conversations: Conversations, batch: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``Memory.add(batch, mode="fast")`` over all turns, fresh store."""
    with TempStore() as memory:
        started, cpu = time.perf_counter(), time.process_time()
        stored = 0
        for entity, messages in batches(conversations, batch):
            stored += len(memory.add(messages, entity_id=entity, mode="fast"))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if stored != count(conversations):
        raise RuntimeError(f"stored {stored} memories for {count(conversations)} turns")
    return elapsed, cpu


def profile_fast_add(conversations: Conversations, batch: int, top: int = 25) -> str:
    """cProfile of :func:`fast_add`, top functions by own time and by cumulative time."""
    profiler = cProfile.Profile()
    with TempStore() as memory:
        profiler.enable()
        for entity, messages in batches(conversations, batch):
            memory.add(messages, entity_id=entity, mode="fast")
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    out.write(f"== batch {batch}, {count(conversations)} turns: by own time ==\n")
    stats.sort_stats("tottime").print_stats(top)
    out.write(f"== batch {batch}: by cumulative time ==\n")
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


# -- c. Memory.store ----------------------------------------------------------------------


def prebuilt_items(conversations: Conversations) -> list[MemoryItem]:
    """One ready-made item per turn, with the source a fast-mode memory would have."""
    items: list[MemoryItem] = []
    for entity, messages in conversations:
        for index, message in enumerate(messages):
            when = datetime.fromisoformat(str(message["timestamp"]))
            items.append(
                MemoryItem(
                    text=str(message["content"]),
                    memory_type=MemoryType.EPISODE,
                    tags=["mode:fast"],
                    sources=[
                        SourceRef(
                            kind=SourceKind.CHAT,
                            message_id=str(message["id"]),
                            role="user",
                            speaker=str(message["speaker"]),
                            content=str(message["content"]),
                            timestamp=when,
                            index=index,
                        )
                    ],
                    scope=Scope(entity_id=entity),
                    valid_from=when,
                )
            )
    return items


def store_each(items: Sequence[MemoryItem]) -> float:
    """Seconds for one ``Memory.store(item)`` call per item into a fresh store."""
    with TempStore() as memory:
        started = time.perf_counter()
        for item in items:
            memory.store(item)
        return time.perf_counter() - started


def store_batched_private(items: Sequence[MemoryItem], batch: int) -> float | None:
    """Seconds to embed and write ``items`` in batches through the private ``Store.put``.

    Stands in for a public batch store, which ``Memory`` lacks; None when the private
    method is not there any more.
    """
    with TempStore() as memory:
        put: Callable[..., None] | None = getattr(store_of(memory), "put", None)
        if put is None:
            return None
        started = time.perf_counter()
        for start in range(0, len(items), batch):
            chunk = list(items[start : start + batch])
            vectors = memory.embedder.embed_documents([item.text for item in chunk])
            put(chunk, vectors, "created")
        return time.perf_counter() - started


# -- d. capture ---------------------------------------------------------------------------


def capture_run(conversations: Conversations, captures: int) -> dict[str, float]:
    """Latency of ``Memory.capture(turn)`` (µs) and the time ``flush()`` takes to drain."""
    turns = [(entity, message) for entity, messages in conversations for message in messages][
        :captures
    ]
    with TempStore() as memory:
        latencies: list[float] = []
        started = time.perf_counter()
        for entity, message in turns:
            t0 = time.perf_counter_ns()
            memory.capture(message, entity_id=entity, mode="fast")
            latencies.append((time.perf_counter_ns() - t0) / 1000.0)
        captured = time.perf_counter()
        drained = memory.flush(timeout=600)
        flushed = time.perf_counter()
        stored = memory.health().total_memories
    return {
        "captures": len(turns),
        "capture_p50_us": round(percentile(latencies, 0.5), 1),
        "capture_p99_us": round(percentile(latencies, 0.99), 1),
        "capture_mean_us": round(statistics.fmean(latencies), 1),
        "capture_max_us": round(max(latencies), 1),
        "capture_phase_s": round(captured - started, 3),
        "flush_s": round(flushed - captured, 3),
        "drained": float(drained),
        "stored": stored,
        "end_to_end_turns_per_s": round(len(turns) / (flushed - started), 1),
    }


# -- main ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurements, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo file (default: shared)")
    parser.add_argument(
        "--generated", type=int, default=0, help="use N generated turns instead of LoCoMo"
    )
    parser.add_argument("--subset-batch1", type=int, default=300, help="turns for batch size 1")
    parser.add_argument("--store-items", type=int, default=1000, help="items for Memory.store")
    parser.add_argument("--captures", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2, help="runs per figure (best kept)")
    parser.add_argument("--no-profile", action="store_true", help="skip cProfile runs")
    parser.add_argument("--json", type=Path, default=results_dir() / "ingest.json")
    args = parser.parse_args(argv)
    code = code_version()  # what this process imported, before anyone commits more
    args.json.parent.mkdir(parents=True, exist_ok=True)

    if args.generated:
        conversations, source = generated_conversations(args.generated), "generated"
    else:
        path = data_path_or_none(args.data)
        if path is None:
            print("Falling back to 3,000 generated sentences.", file=sys.stderr)
            conversations, source = generated_conversations(3000), "generated"
        else:
            conversations = [(c.sample_id, c.messages) for c in load_locomo(path)]
            source = f"LoCoMo {path.name}"
    texts = texts_of(conversations)
    total = len(texts)
    embedder = default_embedder()
    embedder.load()
    embedder.embed_documents(texts[:64])  # warm up onnxruntime
    print(
        f"{total} turns ({source}), mean {statistics.fmean(len(t) for t in texts):.0f} chars; "
        f"embedder {embedder!r}, batch_size {embedder.batch_size}"
    )

    print(f"load average at start: {_load()}")
    wall = time.perf_counter()
    # The machine may be shared, so each fast-mode figure is paired with bare-embedder runs
    # on the same texts right before it, and every figure is the best of --rounds runs.
    vectors = bare_embed(texts, BARE_BATCH)[2]
    bare_full: list[float] = []
    rows: list[dict[str, Any]] = []
    for batch in BATCH_SIZES:
        chosen = subset(conversations, args.subset_batch1) if batch == 1 else conversations
        n = count(chosen)
        chosen_texts = texts_of(chosen)
        bare64_s: list[float] = []
        bare64_cpu: list[float] = []
        same_s: list[float] = []
        fast_s: list[float] = []
        fast_cpu: list[float] = []
        for _ in range(args.rounds):
            wall_s, cpu_s, _ = bare_embed(chosen_texts, BARE_BATCH)
            bare64_s.append(wall_s)
            bare64_cpu.append(cpu_s)
            same_s.append(bare_embed(chosen_texts, batch)[0])
            wall_s, cpu_s = fast_add(chosen, batch)
            fast_s.append(wall_s)
            fast_cpu.append(cpu_s)
        if n == total:
            bare_full += bare64_s
        rate, bare64, same = n / min(fast_s), n / min(bare64_s), n / min(same_s)
        cpu_ratio = min(bare64_cpu) / min(fast_cpu)
        rows.append(
            {
                "batch": batch,
                "turns": n,
                "seconds": round(min(fast_s), 3),
                "seconds_all_rounds": [round(x, 3) for x in fast_s],
                "turns_per_s": round(rate, 1),
                "bare_64_texts_per_s": round(bare64, 1),
                "ratio_to_bare": round(rate / bare64, 3),
                "bare_same_batch_texts_per_s": round(same, 1),
                "ratio_to_bare_same_batch": round(rate / same, 3),
                "cpu_s": round(min(fast_cpu), 3),
                "bare_64_cpu_s": round(min(bare64_cpu), 3),
                "cpu_ratio_to_bare": round(cpu_ratio, 3),
            }
        )
    if not bare_full:
        bare_full.append(bare_embed(texts, BARE_BATCH)[0])
    bare_s = min(bare_full)
    bare_rate = total / bare_s

    store_items = prebuilt_items(subset(conversations, args.store_items))
    store_s = store_each(store_items)
    batched_s = store_batched_private(store_items, BARE_BATCH)
    capture = capture_run(conversations, args.captures)
    # The machine may be shared: a second bare run shows whether its speed drifted.
    bare_end_rate = total / bare_embed(texts, BARE_BATCH)[0]
    elapsed = time.perf_counter() - wall

    print()
    print(
        f"(a) bare embedder, calls of {BARE_BATCH}, all {total} texts, best of"
        f" {len(bare_full)}: {bare_rate:,.1f} texts/s ({bare_s:.2f} s);"
        f" again at the end: {bare_end_rate:,.1f} texts/s; load average {_load()}"
    )
    print()
    print(
        f"(b) Memory.add(batch, mode='fast'), fresh store; best of {args.rounds} rounds, each"
        " beside bare-embedder runs on the same texts (x bare = turns/s over bare@64;"
        " x bare cpu = the same ratio in process CPU time, less sensitive to a shared machine)"
    )
    header = (
        f"{'batch':>6} {'turns':>6} {'s':>8} {'turns/s':>9} {'bare@64':>8} {'x bare':>7}"
        f" {'bare@batch':>11} {'x bare@batch':>13} {'x bare cpu':>11}"
    )
    print(header)
    for row in rows:
        print(
            f"{row['batch']:>6} {row['turns']:>6} {row['seconds']:>8.2f}"
            f" {row['turns_per_s']:>9.1f} {row['bare_64_texts_per_s']:>8.1f}"
            f" {row['ratio_to_bare']:>7.2f}"
            f" {row['bare_same_batch_texts_per_s']:>11.1f}"
            f" {row['ratio_to_bare_same_batch']:>13.2f} {row['cpu_ratio_to_bare']:>11.2f}"
        )
    print()
    n_items = len(store_items)
    print(f"(c) Memory.store(item), {n_items} pre-built items: {n_items / store_s:,.1f} items/s")
    if batched_s is not None:
        print(
            f"    same items, private Store.put in batches of {BARE_BATCH} "
            f"(what a batch store could reach): {n_items / batched_s:,.1f} items/s"
        )
    print()
    print(
        f"(d) Memory.capture(turn) x{capture['captures']}: p50 {capture['capture_p50_us']:.1f} µs,"
        f" p99 {capture['capture_p99_us']:.1f} µs, max {capture['capture_max_us']:.1f} µs;"
        f" capture loop {capture['capture_phase_s']:.3f} s, flush() {capture['flush_s']:.3f} s"
        f" (drained {bool(capture['drained'])}, {capture['stored']} stored,"
        f" {capture['end_to_end_turns_per_s']:.1f} turns/s end to end)"
    )
    print(f"\nmeasured in {elapsed:.1f} s")

    profiles: dict[str, str] = {}
    chroma: dict[str, float] = {}
    slow = [row for row in rows if row["ratio_to_bare"] < TARGET_RATIO]
    if slow and not args.no_profile:
        for row in slow:
            batch = int(row["batch"])
            chosen = subset(conversations, args.subset_batch1 if batch == 1 else 1000)
            text = profile_fast_add(chosen, batch)
            target = args.json.parent / f"ingest_profile_b{batch}.txt"
            target.write_text(text, encoding="utf-8")
            profiles[str(batch)] = target.name
            print(f"\nbatch {batch} is below {TARGET_RATIO}x the bare embedder; cProfile:")
            print(text)
        chroma = chroma_write_variants(prebuilt_items(conversations), vectors)
        print(f"Chroma writes of precomputed vectors, calls of {BARE_BATCH}, {total} items:")
        for name, rate in chroma.items():
            print(f"  {name:<42} {rate:>8,.1f} items/s")

    result = {
        "source": source,
        "code": code,
        "turns": total,
        "machine": {"cpus": _cpus(), "python": platform.python_version()},
        "embedder": repr(embedder),
        "bare_embedder": {
            "batch": BARE_BATCH,
            "seconds": round(bare_s, 3),
            "texts_per_s": round(bare_rate, 1),
            "texts_per_s_at_end": round(bare_end_rate, 1),
        },
        "load_average_at_end": _load(),
        "fast_add": rows,
        "store": {
            "items": n_items,
            "items_per_s": round(n_items / store_s, 1),
            "private_batch_put_items_per_s": (
                round(n_items / batched_s, 1) if batched_s is not None else None
            ),
        },
        "capture": capture,
        "target_ratio": TARGET_RATIO,
        "profiles": profiles,
        "chroma_write_items_per_s": chroma,
        "elapsed_s": round(elapsed, 1),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 0


if __name__ == "__main__":
    sys.exit(main())
