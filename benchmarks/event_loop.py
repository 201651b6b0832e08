"""Does background capture stall an asyncio app? Event-loop lag and capture throughput.

    PYTHONPATH=src python benchmarks/event_loop.py                 # both embedders, 3 runs
    PYTHONPATH=src python benchmarks/event_loop.py --embedders hashing --runs 1

Scenario (issue 16, item 3): ``--users`` concurrent users (one ``entity_id`` each), each
doing ``await memory.arecall(question)`` then ``await memory.acapture(message)``
``--rounds`` times, on one event loop; then ``await memory.aflush()``. A ticker task on the
same loop sleeps 5 ms in a loop and records how late it wakes up (the lag). Every user has
``--seed`` memories (fast mode, stored before the clock starts) so that recall has work to
do; a captured turn is one chat message of the synthetic stream (``_synth.py``), in fast
mode (the default). Printed per run and over all runs: lag p50/p99/max during the
scenario, the lag of the idle loop (floor), the capture rate (turns from the first
capture to the end of the flush) and recall's latency as the app sees it.

Throughput: a fresh store, ``--throughput`` turns of the users captured in a tight loop,
then ``flush()``; turns/s from the first capture to the end of the flush, and its ratio to
the bare embedder on the same texts (calls of 64; mean of a run before and one after).

"Net of CPU wait" subtracts the loop thread's own wait for a CPU (Linux schedstat) from
each tick's lag: what is left is the wait for the GIL and the loop's own callbacks, the
part the library can change; on a shared machine the raw lag also holds other processes.

Targets: lag p99 <= 5 ms and max <= 20 ms under the scenario; sustained background
capture >= 100 turns/s with the default MiniLM embedder. The machine may be shared: compare
figures of one run (written to ``benchmarks/results/event_loop.json``), not absolute times
across runs.

What stalls the loop (py-spy ``--gil``, and a bare Chroma collection with a 1 ms ticker in
another thread): Chroma 1.5's ``upsert``, ``update`` and ``delete`` hold the GIL for the
whole write (Chroma frees it for reads only, chroma-core/chroma#3873), about 17 ms for one
vector and 58 ms for 50 on an idle 2-core machine, so the loop waits out any write that is
running when its timer fires. One write per captured turn made that 200 waits in the
scenario; batching makes it one per entity per batch (about 45). ``--modes`` runs the
scenario with the index in this process and with ``Memory(vector_process=True)``, where a
child process owns the embedded Chroma and a write costs this process a socket wait;
both are measured in one run by default. What stalls the loop after that: the reads' own
Python work in their worker threads (async reads run in a pool of two threads, see
``memtrellis/_memory_async.py``) and, once or twice a run, a full collection of Python's
garbage collector over the whole process (68-76 ms here).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _locomo import code_version, percentile, results_dir
from _synth import Message, UserStream

from memtrellis import Memory
from memtrellis.embeddings import Embedder, default_embedder
from memtrellis.testing import HashingEmbedder

TICK = 0.005


def _embedders() -> dict[str, Callable[[], Embedder]]:
    return {"minilm": default_embedder, "hashing": lambda: HashingEmbedder(384)}


class Users:
    """Seed messages, captured turns and questions of each user (deterministic)."""

    def __init__(self, users: int, seed: int, turns: int) -> None:
        self.ids = [f"user-{n:02d}" for n in range(users)]
        self.seed: dict[str, list[Message]] = {}
        self.turns: dict[str, list[Message]] = {}
        self.questions: dict[str, list[str]] = {}
        for entity in self.ids:
            messages = UserStream(entity).take(seed + turns)
            self.seed[entity] = messages[:seed]
            self.turns[entity] = messages[seed:]
            asked = [m.question for m in messages[:seed] if m.question]
            self.questions[entity] = asked or [m.text for m in messages[:seed]]


def _store(memory: Memory, users: Users) -> None:
    for entity in users.ids:
        memory.add([m.as_dict() for m in users.seed[entity]], entity_id=entity, mode="fast")
    for entity in users.ids:  # warm: the embedder is loaded, collections are opened
        memory.recall(users.questions[entity][0], entity_id=entity)


def _queued_ms(stat: Any) -> float:
    """This thread's total wait for a CPU so far (Linux schedstat), in ms; 0 elsewhere."""
    if stat is None:
        return 0.0
    stat.seek(0)
    return int(stat.read().split()[1]) / 1e6


class Collections:
    """Python's garbage collections while installed (``gc.callbacks``): generation, start
    and duration of each, so that a late tick can be told apart from a collector pause."""

    def __init__(self) -> None:
        self.done: list[tuple[int, float, float]] = []  # generation, start, seconds
        self._started = 0.0

    def __enter__(self) -> Collections:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._started = now
        else:
            self.done.append((info["generation"], self._started, now - self._started))

    def full(self) -> list[tuple[float, float]]:
        """(start, end) of every full (generation 2) collection."""
        return [(start, start + took) for gen, start, took in self.done if gen == 2]


async def _ticker(
    lags: list[float], net: list[float], stop: asyncio.Event, spans: list[tuple[float, float]]
) -> None:
    # The loop thread's wait for a CPU (other processes on a shared machine) is read
    # from schedstat around each tick; ``net`` is the lag without it: the wait for the GIL
    # and for the loop's own callbacks.
    try:
        stat: Any = Path("/proc/thread-self/schedstat").open("rb")  # noqa: ASYNC230, SIM115
    except OSError:
        stat = None
    try:
        while not stop.is_set():
            queued = _queued_ms(stat)
            started = time.perf_counter()
            await asyncio.sleep(TICK)
            lag = (time.perf_counter() - started - TICK) * 1000.0
            lags.append(lag)
            net.append(max(0.0, lag - (_queued_ms(stat) - queued)))
            spans.append((started, time.perf_counter()))
    finally:
        if stat is not None:
            stat.close()


async def _user(
    memory: Memory, users: Users, entity: str, rounds: int, seen: dict[str, Any]
) -> list[float]:
    latencies: list[float] = []
    questions = users.questions[entity]
    for turn in range(rounds):
        started = time.perf_counter()
        await memory.arecall(questions[turn % len(questions)], entity_id=entity)
        latencies.append((time.perf_counter() - started) * 1000.0)
        if seen.get("first_capture") is None:
            seen["first_capture"] = time.perf_counter()
        await memory.acapture(users.turns[entity][turn].as_dict(), entity_id=entity)
    return latencies


def _source_ids(memory: Memory, entities: Sequence[str]) -> set[str]:
    """The message ids among the sources of every stored memory of these entities."""
    found: set[str] = set()
    for entity in entities:
        offset = 0
        while page := memory.list(entity_id=entity, limit=500, offset=offset):
            found.update(s.message_id for item in page for s in item.sources if s.message_id)
            offset += len(page)
    return found


def _outside(
    lags: Sequence[float], spans: Sequence[tuple[float, float]], full: Sequence[tuple[float, float]]
) -> list[float]:
    """The lags of the ticks that no full collection overlapped."""
    return [
        lag
        for lag, (begun, woke) in zip(lags, spans, strict=True)
        if not any(start < woke and end > begun for start, end in full)
    ]


async def _scenario(memory: Memory, users: Users, rounds: int) -> dict[str, Any]:
    stop = asyncio.Event()
    idle: list[float] = []
    ticking = asyncio.create_task(_ticker(idle, [], stop, []))
    await asyncio.sleep(0.5)  # the floor: the same loop with nothing else to do
    stop.set()
    await ticking
    stop = asyncio.Event()
    lags: list[float] = []
    net: list[float] = []
    spans: list[tuple[float, float]] = []
    seen: dict[str, Any] = {}
    with Collections() as collections:
        ticking = asyncio.create_task(_ticker(lags, net, stop, spans))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        recalls = await asyncio.gather(*(_user(memory, users, e, rounds, seen) for e in users.ids))
        captured = time.perf_counter()
        drained = await memory.aflush(timeout=600)
        flushed = time.perf_counter()
        stop.set()
        await ticking
    turns = rounds * len(users.ids)
    latencies = [ms for user in recalls for ms in user]
    full = collections.full()
    outside = _outside(lags, spans, full)
    return {
        **_lag_figures(lags, net),
        "ticks": len(lags),
        "gc_collections": len(collections.done),
        "gc_full_collections": len(full),
        "gc_full_max_ms": round(max((end - start for start, end in full), default=0) * 1000, 2),
        "lag_max_outside_full_gc_ms": round(max(outside, default=0.0), 2),
        "lag_p99_outside_full_gc_ms": round(percentile(outside, 0.99), 2) if outside else 0.0,
        "idle_lag_p99_ms": round(percentile(idle, 0.99), 2),
        "idle_lag_max_ms": round(max(idle), 2),
        "recall_p50_ms": round(percentile(latencies, 0.5), 1),
        "recall_p99_ms": round(percentile(latencies, 0.99), 1),
        "users_s": round(captured - started, 3),
        "flush_s": round(flushed - captured, 3),
        "drained": drained,
        "turns": turns,
        "capture_turns_per_s": round(turns / (flushed - seen["first_capture"]), 1),
        "_lags": lags,
        "_net": net,
    }


def scenario_run(
    make: Callable[[], Embedder],
    users: Users,
    rounds: int,
    chroma_url: str | None = None,
    *,
    vector_process: bool = False,
    engine_process: bool = False,
    freeze: bool = False,
) -> dict[str, Any]:
    """One fresh store: seed, warm, then the concurrent users under the ticker.

    ``freeze``: the app calls ``gc.freeze()`` once its start-up is done (here: after the
    store is opened, seeded and warm), as long-running Python servers do, so that a full
    collection walks only what was made since."""
    directory = Path(tempfile.mkdtemp(prefix="mt-loop-"))
    try:
        memory = Memory(
            directory,
            embedder=make(),
            chroma_url=chroma_url,
            vector_process=vector_process,
            engine_process=engine_process,
        )
        try:
            _store(memory, users)
            if freeze:
                gc.collect()
                gc.freeze()
            try:
                result = asyncio.run(_scenario(memory, users, rounds))
            finally:
                gc.unfreeze()
            result["stored"] = memory.health().total_memories
            # Fast mode keeps a burst (one speaker's messages minutes apart) as one memory
            # with every message a source, so count messages, not memories.
            sent = {m.id for e in users.ids for m in users.seed[e] + users.turns[e][:rounds]}
            missing = sent - _source_ids(memory, users.ids)
            result["messages_sent"] = len(sent)
            result["messages_missing"] = len(missing)
            result["stored_ok"] = not missing
        finally:
            memory.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return result


def _bare_seconds(embedder: Embedder, texts: Sequence[str]) -> float:
    """The bare embedder over ``texts`` in calls of 64: the floor of capture."""
    started = time.perf_counter()
    for start in range(0, len(texts), 64):
        embedder.embed_documents(texts[start : start + 64])
    return time.perf_counter() - started


def throughput_run(make: Callable[[], Embedder], users: Users, count: int) -> dict[str, Any]:
    """``count`` turns captured in a tight loop into a fresh store, then flushed."""
    directory = Path(tempfile.mkdtemp(prefix="mt-capture-"))
    order: list[tuple[str, Message]] = []
    cursor = {e: 0 for e in users.ids}
    while len(order) < count:
        entity = users.ids[len(order) % len(users.ids)]
        order.append((entity, users.turns[entity][cursor[entity]]))
        cursor[entity] += 1
    try:
        memory = Memory(directory, embedder=make())
        try:
            memory.embedder.embed_documents(["warm up"])
            # The floor: the bare embedder on the same texts, in calls of 64, right before.
            bare_before = _bare_seconds(memory.embedder, [m.text for _, m in order])
            started = time.perf_counter()
            for entity, message in order:
                memory.capture(message.as_dict(), entity_id=entity)
            drained = memory.flush(timeout=600)
            flushed = time.perf_counter()
            stored = memory.health().total_memories
            # The machine may be shared: the floor is the mean of a run before and after.
            bare_s = (bare_before + _bare_seconds(memory.embedder, [m.text for _, m in order])) / 2
        finally:
            memory.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "turns": count,
        "seconds": round(flushed - started, 3),
        "turns_per_s": round(count / (flushed - started), 1),
        "bare_embedder_texts_per_s": round(count / bare_s, 1),
        "ratio_to_bare": round(bare_s / (flushed - started), 3),
        "drained": drained,
        "stored": stored,
    }


def _lag_figures(lags: Sequence[float], net: Sequence[float]) -> dict[str, float]:
    """p50, p99 and max of the ticker's lag, and of it net of the loop's CPU wait."""
    return {
        "lag_p50_ms": round(percentile(lags, 0.5), 2),
        "lag_p99_ms": round(percentile(lags, 0.99), 2),
        "lag_max_ms": round(max(lags), 2),
        "net_lag_p50_ms": round(percentile(net, 0.5), 2),
        "net_lag_p99_ms": round(percentile(net, 0.99), 2),
        "net_lag_max_ms": round(max(net), 2),
    }


def _summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    lags = [ms for run in runs for ms in run["_lags"]]
    net = [ms for run in runs for ms in run["_net"]]
    return {
        **_lag_figures(lags, net),
        "capture_turns_per_s_median": statistics.median(r["capture_turns_per_s"] for r in runs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="minilm,hashing")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=30, help="memories per user before the clock")
    parser.add_argument("--throughput", type=int, default=500, help="turns; 0 skips")
    parser.add_argument(
        "--json",
        type=Path,
        default=results_dir() / "event_loop.json",
        help="write the figures here (default: benchmarks/results/event_loop.json)",
    )
    parser.add_argument(
        "--chroma-url", help="a running Chroma server (`chroma run`) for the scenario runs"
    )
    parser.add_argument(
        "--modes",
        default="all",
        help="comma-separated of in_process, vector_process (the embedded index in a child),"
        " engine_process (the whole engine in a child), or all",
    )
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="also run each mode as an app that calls gc.freeze() after its start-up",
    )
    args = parser.parse_args(argv)
    users = Users(args.users, args.seed, max(args.rounds, args.throughput // args.users + 1))
    known = _embedders()
    report: dict[str, Any] = {
        "code": code_version(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "args": {k: str(v) for k, v in vars(args).items()},
        "embedders": {},
    }
    modes: dict[str, dict[str, bool]] = {
        "in_process": {},
        "vector_process": {"vector_process": True},
        "engine_process": {"engine_process": True},
    }
    chosen = list(modes) if args.modes in ("all", "both") else args.modes.split(",")
    unknown = [mode for mode in chosen if mode not in modes]
    if unknown:
        parser.error(f"unknown mode {unknown[0]!r}: choose from {', '.join(modes)}")
    if args.gc_freeze:
        chosen += [f"{mode}+gc_freeze" for mode in chosen]
    for name in args.embedders.split(","):
        make = known[name]
        entry: dict[str, Any] = {}
        for mode in chosen:
            runs = []
            for number in range(args.runs):
                run = scenario_run(
                    make,
                    users,
                    args.rounds,
                    args.chroma_url,
                    **modes[mode.removesuffix("+gc_freeze")],
                    freeze=mode.endswith("+gc_freeze"),
                )
                runs.append(run)
                print(
                    f"{name} {mode} run {number + 1}: lag p50 {run['lag_p50_ms']:.2f} ms,"
                    f" p99 {run['lag_p99_ms']:.2f} ms, max {run['lag_max_ms']:.2f} ms"
                    f" (net of CPU wait: p50 {run['net_lag_p50_ms']:.2f}, p99"
                    f" {run['net_lag_p99_ms']:.2f}, max {run['net_lag_max_ms']:.2f};"
                    f" {run['ticks']} ticks; idle p99 {run['idle_lag_p99_ms']:.2f},"
                    f" max {run['idle_lag_max_ms']:.2f});"
                    f" capture {run['capture_turns_per_s']:.1f} turns/s"
                    f" (users {run['users_s']:.2f} s + flush {run['flush_s']:.2f} s);"
                    f" arecall p50 {run['recall_p50_ms']:.1f} ms"
                    f" p99 {run['recall_p99_ms']:.1f} ms; stored ok {run['stored_ok']};"
                    f" full collections {run['gc_full_collections']} (longest"
                    f" {run['gc_full_max_ms']:.1f} ms), lag outside them p99"
                    f" {run['lag_p99_outside_full_gc_ms']:.2f}, max"
                    f" {run['lag_max_outside_full_gc_ms']:.2f}",
                    flush=True,
                )
            summary = _summary(runs) if runs else {}
            if runs:
                print(
                    f"{name} {mode} over {args.runs} runs: lag p50 {summary['lag_p50_ms']:.2f}"
                    f" ms, p99 {summary['lag_p99_ms']:.2f} ms, max {summary['lag_max_ms']:.2f}"
                    f" ms (target p99 <= 5, max <= 20); net of CPU wait: p50"
                    f" {summary['net_lag_p50_ms']:.2f}, p99 {summary['net_lag_p99_ms']:.2f},"
                    f" max {summary['net_lag_max_ms']:.2f}",
                    flush=True,
                )
            entry[mode] = {
                "summary": summary,
                "runs": [{k: v for k, v in r.items() if not k.startswith("_")} for r in runs],
            }
        if args.throughput:
            rate = throughput_run(make, users, args.throughput)
            entry["throughput"] = rate
            print(
                f"{name} throughput: {rate['turns']} turns in {rate['seconds']:.2f} s ="
                f" {rate['turns_per_s']:.1f} turns/s, {rate['ratio_to_bare']:.2f}x the bare"
                f" embedder's {rate['bare_embedder_texts_per_s']:.1f} texts/s"
                f" (stored {rate['stored']},"
                f" drained {rate['drained']}; target >= 100 with minilm)",
                flush=True,
            )
        report["embedders"][name] = entry
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
