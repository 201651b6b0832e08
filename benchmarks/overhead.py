"""What memory adds to a chat call: ``Memory.capture`` and ``Memory.recall`` around a model.

    . /tmp/dev/bin/activate            # or: pip install -e ".[bench]"
    python benchmarks/overhead.py
    python benchmarks/overhead.py --memories 2000 --calls 200 --model-ms 50

It measures the two calls a chat adapter makes, then the LangChain wrapper itself, on a
store of ``--memories`` synthetic chat memories of one user (``_synth.py``; built once
through ``Memory.add`` in fast mode, one session per call with its people and places as
entities, vectors from the shared embedding cache of ``latency.py`` when present),
reopened with the plain default embedder:

a. ``Memory.recall(question, k=10)`` alone (graph context on, the default, and off):
   p50/p99 in ms, query embedding included;
b. ``Memory.capture(turn)`` of a user + assistant turn: p50/p99 in microseconds, once
   with the background worker idle (``flush()`` between captures, not timed) and once
   back to back (the worker busy extracting and embedding the earlier ones), and how
   long ``flush()`` then takes to drain them;
c. a chat loop around a fake model that takes ``--model-ms`` (a ``time.sleep``, like a
   remote API call that releases the GIL): ``recall`` -> model -> ``capture`` per call.
   The added latency is the call's total minus the model's ``--model-ms``, p50/p99, with
   its two parts (recall before the model, capture after it). The loop runs twice: calls
   back to back (the worker still stores the previous turn while the next call recalls),
   then with a pause of ``--think-ms`` between calls (a user reading and typing), which
   lets the worker finish first.
d. ``langchain_memtrellis.ChatMemoryWrapper`` around LangChain's fake chat model with a
   fixed ``--model-ms`` latency, against the bare fake model (``_wrapper_overhead.py``):
   the added latency per call (the wrapper's call minus the inner model's time in it),
   p50/p99, split into memory-context placement (recall, render, place) and capture,
   back to back and with the pause. Skipped when ``langchain-memtrellis`` is not
   installed (``pip install -e integrations/langchain``).

Figures go to ``benchmarks/results/overhead.json``. Target (issue 4): capture under 1 ms
p50.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from _locomo import percentile, results_dir
from _synth import Message, UserStream
from latency import CachedEmbedder, load_average, load_or_embed, sessions

TARGET_CAPTURE_P50_US = 1000.0
USER = "user-00"


def summary(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    """p50/p95/p99/mean/max of samples, in their own unit."""
    return {
        "p50": round(percentile(values, 0.50), digits),
        "p95": round(percentile(values, 0.95), digits),
        "p99": round(percentile(values, 0.99), digits),
        "mean": round(sum(values) / len(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
    }


def elapsed_ms(call: Callable[[], Any]) -> float:
    started = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - started) / 1e6


def turn(user: Message, reply: Message) -> list[dict[str, str]]:
    """A chat turn as ``capture`` takes it (role and content only, as a wrapper sees it)."""
    return [
        {"role": "user", "content": user.text},
        {"role": "assistant", "content": reply.text},
    ]


def chat_loop(
    memory: Any,
    questions: Sequence[str],
    replies: Sequence[Message],
    cursor: int,
    calls: int,
    model_ms: float,
    think_ms: float,
) -> tuple[dict[str, Any], int]:
    """``calls`` chat calls: recall, the fake model, capture; a pause of ``think_ms`` after.

    The pause (not timed) stands for the user reading and typing; without it the next
    call's recall runs while the worker still stores the previous turn.
    """
    totals: list[float] = []
    recall_part: list[float] = []
    capture_part: list[float] = []
    model_actual: list[float] = []
    for index in range(calls):
        question = questions[(index * 7) % len(questions)]
        reply = replies[cursor]
        cursor += 1
        started = time.perf_counter_ns()
        memory.recall(question, k=10)
        recalled = time.perf_counter_ns()
        time.sleep(model_ms / 1000)  # the model call
        answered = time.perf_counter_ns()
        memory.capture(
            [
                {"role": "user", "content": question},
                {"role": "assistant", "content": reply.text},
            ]
        )
        ended = time.perf_counter_ns()
        totals.append((ended - started) / 1e6)
        recall_part.append((recalled - started) / 1e6)
        model_actual.append((answered - recalled) / 1e6)
        capture_part.append((ended - answered) / 1e6)
        if think_ms > 0:
            time.sleep(think_ms / 1000)
    drain_s = elapsed_ms(memory.flush) / 1000
    return {
        "calls": calls,
        "model_ms": model_ms,
        "think_ms": think_ms,
        "model_actual_ms": summary(model_actual),
        "added_ms": summary([t - model_ms for t in totals]),
        "added_vs_actual_model_ms": summary(
            [t - m for t, m in zip(totals, model_actual, strict=True)]
        ),
        "recall_part_ms": summary(recall_part),
        "capture_part_ms": summary(capture_part),
        "drain_after_loop_s": round(drain_s, 2),
    }, cursor


def wrapper_loops(
    memory: Any, questions: Sequence[str], replies: Sequence[Message], cursor: int, args: Any
) -> dict[str, dict[str, Any]]:
    """Section d: the LangChain wrapper, back to back and with the pause between calls."""
    try:
        from _wrapper_overhead import wrapper_loop
    except ImportError as exc:
        print(f"langchain wrapper loop skipped: {exc}")
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, think_ms in (("back_to_back", 0.0), ("with_think_time", args.think_ms)):
        if name == "with_think_time" and think_ms <= 0:
            continue
        texts = [reply.text for reply in replies[cursor : cursor + args.calls]]
        cursor += args.calls
        out[name] = wrapper_loop(memory, questions, texts, args.model_ms, think_ms, summary)
    return out


def build_store(path: Path, messages: Sequence[Message], cache_dir: Path) -> float:
    """Store the messages through ``Memory.add`` with cached document vectors."""
    from memtrellis import Memory
    from memtrellis.embeddings import default_embedder

    texts = list(dict.fromkeys(m.text for m in messages))
    matrix, _ = load_or_embed(texts, cache_dir, default_embedder())
    embedder = CachedEmbedder(default_embedder(), texts, matrix)
    started = time.perf_counter()
    with Memory(path, embedder=embedder, entity_id=USER) as memory:
        for group in sessions(messages):
            memory.add([m.as_dict() for m in group], entities=list(group[0].entities), mode="fast")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000, help="memories in the store")
    parser.add_argument("--recalls", type=int, default=300, help="recalls timed alone")
    parser.add_argument("--captures", type=int, default=300, help="captures timed per mode")
    parser.add_argument("--calls", type=int, default=200, help="chat calls in the loop")
    parser.add_argument("--model-ms", type=float, default=50.0, help="fake model latency")
    parser.add_argument(
        "--think-ms", type=float, default=250.0, help="pause between calls, second loop (0: none)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "memtrellis-bench",
        help="embedding cache shared with latency.py",
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON path")
    args = parser.parse_args()
    began = time.perf_counter()
    print(f"load average at start: {load_average()} ({os.cpu_count()} CPUs)")

    # The stored part of the stream, then fresh turns for captures and chat calls.
    needed = args.memories + 4 * (2 * args.captures + 2 * args.calls) + 400
    stream = UserStream(USER, seed=args.seed).take(needed)
    stored = stream[: args.memories]
    questions = [m.question for m in stored if m.question]
    fresh = [m for m in stream[args.memories :] if m.role == "user"]
    replies = [m for m in stream[args.memories :] if m.role == "assistant"]

    from memtrellis import Memory
    from memtrellis.embeddings import default_embedder

    store = Path(tempfile.mkdtemp(prefix="memtrellis-overhead-"))
    try:
        build_s = build_store(store, stored, args.cache_dir)
        print(f"built a store of {args.memories} memories in {build_s:.1f} s")
        embedder = default_embedder()
        embedder.embed_query("warm up")
        memory = Memory(store, embedder=embedder, entity_id=USER)
        for question in questions[:10]:  # warm-up, not counted
            memory.recall(question, k=10)
            memory.recall(question, k=10, graph_context=False)
        memory.capture(turn(fresh[0], replies[0]))
        memory.flush()

        # a. recall alone (on and off interleaved)
        asked = [questions[i % len(questions)] for i in range(args.recalls)]
        recall_on: list[float] = []
        recall_off: list[float] = []
        for index, question in enumerate(asked):
            pair = [
                (recall_on, lambda q=question: memory.recall(q, k=10)),
                (recall_off, lambda q=question: memory.recall(q, k=10, graph_context=False)),
            ]
            for samples, call in pair if index % 2 == 0 else pair[::-1]:
                samples.append(elapsed_ms(call))

        # b. capture, worker idle, then back to back
        idle_us: list[float] = []
        cursor = 1
        for _ in range(args.captures):
            data = turn(fresh[cursor], replies[cursor])
            cursor += 1
            idle_us.append(elapsed_ms(partial(memory.capture, data)) * 1000)
            memory.flush()
        busy_us: list[float] = []
        for _ in range(args.captures):
            data = turn(fresh[cursor], replies[cursor])
            cursor += 1
            busy_us.append(elapsed_ms(partial(memory.capture, data)) * 1000)
        drain_s = elapsed_ms(memory.flush) / 1000

        # c. the chat loop around a fake model: calls back to back, then with a pause
        loops: dict[str, dict[str, Any]] = {}
        for name, think_ms in (("back_to_back", 0.0), ("with_think_time", args.think_ms)):
            if name == "with_think_time" and think_ms <= 0:
                continue
            loop, cursor = chat_loop(
                memory, questions, replies, cursor, args.calls, args.model_ms, think_ms
            )
            loops[name] = loop
        wrapper = wrapper_loops(memory, questions, replies, cursor, args)
        health = memory.health()
        memory.close()
    finally:
        shutil.rmtree(store, ignore_errors=True)

    figures: dict[str, Any] = {
        "benchmark": "capture and recall overhead (benchmarks/overhead.py)",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_end": load_average(),
        },
        "embedder": embedder.model_id,
        "memories": args.memories,
        "build_s": round(build_s, 1),
        "recall_ms": {"graph_on": summary(recall_on), "graph_off": summary(recall_off)},
        "capture_us": {
            "worker_idle": summary(idle_us, 1),
            "back_to_back": summary(busy_us, 1),
            "back_to_back_drain_s": round(drain_s, 2),
            "captures_per_mode": args.captures,
        },
        "chat_loop": loops,
        "langchain_wrapper": wrapper,
        "store_after": {
            "memories": health.total_memories,
            "capture_failures": health.capture_failures,
        },
        "targets": {
            "capture_p50_us": {
                "value": round(percentile(idle_us, 0.5), 1),
                "target_below": TARGET_CAPTURE_P50_US,
                "met": percentile(idle_us, 0.5) < TARGET_CAPTURE_P50_US,
            }
        },
        "runtime_s": round(time.perf_counter() - began, 1),
    }

    def line(name: str, s: dict[str, float], unit: str) -> None:
        print(f"  {name:<40} p50 {s['p50']:9.3f}  p99 {s['p99']:9.3f} {unit}")

    print(f"\n{args.memories} memories, {embedder.model_id}, load {load_average()}")
    line("recall, graph on", figures["recall_ms"]["graph_on"], "ms")
    line("recall, graph off", figures["recall_ms"]["graph_off"], "ms")
    line("capture, worker idle", figures["capture_us"]["worker_idle"], "us")
    line("capture, back to back", figures["capture_us"]["back_to_back"], "us")
    print(f"  drain after {args.captures} back-to-back captures: {drain_s:.2f} s")
    for name, loop in loops.items():
        print(f"  chat loop, {name.replace('_', ' ')} (pause {loop['think_ms']:g} ms):")
        line(f"  added per call (total - {args.model_ms:g} ms)", loop["added_ms"], "ms")
        line("    of which recall before the model", loop["recall_part_ms"], "ms")
        line("    of which capture after the model", loop["capture_part_ms"], "ms")
        line("    (the model's sleep itself took)", loop["model_actual_ms"], "ms")
    if not wrapper:
        print("  langchain wrapper: skipped (pip install -e integrations/langchain)")
    for name, loop in wrapper.items():
        print(f"  ChatMemoryWrapper, {name.replace('_', ' ')} (pause {loop['think_ms']:g} ms):")
        line(f"  bare fake model call ({args.model_ms:g} ms)", loop["bare_call_ms"], "ms")
        line("  wrapper call", loop["wrapper_call_ms"], "ms")
        line("  added per call (call - inner model)", loop["added_ms"], "ms")
        line("    of which memory-context placement", loop["placement_ms"], "ms")
        line("    of which capture", loop["capture_ms"], "ms")
        line("    of which LangChain's extra run", loop["langchain_other_ms"], "ms")
    target = figures["targets"]["capture_p50_us"]
    verdict = "met" if target["met"] else "MISSED"
    print(f"target capture p50 < 1000 us: {target['value']} us {verdict}")

    out = args.out or results_dir() / "overhead.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"wrote {out} in {figures['runtime_s']:.0f} s")


if __name__ == "__main__":
    main()
