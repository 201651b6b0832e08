"""Serving one entity costs the same however many memories the other entities hold.

    . /tmp/dev/bin/activate            # or: pip install -e ".[bench]"
    python benchmarks/scale.py                                  # 10k, 100k, 1M
    python benchmarks/scale.py --quick                          # 10k, 50k
    python benchmarks/scale.py --sizes 10000,100000 --cache ~/.cache/mt-scale \\
        --json benchmarks/results/scale.json --plot benchmarks/results/scale.png
    python benchmarks/scale.py --postgres                       # PostgreSQL mode, 10k, 100k
    python benchmarks/scale.py --postgres-url postgresql://... --chroma-url http://...:8000

**The stores.** A store of N memories holds N / ``--per-entity`` entities (500 by default:
2,000 entities at 1M) named ``user-0000``, ``user-0001``, ... Each entity's memories are
the first ``--per-entity`` messages of its deterministic synthetic chat stream
(``_synth.py``: personas, people, places, pets, jobs, dates, 8-30 words a message, a
vocabulary of some 20k words with a Zipf tail, so BM25 sees realistic postings), in
fast mode (one memory per message, ``follows`` edges within a conversation, each
session's people and places as the memories' ``entities``). The served entity is
``user-0000``: the same 500 memories in every store, only the others grow.

Every store uses a fixed 384-d :class:`~memtrellis.testing.HashingEmbedder` (the
dimension of MiniLM, about 0.2 ms a text), so that the store alone is measured.
**How the big store is built:** one bulk write per entity, with vectors computed ahead.
``--build-workers`` helper processes (1 by default) generate each entity's messages,
run fast-mode extraction on the whole conversation and embed all its texts, a few
entities ahead of the writer; the writer stores each entity with one ``Store.put`` (one
log append, one Chroma upsert: :func:`write_entity`) instead of 500 ``add`` calls.
``--builder add`` uses the public ``Memory.add(conversation, mode="fast")`` instead (one
call per entity, no per-session entity tags, nothing computed ahead). Sizes are
built in increasing order, and a store whose size is a multiple of ``--per-entity``
is copied to start the next size, which then only writes the entities it lacks. Built
stores are kept under ``--cache DIR`` (default: a temporary directory removed at the
end) with a ``<store>.json`` note of how they were built, so reruns skip the build (the
name holds the store's schema version: a new layout builds anew);
rows that write to a cached store delete what they wrote afterwards (not timed).

**The rows.** Each size is measured in a fresh process (so RSS and open time are those
of a process that never saw the store), through the public ``Memory`` API only:

* ``open``: ``Memory(path, embedder=HashingEmbedder(384))``; RSS (psutil) right after.
  What any process pays once whatever its store (importing memtrellis and chromadb,
  loading the tiktoken encoding recall counts with: about 1-2 s) is paid before and
  reported apart as ``imports_s``;
* ``first recall``: the first ``recall`` after open (a lazily loaded shard shows here);
* ``recall`` p50/p99 of ``--queries`` questions phrased from the served entity's facts,
  with the share whose source message is in the top 10 (a check that recall works);
* ``add`` p50/p99 of ``--adds`` single messages for the served entity (``mode="fast"``);
* ``--warmup`` recalls and adds (10) before those, timed apart (``*_warmup_p50_ms``): the
  first calls after a bulk build pay for what the build left behind (a Chroma server and
  PostgreSQL still settling, caches filling; up to 3x the later adds in PostgreSQL mode),
  which is not the cost of serving;
* ``capture (hash)``: ``--store-capture`` turns of a scratch entity ``capture``-d then
  ``flush``-ed, turns/s;
* ``close``: ``Memory.close()``.

Then one more fresh process measures the sustained background capture rate with the
default MiniLM embedder (``Memory(path)``, no embedder argument) into a new store:
``--capture-turns`` turns (one message each, as LoCoMo and ``ingest.py`` count them) of
10 entities captured, then ``flush()``; turns/s from the first capture to the end of the
flush (the model is loaded first).

Targets (issue 16, each largest-size figure against the smallest size of the same run;
1M against 10k by default): open <= 1 s; RSS <= 1.3x; add p50 <= 1.3x and <= 30 ms;
recall p50 <= 1.2x; close <= 1 s; capture with MiniLM >= 100 turns/s.

**PostgreSQL mode.** ``--postgres`` starts a scratch PostgreSQL (the ``pgserver`` wheel, in a
temporary directory) and a ``chroma run`` server on a free loopback port (its data in a
temporary directory), and stops and removes both at the end; ``--postgres-url URL
--chroma-url URL`` use given servers instead (``--chroma-url`` alone: the Chroma server
mode). Every ``Memory(...)`` of the run gets them. Sizes default to 10k and 100k; entity ids
carry the size (``n10000-user-0000``) so that sizes share no collection nor shard: the big
store is built into the servers by the same builder, and a size's row runs while the
servers also hold the smaller sizes' entities. A ``--cache`` (given servers only) is
trusted to still match the servers. After each build the database settles (``VACUUM
ANALYZE``, ``CHECKPOINT``), so that the bulk load's own maintenance does not run during the
measured calls. The rows measure the same figures, plus the delay from
a commit in one process to its visibility in another (``--visibility-writes`` writes, two
OS processes with directories of their own, one clock: ``_scale_servers.py``). The MiniLM
capture row is not run in this mode (one database holds one embedder).

Modules: ``_scale_build.py`` builds and caches the stores and runs the child processes,
``_scale_servers.py`` starts the scratch servers and times visibility, this file measures
and reports.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from _locomo import code_version, percentile
from _scale_build import (
    DIMENSION,
    RESULT,
    build_child,
    ensure_store,
    entity_name,
    entity_sizes,
    open_memory,
    peak_rss_mb,
    run_child,
    spec_base,
)
from _scale_interleave import interleave_child
from _scale_servers import scratch_servers, settle, visibility_child, watch_child
from _synth import UserStream

SERVED = 0
STORE_CAPTURE_ENTITY = "bench-capture"
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (10_000, 50_000)
PG_SIZES = (10_000, 100_000)
#: (figure, label, kind, bound): "abs" is an upper bound at the largest size, "ratio"
#: an upper bound of largest / smallest.
TARGETS = (
    ("open_s", "open", "abs", 1.0),
    ("rss_mb", "RSS", "ratio", 1.3),
    ("add_p50_ms", "add p50", "ratio", 1.3),
    ("add_p50_ms", "add p50", "abs", 30.0),
    ("recall_p50_ms", "recall p50", "ratio", 1.2),
    ("close_s", "close", "abs", 1.0),
)
CAPTURE_TARGET = 100.0
#: The figures each row is compared on with the smallest size (visible_*: PostgreSQL mode).
RATIO_FIGURES = ("open_s", "rss_mb", "add_p50_ms", "recall_p50_ms", "close_s", "visible_p50_ms")
#: What the JSON says of the run's options (not the PostgreSQL URL: it may hold a password).
SETTINGS = (
    "per_entity",
    "adds",
    "warmup",
    "queries",
    "store_capture",
    "capture_turns",
    "builder",
    "seed",
    "chroma_url",
    "visibility_writes",
    "poll_ms",
)


# -- measuring -----------------------------------------------------------------------------
def rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def summary(values: list[float], name: str) -> dict[str, float]:
    return {
        f"{name}_p50_ms": round(percentile(values, 0.5), 2),
        f"{name}_p99_ms": round(percentile(values, 0.99), 2),
    }


def turns_of(entities: list[str], count: int, seed: int) -> list[tuple[str, Any]]:
    """``count`` turns of one message each (as LoCoMo and ``ingest.py`` count turns), round
    robin over ``entities``."""
    streams = {e: UserStream(e, seed=seed).take(count // len(entities) + 1) for e in entities}
    return [
        (entities[n % len(entities)], streams[entities[n % len(entities)]][n // len(entities)])
        for n in range(count)
    ]


def capture_rate(memory: Any, turns: list[tuple[str, Any]]) -> dict[str, Any]:
    """Capture every turn, then flush: turns/s from the first capture to the end of the flush."""
    started = time.perf_counter()
    for entity, message in turns:
        memory.capture(message.as_dict(), entity_id=entity, mode="fast")
    queued = time.perf_counter()
    drained = memory.flush(timeout=600)
    seconds = time.perf_counter() - started
    return {
        "turns": len(turns),
        "capture_loop_s": round(queued - started, 3),
        "seconds": round(seconds, 3),
        "turns_per_s": round(len(turns) / seconds, 1),
        "drained": drained,
    }


def measure_child(spec: dict[str, Any]) -> dict[str, Any]:
    """One row: open, recall, add, capture and close on one store, in this fresh process."""
    warming = time.perf_counter()
    import chromadb  # noqa: F401  (what every process pays once is not the store's cost)

    from memtrellis.tokens import get_encoding

    get_encoding()
    warm_s = time.perf_counter() - warming
    namespace = spec["namespace"]
    served = entity_name(SERVED, namespace)
    stream = UserStream(served.removeprefix(namespace), seed=spec["seed"])
    warmup = spec.get("warmup", 0)
    messages = stream.take(spec["per_entity"] + warmup + spec["adds"])
    asked = [m for m in messages[: spec["per_entity"]] if m.question]
    queries = [asked[i % len(asked)] for i in range(spec["queries"])] if asked else []
    before = rss_mb()
    started = time.perf_counter()
    memory = open_memory(spec["path"], spec)
    row: dict[str, Any] = {"open_s": round(time.perf_counter() - started, 3)}
    row["imports_s"] = round(warm_s, 3)
    row.update(rss_before_open_mb=round(before, 1), rss_mb=round(rss_mb(), 1))
    try:
        first = time.perf_counter()
        memory.recall("What did I do last weekend?", entity_id=served)
        row["first_recall_ms"] = round((time.perf_counter() - first) * 1000, 2)
        # The first calls after a bulk build pay for what the build left (Chroma and
        # PostgreSQL settling, caches filling): timed apart, so that the p50s are the
        # steady state of serving and the warm-up is still reported.
        warming_up = []
        for message in queries[:warmup]:
            t0 = time.perf_counter()
            memory.recall(message.question, entity_id=served, k=10)
            warming_up.append((time.perf_counter() - t0) * 1000)
        if warming_up:
            row["recall_warmup_p50_ms"] = round(percentile(warming_up, 0.5), 2)
        latencies, hits = [], 0
        for message in queries:
            t0 = time.perf_counter()
            result = memory.recall(message.question, entity_id=served, k=10)
            latencies.append((time.perf_counter() - t0) * 1000)
            hits += any(
                m.sources and m.sources[0].message_id == message.id for m in result.memories
            )
        row.update(summary(latencies, "recall"))
        row["recall_hit_at_10"] = round(hits / len(queries), 3) if queries else None
        latencies, added = [], []
        for message in messages[spec["per_entity"] :]:
            t0 = time.perf_counter()
            items = memory.add(message.as_dict(), entity_id=served, mode="fast")
            latencies.append((time.perf_counter() - t0) * 1000)
            added.extend(item.id for item in items)
        if warmup:
            row["add_warmup_p50_ms"] = round(percentile(latencies[:warmup], 0.5), 2)
        row.update(summary(latencies[warmup:], "add"))
        if spec["store_capture"]:
            entity = f"{namespace}{STORE_CAPTURE_ENTITY}"
            turns = turns_of([entity], spec["store_capture"], spec["seed"])
            row["capture_hash"] = capture_rate(memory, turns)
        row["rss_end_mb"] = round(rss_mb(), 1)
    finally:
        closing = time.perf_counter()
        memory.close()
        row["close_s"] = round(time.perf_counter() - closing, 3)
    row["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if spec["restore"]:  # leave the cached store as it was built (not timed)
        started = time.perf_counter()
        memory = open_memory(spec["path"], spec)
        try:
            for memory_id in added:
                memory.forget(memory_id, entity_id=served)
            if spec["store_capture"]:
                memory.forget(entity_id=f"{namespace}{STORE_CAPTURE_ENTITY}")
        finally:
            memory.close()
        row["restore_s"] = round(time.perf_counter() - started, 2)
    return row


def capture_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Sustained background capture with the default MiniLM embedder into a new store."""
    path = Path(spec["path"])
    memory = open_memory(str(path), spec, hashing=False)
    try:
        memory.embedder.embed_query("load the model before timing")
        entities = [f"{spec['namespace']}capture-{number:02d}" for number in range(10)]
        figures = capture_rate(memory, turns_of(entities, spec["turns"], spec["seed"]))
        figures["embedder"] = memory.embedder.model_id
        figures["stored"] = memory.health().total_memories
    finally:
        memory.close()
    return figures


# -- the parent ------------------------------------------------------------------------------
def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's figures against the smallest size's, with the targets checked."""
    base = rows[0]
    out: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {"memories": row["memories"]}
        for figure in RATIO_FIGURES:
            if figure in row and figure in base:
                entry[figure] = round(row[figure] / base[figure], 2) if base[figure] else None
        checks = []
        for figure, label, kind, bound in TARGETS:
            value = row[figure] if kind == "abs" else entry[figure]
            met = value is not None and value <= bound
            checks.append(
                {
                    "figure": figure,
                    "label": label,
                    "kind": kind,
                    "bound": bound,
                    "value": value,
                    "met": met,
                }
            )
        entry["targets"] = checks
        out.append(entry)
    return out


def print_report(
    rows: list[dict[str, Any]], compared: list[dict[str, Any]], capture: dict[str, Any] | None
) -> None:
    head = (
        f"{'memories':>10} {'entities':>8} {'open s':>7} {'1st rec':>8} {'RSS MB':>7} "
        f"{'add p50':>8} {'add p99':>8} {'rec p50':>8} {'rec p99':>8} {'hit@10':>6} "
        f"{'close s':>7} {'capt/s':>7} {'build/s':>8}"
    )
    print("\nper row (a fresh process each; ms unless said; capt/s with the hashing embedder)")
    print(head)
    for row in rows:
        capt = row.get("capture_hash", {}).get("turns_per_s", float("nan"))
        print(
            f"{row['memories']:>10,} {row['entities']:>8,} {row['open_s']:>7.2f} "
            f"{row['first_recall_ms']:>8.1f} {row['rss_mb']:>7.0f} {row['add_p50_ms']:>8.1f} "
            f"{row['add_p99_ms']:>8.1f} {row['recall_p50_ms']:>8.2f} {row['recall_p99_ms']:>8.2f} "
            f"{row['recall_hit_at_10'] or 0:>6.2f} {row['close_s']:>7.2f} {capt:>7.0f} "
            f"{row['build'].get('memories_per_s') or 0:>8,.0f}"
        )
    for row in rows:
        if "visibility" in row:
            seen = row["visibility"]
            print(
                f"{row['memories']:>10,}: commit to visibility in another process p50 "
                f"{seen['visible_p50_ms']:.1f} ms, p99 {seen['visible_p99_ms']:.1f} ms, max "
                f"{seen['visible_max_ms']:.1f} ms ({seen['writes']} writes, polled every "
                f"{seen['poll_ms']} ms)"
            )
    print(f"\nagainst {rows[0]['memories']:,} memories (same run); targets from issue 16")
    for entry in compared[1:]:
        ratio = ", ".join(
            f"{k.removesuffix('_ms').removesuffix('_s').removesuffix('_mb')} {entry[k]}x"
            for k in RATIO_FIGURES
            if k in entry
        )
        print(f"{entry['memories']:>10,}: {ratio}")
        for check in entry["targets"]:
            shown = f"{check['value']}{'x' if check['kind'] == 'ratio' else ''}"
            bound = f"{check['bound']}{'x' if check['kind'] == 'ratio' else ''}"
            verdict = "pass" if check["met"] else "FAIL"
            print(f"{'':>12}{check['label']:<11} {shown:>9} <= {bound:<6} {verdict}")
    if capture is not None:
        verdict = "pass" if capture["turns_per_s"] >= CAPTURE_TARGET else "FAIL"
        print(
            f"\ncapture with {capture['embedder']}: {capture['turns']} turns in "
            f"{capture['seconds']:.1f} s = {capture['turns_per_s']:.1f} turns/s "
            f"(>= {CAPTURE_TARGET:.0f}) {verdict}"
        )


def plot(rows: list[dict[str, Any]], capture: dict[str, Any] | None, out: Path) -> None:
    """Each figure against the store's size, with its target; the capture rate beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["memories"] for row in rows]
    base = rows[0]
    # (title, figures, target line, its label)
    panels = (
        ("open (s)", ["open_s"], 1.0, "target 1 s"),
        ("RSS after open (MB)", ["rss_mb"], 1.3 * base["rss_mb"], "target 1.3x smallest"),
        ("add, one message (ms)", ["add_p50_ms", "add_p99_ms"], 30.0, "target p50 30 ms"),
        ("recall (ms)", ["recall_p50_ms", "recall_p99_ms"], 1.2 * base["recall_p50_ms"],
         "target p50 1.2x smallest"),
        ("close (s)", ["close_s"], 1.0, "target 1 s"),
    )  # fmt: skip
    fig, grid = plt.subplots(2, 3, figsize=(13, 7))
    axes = list(grid.flat)
    for ax, (title, figures, bound, label) in zip(axes, panels, strict=False):
        for figure in figures:
            name = figure.split("_")[1] if len(figures) > 1 else "measured"
            ax.plot(sizes, [row[figure] for row in rows], "o-", label=name)
        ax.axhline(bound, color="grey", linestyle=":", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("memories in the store")
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    ax = axes[-1]
    if capture is not None:
        ax.bar(["capture (MiniLM)"], [capture["turns_per_s"]], color="tab:green")
        ax.axhline(CAPTURE_TARGET, color="grey", linestyle=":", label="target 100 turns/s")
        ax.legend(fontsize=8)
        ax.set_title("sustained background capture (turns/s)")
    elif "visible_p50_ms" in base:
        for figure in ("visible_p50_ms", "visible_p99_ms"):
            ax.plot(sizes, [row[figure] for row in rows], "o-", label=figure.split("_")[1])
        ax.set_xscale("log")
        ax.set_xlabel("memories in the store")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
        ax.set_title("commit to visibility, another process (ms)")
    fig.suptitle(
        f"one entity of {base['per_entity']} memories served while the others grow "
        f"(fresh process per size; hashing embedder, 384-d"
        + ("; PostgreSQL mode)" if "visible_p50_ms" in base else ")")
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", help="comma-separated store sizes (default 10000,100000,1000000)"
    )
    parser.add_argument("--quick", action="store_true", help="sizes 10000,50000")
    parser.add_argument("--per-entity", type=int, default=500)
    parser.add_argument("--adds", type=int, default=50, help="single-message adds per row")
    parser.add_argument("--queries", type=int, default=100, help="recalls per row")
    parser.add_argument(
        "--interleaved",
        type=int,
        default=200,
        help="questions asked of every size in one process, interleaved (0: skip)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=10,
        help="recalls and adds per row timed apart before the measured ones (the steady state)",
    )
    parser.add_argument(
        "--store-capture",
        type=int,
        default=100,
        help="turns captured per row with the hashing embedder (0: none)",
    )
    parser.add_argument(
        "--capture-turns",
        type=int,
        default=None,
        help="turns of the MiniLM capture row (default 400; 0: no such row, as in PostgreSQL mode)",
    )
    parser.add_argument("--builder", choices=("put", "add"), default="put")
    parser.add_argument(
        "--build-workers",
        type=int,
        default=1,
        help="helper processes that generate and embed entities while one writes (0: none)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache", type=Path, help="keep built stores here (default: temporary)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--plot", type=Path, help="draw the figures here (PNG)")
    parser.add_argument("--chroma-url", help="passed to Memory(chroma_url=...)")
    parser.add_argument("--postgres-url", help="passed to Memory(postgres_url=...)")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="PostgreSQL mode on a scratch PostgreSQL and `chroma run` started (and removed) here",
    )
    parser.add_argument(
        "--visibility-writes",
        type=int,
        default=50,
        help="PostgreSQL mode: writes timed from commit to visibility in another process (0: none)",
    )
    parser.add_argument(
        "--poll-ms", type=float, default=1.0, help="how often the other process looks (ms)"
    )
    parser.add_argument("--child", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return args
    if args.postgres and (args.postgres_url or args.chroma_url):
        parser.error("--postgres starts its own servers: give no --postgres-url or --chroma-url")
    if args.postgres and args.cache:
        parser.error("--postgres removes its servers at the end: a --cache would outlive them")
    if args.postgres_url and not args.chroma_url:
        parser.error("--postgres-url needs --chroma-url (the vectors live in a Chroma server)")
    args.pg_mode = bool(args.postgres or args.postgres_url)
    default = PG_SIZES if args.pg_mode else DEFAULT_SIZES
    text = args.sizes or ",".join(map(str, QUICK_SIZES if args.quick else default))
    try:
        args.size_list = sorted({int(s.replace("_", "")) for s in text.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes takes comma-separated integers, got {text!r}")
    if not args.size_list or min(args.size_list) < args.per_entity or args.per_entity < 1:
        parser.error("every size must hold at least one entity of --per-entity memories")
    if args.pg_mode:
        from memtrellis import Memory

        if "postgres_url" not in inspect.signature(Memory).parameters:
            parser.error("this memtrellis has no PostgreSQL mode: Memory() takes no postgres_url")
        if args.capture_turns:  # one embedder for every machine of a database
            parser.error("in PostgreSQL mode give --capture-turns 0 (the MiniLM row is embedded)")
    elif args.capture_turns is None:
        args.capture_turns = 400
    args.capture_turns = args.capture_turns or 0
    server = bool(args.chroma_url or args.pg_mode)
    args.namespace = "n{size}-" if server else ""
    return args


def run_rows(args: argparse.Namespace, cache: Path) -> tuple[list[dict[str, Any]], Any]:
    """Build (or find) each size's store and measure it; the MiniLM capture row after."""
    rows: list[dict[str, Any]] = []
    capture = None
    stores: list[list[Any]] = []
    for size in args.size_list:
        path, build = ensure_store(size, args, cache)
        stores.append([size, str(path), args.namespace.format(size=size)])
        if args.pg_mode:
            settle(args.postgres_url)
        spec = {
            **spec_base(args),
            "path": str(path),
            "namespace": args.namespace.format(size=size),
            "adds": args.adds,
            "warmup": args.warmup,
            "queries": args.queries,
            "store_capture": args.store_capture,
            "restore": args.cache is not None,
        }
        row = run_child("measure", spec)
        entities = len(entity_sizes(size, args.per_entity))
        row.update(memories=size, entities=entities, per_entity=args.per_entity, build=build)
        print(
            f"  open {row['open_s']:.2f} s, RSS {row['rss_mb']:.0f} MB, add p50 "
            f"{row['add_p50_ms']:.1f} ms, recall p50 {row['recall_p50_ms']:.2f} ms, "
            f"close {row['close_s']:.2f} s",
            flush=True,
        )
        if args.pg_mode and args.visibility_writes:
            sides = {side: cache / f"visibility-{side}-{os.getpid()}" for side in "ab"}
            spec.update(
                path=str(sides["a"]),
                reader_path=str(sides["b"]),
                writes=args.visibility_writes,
                poll_ms=args.poll_ms,
            )
            try:
                row["visibility"] = run_child("visibility", spec)
            finally:
                for side in sides.values():
                    shutil.rmtree(side, ignore_errors=True)
            row["visible_p50_ms"] = row["visibility"]["visible_p50_ms"]
            row["visible_p99_ms"] = row["visibility"]["visible_p99_ms"]
            print(
                f"  commit to visibility in another process: p50 {row['visible_p50_ms']:.1f} ms,"
                f" p99 {row['visible_p99_ms']:.1f} ms ({row['visibility']['writes']} writes)",
                flush=True,
            )
        rows.append(row)
    if len(stores) > 1 and args.interleaved:
        # The rows ran minutes apart; the same questions to every size in one process,
        # interleaved, give a recall ratio that the machine's changing load does not move.
        print("recall, every size in one process, interleaved", flush=True)
        spec = {**spec_base(args), "stores": stores, "queries": args.interleaved}
        spec.update(warmup=args.warmup)
        rows[-1]["interleaved"] = run_child("interleave", spec)
        print(f"  {rows[-1]['interleaved']}", flush=True)
    if args.capture_turns:
        print("capture with the default embedder: a new store", flush=True)
        tag = f"r{os.getpid()}-" if args.namespace else ""
        spec = {
            **spec_base(args),
            "path": str(cache / f"capture-{os.getpid()}"),
            "turns": args.capture_turns,
            "namespace": tag,
        }
        try:
            capture = run_child("capture", spec)
        finally:
            shutil.rmtree(spec["path"], ignore_errors=True)
    return rows, capture


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        kind, spec = args.child[0], json.loads(args.child[1])
        work = {
            "build": build_child,
            "measure": measure_child,
            "capture": capture_child,
            "visibility": visibility_child,
            "watch": watch_child,
            "interleave": interleave_child,
        }[kind]
        print(RESULT + json.dumps(work(spec)), flush=True)
        return
    began = time.perf_counter()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="memtrellis-scale-"))
    cache.mkdir(parents=True, exist_ok=True)
    try:
        if args.postgres:
            with scratch_servers() as (args.postgres_url, args.chroma_url):
                rows, capture = run_rows(args, cache)
        else:
            rows, capture = run_rows(args, cache)
    finally:
        if args.cache is None:
            shutil.rmtree(cache, ignore_errors=True)
    compared = ratios(rows)
    print_report(rows, compared, capture)
    mode = "scratch servers" if args.postgres else "given servers" if args.pg_mode else None
    document = {
        "benchmark": "one entity served at scale (benchmarks/scale.py)",
        "code": code_version(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {k: v for k, v in vars(args).items() if k in SETTINGS},
        "postgres": mode,
        "embedder": f"hashing-{DIMENSION}",
        "rows": rows,
        "ratios": compared,
        "capture": capture,
        "capture_target_turns_per_s": CAPTURE_TARGET,
        "runtime_s": round(time.perf_counter() - began, 1),
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.plot and rows:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        plot(rows, capture, args.plot)
        print(f"wrote {args.plot}")
    print(f"done in {document['runtime_s']:.0f} s")


if __name__ == "__main__":
    main()
