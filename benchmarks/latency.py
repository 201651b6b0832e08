"""Recall latency at 1k, 10k and 100k memories per store, beside a bare Chroma query.

    . /tmp/dev/bin/activate            # or: pip install -e ".[bench]"
    python benchmarks/latency.py                          # sizes 1000,10000,100000
    python benchmarks/latency.py --sizes 1000,10000 --queries 100

One store grows through the sizes. It holds synthetic chat memories (``_synth.py``:
people, places, pets, jobs, dates, preferences, events; 8-30 words a message, about
11k distinct terms at 100k) of ``--entities`` users, stored with ``Memory.add(...,
mode="fast")`` one session per call, the session's people and places passed as its
``entities`` (``--no-entity-tags`` leaves them out). One user (the "heavy" one) holds
``--heavy-share`` of the memories, the others share the rest; latency is measured for the
heavy user (the worst case) and for a typical one.

The corpus is embedded once with the default embedder (all-MiniLM-L6-v2 int8 ONNX) and
the vectors are kept in a cache file under ``--cache-dir``, so stores are built through
the library (``Memory(embedder=CachedEmbedder)``) without embedding twice. Timings are
taken in a fresh process per size that opens the store with the plain default embedder,
so every query is embedded for real and the process's memory is the library's own:

* ``graph on`` / ``graph off``: ``Memory.recall(question, k=10, graph_context=...)`` end
  to end, query embedding included;
* ``bare``: ``embed_query`` + ``collection.query(n_results=10)`` on the same entity's
  Chroma collection in the same process (the floor of any Chroma-backed recall);

interleaved per query (rotating order), ``--rounds`` times over ``--queries`` questions
phrased from stored facts ("Where did Ines move to?"). Also measured: the time to open
the store (``Memory(...)``) and the first recall after it, the same after close and
reopen, current and peak RSS of that process, a per-stage breakdown (embedding, dense
fetch, BM25, fusion and graph) and, at the largest size, a cProfile of recall saved to
``benchmarks/results/latency_profile.txt``. Figures go to
``benchmarks/results/latency.json`` and ``latency.png``.

Targets (issue 4, 2 cores): at 100k, recall p99 <= 30 ms and p50 <= 2x the bare p50;
peak RSS <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _locomo import percentile, results_dir
from _synth import Message, UserStream, corpus_vocabulary

from memtrellis.testing import store_of

TARGET_P99_MS = 30.0
TARGET_RATIO = 2.0
TARGET_RSS_MB = 1536.0
EMBED_CHUNK = 512


# -- the embedding cache -------------------------------------------------------------------
class CachedEmbedder:
    """An :class:`~memtrellis.embeddings.Embedder` that serves stored texts from a cache.

    ``embed_documents`` looks each text up in the cache (a float32 matrix and a dict from
    text to row) and embeds only misses with the wrapped embedder; ``embed_query`` always
    embeds for real. It reports the wrapped embedder's ``model_id``, so a store built with
    it opens with the plain default embedder.
    """

    def __init__(self, inner: Any, texts: Sequence[str], matrix: np.ndarray) -> None:
        self.inner = inner
        self.rows = {text: row for row, text in enumerate(texts)}
        self.matrix = matrix
        self.misses = 0

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        missing = sorted({t for t in texts if t not in self.rows})
        if missing:
            self.misses += len(missing)
            fresh = np.asarray(self.inner.embed_documents(missing), dtype=np.float32)
            start = len(self.matrix)
            self.matrix = np.vstack([self.matrix, fresh])
            self.rows.update({t: start + i for i, t in enumerate(missing)})
        vectors: list[list[float]] = self.matrix[[self.rows[t] for t in texts]].tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        vector: list[float] = self.inner.embed_query(text)
        return vector


def load_or_embed(
    texts: list[str], cache_dir: Path, inner: Any
) -> tuple[np.ndarray, dict[str, Any]]:
    """Vectors of ``texts`` (rows in order), embedding what the cache file lacks."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache = cache_dir / f"{inner.model_id}.npz"
    known: dict[str, np.ndarray] = {}
    if cache.is_file():
        with np.load(cache, allow_pickle=False) as data:
            known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
    missing = [t for t in texts if t not in known]
    info: dict[str, Any] = {"texts": len(texts), "from_cache": len(texts) - len(missing)}
    if missing:
        print(f"embedding {len(missing)} texts with {inner.model_id} (once; cached in {cache})")
        started = time.perf_counter()
        for start in range(0, len(missing), EMBED_CHUNK):
            chunk = missing[start : start + EMBED_CHUNK]
            for text, vector in zip(chunk, inner.encode(chunk), strict=True):
                known[text] = vector
            done = start + len(chunk)
            if done % (EMBED_CHUNK * 20) < EMBED_CHUNK or done == len(missing):
                rate = done / (time.perf_counter() - started)
                print(f"  {done}/{len(missing)} embedded, {rate:.0f} texts/s", flush=True)
        seconds = time.perf_counter() - started
        info.update(embedded=len(missing), seconds=round(seconds, 1))
        info["texts_per_s"] = round(len(missing) / seconds, 1)
        np.savez(
            cache,
            texts=np.array(list(known), dtype=np.str_),
            vectors=np.stack(list(known.values())).astype(np.float32),
        )
    matrix = np.stack([known[t] for t in texts]).astype(np.float32)
    return matrix, info


# -- plan ------------------------------------------------------------------------------------
def per_entity(size: int, entities: int, heavy_share: float) -> dict[str, int]:
    """How many memories each user holds in a store of ``size``."""
    heavy = round(size * heavy_share) if entities > 1 else size
    rest = size - heavy
    counts = {"user-00": heavy}
    for number in range(1, entities):
        counts[f"user-{number:02d}"] = rest // (entities - 1) + (
            1 if number <= rest % (entities - 1) else 0
        )
    return counts


def sessions(messages: Sequence[Message]) -> list[list[Message]]:
    """Consecutive messages grouped by session."""
    groups: list[list[Message]] = []
    for message in messages:
        if groups and groups[-1][-1].session == message.session:
            groups[-1].append(message)
        else:
            groups.append([message])
    return groups


def pick_questions(messages: Sequence[Message], count: int, seed: int) -> list[dict[str, str]]:
    """``count`` questions (with the id of the message they come from), cycled if short."""
    pool = [{"question": m.question, "source": m.id} for m in messages if m.question]
    random.Random(seed).shuffle(pool)
    return [pool[i % len(pool)] for i in range(count)] if pool else []


def build(
    store: Path,
    streams: dict[str, list[Message]],
    start: dict[str, int],
    stop: dict[str, int],
    embedder: CachedEmbedder,
    entity_tags: bool,
) -> float:
    """Add each user's messages ``start[u]:stop[u]`` to the store, one session per call."""
    from memtrellis import Memory

    started = time.perf_counter()
    added = 0
    with Memory(store, embedder=embedder) as memory:
        for user, messages in streams.items():
            for group in sessions(messages[start.get(user, 0) : stop[user]]):
                memory.add(
                    [m.as_dict() for m in group],
                    entity_id=user,
                    entities=list(group[0].entities) if entity_tags else (),
                    mode="fast",
                )
                added += len(group)
                if added % 20_000 < len(group):
                    print(f"  stored {added} memories", flush=True)
    return time.perf_counter() - started


# -- measuring (in a fresh process per size) -------------------------------------------------
def rss_mb() -> float:
    """Current resident set size of this process, in MB."""
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB.

    Read from ``VmHWM`` in ``/proc/self/status``: ``ru_maxrss`` would not do for the
    measuring process, as Linux carries it over ``exec`` from the parent that spawned it.
    """
    try:
        with Path("/proc/self/status").open(encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stats(values: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean/max of millisecond samples, rounded to microseconds."""
    return {
        "p50": round(percentile(values, 0.50), 3),
        "p95": round(percentile(values, 0.95), 3),
        "p99": round(percentile(values, 0.99), 3),
        "mean": round(sum(values) / len(values), 3),
        "max": round(max(values), 3),
        "n": len(values),
    }


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter_ns()
    result = call()
    return (time.perf_counter_ns() - started) / 1e6, result


def measure_entity(
    memory: Any, user: str, queries: list[dict[str, str]], rounds: int
) -> dict[str, Any]:
    """Interleaved ours (graph on/off) and bare embed-and-query timings for one user."""
    from memtrellis.store import collection_name

    embedder = memory.embedder
    collection = store_of(memory).vectors._client.get_collection(
        collection_name(user), embedding_function=None
    )
    graph = store_of(memory).graph_of(user)

    def ours(question: str, graph_context: bool) -> list[str]:
        result = memory.recall(question, entity_id=user, k=10, graph_context=graph_context)
        return [r.memory.sources[0].message_id for r in result.items]

    def bare(question: str) -> list[str]:
        vector = embedder.embed_query(question)
        found = collection.query(query_embeddings=[vector], n_results=10, include=["distances"])
        return list(found["ids"][0])

    def source_of(memory_id: str) -> str | None:
        item = graph.item(memory_id)
        return item.sources[0].message_id if item is not None and item.sources else None

    modes: dict[str, Callable[[str], list[str]]] = {
        "graph_on": lambda q: ours(q, True),
        "graph_off": lambda q: ours(q, False),
        "bare": bare,
    }
    for query in queries[:10]:  # warm-up: first queries of each path, not counted
        for call in modes.values():
            call(query["question"])
    samples: dict[str, list[float]] = {name: [] for name in modes}
    hits: dict[str, int] = dict.fromkeys(modes, 0)
    names = list(modes)
    for round_number in range(rounds):
        for index, query in enumerate(queries):
            shift = (index + round_number) % len(names)
            for name in names[shift:] + names[:shift]:
                ms, found = timed(partial(modes[name], query["question"]))
                samples[name].append(ms)
                if round_number == 0:
                    ids = found if name != "bare" else [source_of(i) for i in found]
                    hits[name] += query["source"] in ids
    # The bare path split into its two halves (measured apart, after the interleaved runs).
    embed_ms: list[float] = []
    query_ms: list[float] = []
    for query in queries:
        ms, vector = timed(partial(embedder.embed_query, query["question"]))
        embed_ms.append(ms)
        ms, _ = timed(
            partial(
                collection.query, query_embeddings=[vector], n_results=10, include=["distances"]
            )
        )
        query_ms.append(ms)
    out: dict[str, Any] = {
        "entity_id": user,
        "memories": int(collection.count()),
        "queries": len(queries),
        "rounds": rounds,
    }
    for name in names:
        out[name] = stats(samples[name])
        out[name]["hit_at_10"] = round(hits[name] / len(queries), 3)
    out["bare_embed_query"] = stats(embed_ms)
    out["bare_chroma_query"] = stats(query_ms)
    out["ratio_p50_graph_on_to_bare"] = round(out["graph_on"]["p50"] / out["bare"]["p50"], 2)
    out["ratio_p50_graph_off_to_bare"] = round(out["graph_off"]["p50"] / out["bare"]["p50"], 2)
    return out


def stage_breakdown(memory: Any, user: str, queries: list[dict[str, str]]) -> dict[str, Any]:
    """Where one recall's time goes: each stage timed on its own, p50/p99 in ms."""
    from memtrellis.recall import RecallRequest, hybrid_recall
    from memtrellis.recall.hybrid import _MIN_FETCH
    from memtrellis.types import utcnow

    store = store_of(memory)
    parts: dict[str, list[float]] = {
        "embed_query": [],
        "dense_fetch_100": [],
        "bm25_search_200": [],
        "hybrid_recall_graph_on": [],
        "hybrid_recall_graph_off": [],
        "touch": [],
    }
    fetch = max(10 * 4, _MIN_FETCH)
    for query in queries:
        text = query["question"]
        ms, vector = timed(partial(memory.embedder.embed_query, text))
        parts["embed_query"].append(ms)
        ms, _ = timed(partial(store.vectors.query, user, vector, fetch))
        parts["dense_fetch_100"].append(ms)
        with store.reading(user) as shard:  # the shard's own keyword index
            ms, _ = timed(partial(shard.keywords.search, user, text, fetch * 2))
        parts["bm25_search_200"].append(ms)
        for flag in (True, False):
            request = RecallRequest(
                query=text,
                embedding=vector,
                entity_id=user,
                process_id=None,
                session_id=None,
                k=10,
                token_budget=None,
                include_superseded=False,
                include_expired=False,
                now=utcnow(),
                graph_context=flag,
            )
            ms, (items, _, _, _) = timed(partial(hybrid_recall, store, request))
            parts["hybrid_recall_graph_on" if flag else "hybrid_recall_graph_off"].append(ms)
        ids = [r.memory.id for r in items]
        ms, _ = timed(partial(store.touch, user, ids, utcnow()))
        parts["touch"].append(ms)
    return {name: stats(values) for name, values in parts.items()}


def profile_recall(memory: Any, user: str, queries: list[dict[str, str]], path: Path) -> str:
    """cProfile of ``Memory.recall`` (graph on) over the queries; the report is saved."""
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries:
        memory.recall(query["question"], entity_id=user, k=10)
    profiler.disable()
    text = io.StringIO()
    text.write(
        f"cProfile of {len(queries)} Memory.recall(graph_context=True) calls, {user}, in a "
        f"store of {memory.health().total_memories:,} memories\n"
    )
    for order in ("tottime", "cumulative"):
        text.write(f"\n=== sorted by {order} (per call = per function call) ===\n")
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(30)
    path.write_text(text.getvalue())
    return text.getvalue()


def worker(plan_path: Path) -> None:
    """Open the store, measure, print one JSON line (run as a separate process)."""
    plan = json.loads(plan_path.read_text())
    store = Path(plan["store"])
    started = time.perf_counter()
    from memtrellis import Memory
    from memtrellis.embeddings import default_embedder

    embedder = default_embedder()
    embedder.load()
    embedder.embed_query("warm up the model")
    import_and_load_s = time.perf_counter() - started
    rss_before_open = rss_mb()

    heavy, typical = plan["heavy"], plan["typical"]
    first_question = plan["queries"][heavy][0]["question"]
    open_s, memory = timed(lambda: Memory(store, embedder=embedder, drain_timeout=5))
    first_ms, _ = timed(lambda: memory.recall(first_question, entity_id=heavy, k=10))
    rss_after_open = rss_mb()
    figures: dict[str, Any] = {
        "import_and_model_load_s": round(import_and_load_s, 3),
        "open_s": round(open_s / 1000, 3),
        "first_recall_ms": round(first_ms, 3),
        "rss_before_open_mb": round(rss_before_open, 1),
        "rss_after_open_mb": round(rss_after_open, 1),
    }
    gc.collect()
    figures["heavy"] = measure_entity(memory, heavy, plan["queries"][heavy], plan["rounds"])
    figures["typical"] = measure_entity(memory, typical, plan["queries"][typical], plan["rounds"])
    figures["stages_heavy"] = stage_breakdown(memory, heavy, plan["queries"][heavy])
    if plan.get("profile"):
        profile_recall(memory, heavy, plan["queries"][heavy][:100], Path(plan["profile"]))
    figures["rss_after_queries_mb"] = round(rss_mb(), 1)
    figures["peak_rss_before_close_mb"] = round(peak_rss_mb(), 1)
    close_ms, _ = timed(memory.close)
    figures["close_s"] = round(close_ms / 1000, 3)
    # Close and reopen in the same process: what an app restart pays for the store alone.
    # The first Memory is dropped first, so that two stores are never held at once. The
    # reopened store replays the recall counts logged by the first session, so its close
    # writes a new graph snapshot: that close is part of the peak.
    del memory
    gc.collect()
    figures["rss_after_close_mb"] = round(rss_mb(), 1)
    reopen_s, memory = timed(lambda: Memory(store, embedder=embedder, drain_timeout=5))
    reopen_first_ms, _ = timed(lambda: memory.recall(first_question, entity_id=heavy, k=10))
    figures["peak_rss_before_second_close_mb"] = round(peak_rss_mb(), 1)
    second_close_ms, _ = timed(memory.close)
    figures["reopen_s"] = round(reopen_s / 1000, 3)
    figures["reopen_first_recall_ms"] = round(reopen_first_ms, 3)
    figures["second_close_s"] = round(second_close_ms / 1000, 3)
    figures["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print("RESULT " + json.dumps(figures))


# -- reporting -------------------------------------------------------------------------------
def row(name: str, s: dict[str, float]) -> str:
    return f"  {name:<22} p50 {s['p50']:7.2f}  p95 {s['p95']:7.2f}  p99 {s['p99']:7.2f} ms"


def print_size(size: int, figures: dict[str, Any]) -> None:
    print(f"\n== {size:,} memories in the store ==")
    print(
        f"  open {figures['open_s']:.2f} s, first recall {figures['first_recall_ms']:.1f} ms; "
        f"reopen {figures['reopen_s']:.2f} s, first recall {figures['reopen_first_recall_ms']:.1f}"
        f" ms; close {figures['close_s']:.2f} s, close after reopen "
        f"{figures['second_close_s']:.2f} s"
    )
    print(
        f"  RSS after open {figures['rss_after_open_mb']:.0f} MB, after the queries "
        f"{figures['rss_after_queries_mb']:.0f} MB; peak before close "
        f"{figures['peak_rss_before_close_mb']:.0f} MB, peak over open/recall/close/reopen/"
        f"close {figures['peak_rss_mb']:.0f} MB"
    )
    for which in ("heavy", "typical"):
        entity = figures[which]
        print(f"  {which} user {entity['entity_id']}: {entity['memories']:,} memories")
        for name in ("graph_on", "graph_off", "bare", "bare_embed_query", "bare_chroma_query"):
            print(row(name, entity[name]))
        print(
            f"  p50 ratio to bare: graph on {entity['ratio_p50_graph_on_to_bare']}x, "
            f"graph off {entity['ratio_p50_graph_off_to_bare']}x; hit@10 (source message in "
            f"top 10): on {entity['graph_on']['hit_at_10']}, off "
            f"{entity['graph_off']['hit_at_10']}, bare {entity['bare']['hit_at_10']}"
        )
    print("  stages (heavy user, each timed alone):")
    for name, s in figures["stages_heavy"].items():
        print(row(name, s))


def plot(sizes: list[dict[str, Any]], path: Path, heavy_share: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=120)
    xs = [s["memories"] for s in sizes]
    styles = {
        "graph_on": ("memtrellis recall, graph on", "tab:blue"),
        "graph_off": ("memtrellis recall, graph off", "tab:green"),
        "bare": ("bare Chroma embed + query", "tab:gray"),
    }
    for key, (label, colour) in styles.items():
        p50 = [s["heavy"][key]["p50"] for s in sizes]
        p99 = [s["heavy"][key]["p99"] for s in sizes]
        ax.plot(xs, p50, "o-", color=colour, label=f"{label} p50")
        ax.plot(xs, p99, "s--", color=colour, alpha=0.7, label=f"{label} p99")
    ax.plot(
        xs,
        [TARGET_RATIO * s["heavy"]["bare"]["p50"] for s in sizes],
        ":",
        color="black",
        alpha=0.6,
        label="target p50: 2 x bare p50",
    )
    ax.axhline(TARGET_P99_MS, color="tab:red", linestyle=":", label="target p99 30 ms")
    ax.set_xscale("log")
    ax.set_xticks(xs, [f"{x:,}" for x in xs])
    ax.set_xlabel(f"memories in the store (the measured user holds {heavy_share:.0%})")
    ax.set_ylabel("latency per recall, ms (query embedding included)")
    ax.set_title("Recall latency at scale (k=10, MiniLM int8, 2 cores)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def targets(largest: dict[str, Any]) -> dict[str, Any]:
    heavy = largest["heavy"]
    checks = {
        "p99_graph_on_ms": (heavy["graph_on"]["p99"], TARGET_P99_MS),
        "p99_graph_off_ms": (heavy["graph_off"]["p99"], TARGET_P99_MS),
        "p50_ratio_graph_on": (heavy["ratio_p50_graph_on_to_bare"], TARGET_RATIO),
        "p50_ratio_graph_off": (heavy["ratio_p50_graph_off_to_bare"], TARGET_RATIO),
        "peak_rss_mb": (largest["peak_rss_mb"], TARGET_RSS_MB),
    }
    return {
        name: {"value": value, "target_at_most": limit, "met": value <= limit}
        for name, (value, limit) in checks.items()
    }


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="store sizes, ascending")
    parser.add_argument("--entities", type=int, default=10, help="users per store")
    parser.add_argument("--heavy-share", type=float, default=0.5, help="share of user-00")
    parser.add_argument("--queries", type=int, default=200, help="questions per user")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-entity-tags", dest="entity_tags", action="store_false")
    parser.add_argument("--store", type=Path, help="store directory (default: temporary)")
    parser.add_argument("--keep-store", action="store_true")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memtrellis-bench",
        help="where the corpus vectors are cached between runs",
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON path")
    parser.add_argument("--replot", action="store_true", help="redraw the PNG from the JSON")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if args.replot:
        out = args.out or results_dir() / "latency.json"
        saved = json.loads(out.read_text())
        plot(saved["sizes"], out.with_suffix(".png"), saved["heavy_share"])
        return

    began = time.perf_counter()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    plans = {size: per_entity(size, args.entities, args.heavy_share) for size in sizes}
    users = list(plans[sizes[-1]])
    heavy, typical = users[0], users[-1] if len(users) > 1 else users[0]
    print(f"load average at start: {load_average()} ({os.cpu_count()} CPUs)")

    streams = {u: UserStream(u, seed=args.seed).take(plans[sizes[-1]][u]) for u in users}
    latest = max(ms[-1].timestamp for ms in streams.values() if ms)
    if latest > datetime.now(timezone.utc):
        sys.exit(f"the corpus runs to {latest:%Y-%m-%d}, in the future: recall would skip it")
    texts = list(dict.fromkeys(m.text for ms in streams.values() for m in ms))
    corpus: dict[str, Any] = dict(
        corpus_vocabulary([m.text for ms in streams.values() for m in ms])
    )
    corpus["messages"] = sum(len(ms) for ms in streams.values())
    corpus["unique_texts"] = len(texts)
    words = [len(m.text.split()) for ms in streams.values() for m in ms]
    corpus["words_per_message_mean"] = round(sum(words) / len(words), 1)
    print(f"corpus: {corpus}")

    from memtrellis.embeddings import default_embedder

    inner = default_embedder()
    matrix, embedding_info = load_or_embed(texts, args.cache_dir, inner)
    cached = CachedEmbedder(inner, texts, matrix)

    # Questions come from the part of each user's stream present at the smallest size, so
    # every size is asked the same questions.
    smallest = plans[sizes[0]]
    queries = {
        u: pick_questions(streams[u][: smallest[u]], args.queries, args.seed)
        for u in (heavy, typical)
    }

    out = args.out or results_dir() / "latency.json"
    profile_path = out.with_name(f"{out.stem}_profile.txt")
    store = args.store or Path(tempfile.mkdtemp(prefix="memtrellis-latency-"))
    if store.exists() and any(store.iterdir()) and args.store is not None:
        sys.exit(f"{store} is not empty; pass an empty or new directory")
    results: list[dict[str, Any]] = []
    done: dict[str, int] = {}
    try:
        for size in sizes:
            print(f"\nbuilding the store up to {size:,} memories ({load_average()})", flush=True)
            build_s = build(store, streams, done, plans[size], cached, args.entity_tags)
            done = dict(plans[size])
            plan_path = store.parent / f"{store.name}-plan.json"
            plan_path.write_text(
                json.dumps(
                    {
                        "store": str(store),
                        "heavy": heavy,
                        "typical": typical,
                        "queries": queries,
                        "rounds": args.rounds,
                        "profile": str(profile_path) if size == sizes[-1] else None,
                    }
                )
            )
            print(f"  built in {build_s:.1f} s; measuring in a fresh process", flush=True)
            started = time.perf_counter()
            run = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--worker", str(plan_path)],
                capture_output=True,
                text=True,
                check=False,
            )
            plan_path.unlink(missing_ok=True)
            lines = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")]
            if run.returncode != 0 or not lines:
                sys.exit(f"the measuring process failed:\n{run.stdout}\n{run.stderr}")
            figures = json.loads(lines[-1].removeprefix("RESULT "))
            figures.update(
                memories=size,
                per_entity=plans[size],
                build_s=round(build_s, 1),
                measure_s=round(time.perf_counter() - started, 1),
                load_average=load_average(),
            )
            results.append(figures)
            print_size(size, figures)
    finally:
        if not args.keep_store:
            shutil.rmtree(store, ignore_errors=True)
        else:
            print(f"store kept at {store}")

    largest = results[-1]
    checks = targets(largest) if largest["memories"] >= 100_000 else {}
    for name, check in checks.items():
        verdict = "met" if check["met"] else "MISSED"
        print(f"target {name}: {check['value']} (at most {check['target_at_most']}) {verdict}")
    if checks and not all(c["met"] for c in checks.values()):
        print(f"\nprofile of recall at {largest['memories']:,}: {profile_path}")
        print("\n".join(profile_path.read_text().splitlines()[:60]))

    document = {
        "benchmark": "recall latency at scale (benchmarks/latency.py)",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_end": load_average(),
        },
        "embedder": inner.model_id,
        "entities": args.entities,
        "heavy_share": args.heavy_share,
        "entity_tags": args.entity_tags,
        "seed": args.seed,
        "corpus": corpus,
        "embedding": embedding_info,
        "builder_peak_rss_mb": round(peak_rss_mb(), 1),
        "cache_misses_while_building": cached.misses,
        "sizes": results,
        "targets_at_100k": checks,
        "runtime_s": round(time.perf_counter() - began, 1),
    }
    out.write_text(json.dumps(document, indent=2) + "\n")
    png = out.with_suffix(".png")
    plot(results, png, args.heavy_share)
    print(f"\nwrote {out} and {png} in {document['runtime_s']:.0f} s")


if __name__ == "__main__":
    main()
