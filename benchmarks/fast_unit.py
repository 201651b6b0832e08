"""Fast mode: one memory per message, per burst or per window — which recalls better?

Every LoCoMo conversation (``../shared/bench/locomo10_dev.json``) is one ``entity_id``. Each
variant is ingested into its own fresh store with the default MiniLM embedder:

* ``message``: ``Memory.add(session_messages, mode="fast")`` with
  ``ExtractionConfig(fast_unit="message")``, one memory per turn;
* ``burst`` (the default unit): the same ``Memory.add`` with the default
  ``ExtractionConfig``: consecutive messages of one speaker within ``burst_gap`` seconds
  and ``burst_max_tokens`` tokens are one memory, every message a source;
  ``burst-60s`` / ``burst-96t``: a shorter gap / a smaller burst (diagnostics);
* ``scene-4`` / ``scene-6``: small overlapping scenes of 4 messages sharing 1 / 6 sharing
  2 (``chat_windows``, 1024 tokens), each window one memory whose text is the rendered
  lines (``[id] time speaker (role): text``) and whose sources are the message ids;
* ``window-256`` / ``window-1024``: the session's turns normalised
  (``extraction.normalize.normalize``) and cut with ``extraction.windows.chat_windows``
  into token windows of at most 256 / 1024 tokens (o200k_base) with a small overlap
  (32 / 128 tokens), scenes as large as the session so the token budget decides; each
  window stored with ``Memory.store(MemoryItem(text=window.text, sources=window.sources,
  ...))`` tagged ``mode:fast``;
* diagnostics: ``window-128`` (128 tokens, 16 overlap), ``window-scene`` (``chat_windows``
  defaults: scenes of 10 messages sharing 2, 1024 tokens, 200 overlap) and, only when
  asked for with ``--variants``, ``message+speaker`` (the turn text prefixed with
  ``"<speaker>: "``, still through ``Memory.add``; recall now puts the speaker in front
  of chat memories itself).

LoCoMo's speakers take turns, one message each, so bursts rarely form there. Real chats
are not like that: people type one thought as several short messages. ``--split`` sends
every turn of more than one sentence as a burst of up to 3 messages seconds apart
(``_perturb.split_into_bursts``, seeded with ``--seed``); a memory holding any piece of
an evidence turn counts for it.

For every question with evidence, ``Memory.recall(question, entity_id=conv, k=25)``; the
score is the fraction of the evidence dia_ids among the recalled memories' source ids:
recall@5, recall@10, and recall within 500 and 1,000 tokens of memory context (each
memory rendered ``- text``, counted with ``memtrellis.tokens.count_tokens``, best first
until the next would exceed the budget). Printed overall and by category, with a paired
bootstrap 95% interval of each window variant minus ``message``; figures go to
``benchmarks/results/fast_unit.json``.

    . /tmp/dev/bin/activate
    python benchmarks/fast_unit.py
    python benchmarks/fast_unit.py --limit-conversations 2 --variants message window-256
    python benchmarks/fast_unit.py --k 60 --json benchmarks/results/fast_unit_k60.json
    python benchmarks/fast_unit.py --split --variants message burst scene-4 \
        --json benchmarks/results/fast_unit_split.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _locomo import (
    CATEGORY_NAMES,
    Conversation,
    code_version,
    data_path_or_none,
    load_locomo,
    paired_bootstrap,
    percentile,
    recall_at_k,
    recall_within_budget,
    render_line,
    results_dir,
    summarise,
)
from _perturb import Mapped, split_into_bursts

from memtrellis import ExtractionConfig, Memory
from memtrellis.extraction.fast import FAST_TAG
from memtrellis.extraction.normalize import normalize
from memtrellis.extraction.windows import chat_windows
from memtrellis.tokens import count_tokens
from memtrellis.types import MemoryItem, MemoryType, Scope

K = 25  # the default; --k changes it
METRICS = ("recall@5", "recall@10", "recall@500tok", "recall@1000tok")
EXTRA = ("tokens@5", "tokens@10", "tokens@500tok", "tokens@1000tok")


@dataclass(frozen=True)
class WindowSpec:
    """``chat_windows`` arguments for one window variant."""

    max_tokens: int
    overlap_tokens: int
    max_messages: int | None  # None: the whole session is one scene
    message_overlap: int


WINDOWS: dict[str, WindowSpec] = {
    "window-256": WindowSpec(256, 32, None, 0),
    "window-1024": WindowSpec(1024, 128, None, 0),
    "window-scene": WindowSpec(1024, 200, 10, 2),
    "window-128": WindowSpec(128, 16, None, 0),
    "scene-4": WindowSpec(1024, 0, 4, 1),
    "scene-6": WindowSpec(1024, 0, 6, 2),
}
#: ``Memory.add`` variants: their extraction settings.
ADD_VARIANTS: dict[str, dict[str, Any]] = {
    "message": {"fast_unit": "message"},
    "message+speaker": {"fast_unit": "message"},
    "burst": {},
    "burst-60s": {"burst_gap": 60.0},
    "burst-96t": {"burst_max_tokens": 96},
}
MESSAGE_VARIANTS = tuple(ADD_VARIANTS)
DEFAULT_VARIANTS = ("message", "burst", "scene-4", "scene-6", "window-256", "window-scene")


def ingest_messages(memory: Memory, conv: Conversation, *, with_speaker: bool) -> int:
    """One fast-mode memory per turn, one ``Memory.add`` call per session."""
    stored = 0
    for session in conv.sessions:
        messages = session.messages
        if with_speaker:
            messages = [{**m, "content": f"{m['speaker']}: {m['content']}"} for m in messages]
        if messages:
            stored += len(memory.add(messages, entity_id=conv.sample_id, mode="fast"))
    return stored


def ingest_windows(memory: Memory, conv: Conversation, spec: WindowSpec) -> int:
    """One memory per token window of each session, stored with ``Memory.store``."""
    stored = 0
    scope = Scope(entity_id=conv.sample_id)
    for session in conv.sessions:
        if not session.messages:
            continue
        [turns] = normalize(session.messages).conversations
        scene = spec.max_messages or max(len(turns), spec.message_overlap + 1)
        windows = chat_windows(
            turns,
            max_tokens=spec.max_tokens,
            overlap_tokens=spec.overlap_tokens,
            max_messages=scene,
            message_overlap=spec.message_overlap,
        )
        for window in windows:
            memory.store(
                MemoryItem(
                    text=window.text,
                    sources=list(window.sources),
                    scope=scope,
                    tags=[FAST_TAG],
                    memory_type=MemoryType.EPISODE,
                    valid_from=window.sources[0].timestamp,
                )
            )
            stored += 1
    return stored


def ingester(variant: str) -> Callable[[Memory, Conversation], int]:
    """The ingest function of a variant."""
    if variant in ADD_VARIANTS:
        speaker = variant == "message+speaker"
        return lambda memory, conv: ingest_messages(memory, conv, with_speaker=speaker)
    spec = WINDOWS[variant]
    return lambda memory, conv: ingest_windows(memory, conv, spec)


def run_variant(variant: str, conversations: Sequence[Conversation], k: int = K) -> dict[str, Any]:
    """Ingest every conversation into a fresh store, then recall and score every question."""
    ingest = ingester(variant)
    root = Path(tempfile.mkdtemp(prefix="memtrellis-fast-unit-"))
    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    config = ExtractionConfig(**ADD_VARIANTS.get(variant, {}))
    try:
        with Memory(root / "store", extraction=config) as memory:
            started = time.perf_counter()
            stored = sum(ingest(memory, conv) for conv in conversations)
            ingest_s = time.perf_counter() - started
            lines = [
                count_tokens(render_line(item)) + 1
                for conv in conversations
                for item in memory.list(entity_id=conv.sample_id, limit=1_000_000)
            ]
            started = time.perf_counter()
            for conv in conversations:
                for question in conv.scored_questions:
                    t0 = time.perf_counter()
                    result = memory.recall(question.question, entity_id=conv.sample_id, k=k)
                    latencies.append((time.perf_counter() - t0) * 1000.0)
                    hits = [Mapped(m) for m in result.memories]
                    rows.append(score(question.evidence, hits, question.category, k))
                    rows[-1]["id"] = f"{conv.sample_id}#{question.index}"
            recall_s = time.perf_counter() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)
    summary = summarise(rows, METRICS + EXTRA)
    summary.update(
        {
            "memories": stored,
            "tokens_per_memory": round(statistics.fmean(lines), 1),
            "k_bound_at_1000tok": round(
                100.0 * statistics.fmean(float(r["k_bound_1000"]) for r in rows), 1
            ),
            "ingest_s": round(ingest_s, 2),
            "recall_s": round(recall_s, 2),
            "latency_p50_ms": round(percentile(latencies, 0.5), 2),
            "latency_p95_ms": round(percentile(latencies, 0.95), 2),
        }
    )
    return {"summary": summary, "rows": rows}


def score(
    evidence: Sequence[str], memories: Sequence[Any], category: int, k: int = K
) -> dict[str, Any]:
    """The metrics of one question from its recalled memories (best first)."""
    r500, t500 = recall_within_budget(evidence, memories, 500)
    r1000, t1000 = recall_within_budget(evidence, memories, 1000)
    costs = [count_tokens(render_line(m)) + 1 for m in memories]
    return {
        "category": category,
        "recall@5": recall_at_k(evidence, memories, 5),
        "recall@10": recall_at_k(evidence, memories, 10),
        "recall@500tok": r500,
        "recall@1000tok": r1000,
        "tokens@5": sum(costs[:5]),
        "tokens@10": sum(costs[:10]),
        "tokens@500tok": t500,
        "tokens@1000tok": t1000,
        # Every one of the k memories fit: the budget figure is bounded by k, not tokens.
        "k_bound_1000": len(memories) == k and sum(costs) <= 1000,
    }


def print_tables(results: dict[str, dict[str, Any]], k: int = K) -> None:
    """The overall table, the per-category table and the paired differences."""
    print()
    head = (
        f"{'variant':<16} {'memories':>8} {'tok/mem':>7} {'R@5':>6} {'R@10':>6}"
        f" {'R@500t':>7} {'R@1000t':>8} {'tok@5':>6} {'tok@10':>7} {'ingest s':>9}"
        f" {'p50 ms':>7} {'k-bound%':>8}"
    )
    print(head)
    print("-" * len(head))
    for variant, result in results.items():
        s = result["summary"]
        print(
            f"{variant:<16} {s['memories']:>8} {s['tokens_per_memory']:>7.1f}"
            f" {s['recall@5']:>6.1f} {s['recall@10']:>6.1f} {s['recall@500tok']:>7.1f}"
            f" {s['recall@1000tok']:>8.1f} {s['tokens@5']:>6.0f} {s['tokens@10']:>7.0f}"
            f" {s['ingest_s']:>9.1f} {s['latency_p50_ms']:>7.1f} {s['k_bound_at_1000tok']:>8.1f}"
        )
    print(
        f"(tok@N: mean tokens of the top N rendered; k-bound%: questions whose {k} recalled"
        " memories all fit in 1,000 tokens, so k rather than the budget capped them)"
    )
    print()
    categories = [
        name
        for name in CATEGORY_NAMES.values()
        if any(name in r["summary"]["by_category"] for r in results.values())
    ]
    print("by category (recall@10 / recall within 1,000 tokens; n = questions)")
    first = next(iter(results.values()))["summary"]["by_category"]
    head = f"{'variant':<16}" + "".join(
        f" {name + ' n=' + str(first.get(name, {}).get('questions', 0)):>22}" for name in categories
    )
    print(head)
    for variant, result in results.items():
        by = result["summary"]["by_category"]
        cells = "".join(
            f" {by[name]['recall@10']:>10.1f} / {by[name]['recall@1000tok']:>7.1f}"
            if name in by
            else f" {'-':>20}"
            for name in categories
        )
        print(f"{variant:<16}{cells}")


def paired(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Each variant minus ``message``, per metric: [difference, low, high] in points."""
    base = results.get("message")
    out: dict[str, dict[str, list[float]]] = {}
    if base is None:
        return out
    print()
    print("difference to `message`, points, paired bootstrap 95% interval")
    for variant, result in results.items():
        if variant == "message":
            continue
        out[variant] = {}
        cells: list[str] = []
        for metric in METRICS:
            a = [float(r[metric]) for r in result["rows"]]
            b = [float(r[metric]) for r in base["rows"]]
            diff, low, high = paired_bootstrap(a, b)
            out[variant][metric] = [round(100 * diff, 1), round(100 * low, 1), round(100 * high, 1)]
            cells.append(f"{metric} {100 * diff:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]")
        print(f"{variant:<16} " + "  ".join(cells))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen variants, print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo file (default: shared)")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--k", type=int, default=K, help="memories recalled per question")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=list(DEFAULT_VARIANTS),
        choices=[*MESSAGE_VARIANTS, *WINDOWS],
    )
    parser.add_argument("--json", type=Path, default=results_dir() / "fast_unit.json")
    parser.add_argument(
        "--split", action="store_true", help="send longer turns as bursts of short messages"
    )
    parser.add_argument("--seed", type=int, default=21, help="seed of --split")
    args = parser.parse_args(argv)
    code = code_version()  # what this process imported, before anyone commits more

    path = data_path_or_none(args.data)
    if path is None:
        return 0
    conversations = load_locomo(path)[: args.limit_conversations]
    if args.split:
        conversations = [split_into_bursts(c, args.seed) for c in conversations]
    questions = sum(len(c.scored_questions) for c in conversations)
    print(
        f"{len(conversations)} conversations, "
        f"{sum(len(c.messages) for c in conversations)} turns, "
        f"{questions} questions with evidence; k={args.k}"
    )
    wall = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    for variant in args.variants:
        started = time.perf_counter()
        results[variant] = run_variant(variant, conversations, args.k)
        print(f"  {variant}: {time.perf_counter() - started:.1f} s", flush=True)
    print_tables(results, args.k)
    differences = paired(results)
    elapsed = time.perf_counter() - wall
    print(f"\nran in {elapsed:.1f} s")

    payload = {
        "data": path.name,
        "code": code,
        "conversations": [c.sample_id for c in conversations],
        "questions": questions,
        "k": args.k,
        "split_into_bursts": {"seed": args.seed} if args.split else None,
        "add_variants": {v: ADD_VARIANTS[v] for v in results if v in ADD_VARIANTS},
        "windows": {name: vars(spec) for name, spec in WINDOWS.items() if name in results},
        "variants": {variant: result["summary"] for variant, result in results.items()},
        "difference_to_message": differences,
        "elapsed_s": round(elapsed, 1),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
