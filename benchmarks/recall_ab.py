"""A/B of recall mechanisms on LoCoMo dev, clean and perturbed like a real chat, in one run.

Issue 21. Each *variant* switches one mechanism of `memtrellis.recall` off (or a
parameter to another value) by setting module attributes for the length of its recall
calls; every variant is asked every question of the same stores, the variants interleaved
question by question, beside stop-word BM25 over the same turns. A mechanism is kept when
it helps without hurting a category or a condition.

Conditions (``_perturb``, seeded): those of ``robustness.py`` (``clean``, ``typos``,
``bursts``, ``shuffled``, ``all``), ``chatter`` (short reactions such as "lol same"
slipped in after 40% of the turns) and ``chat`` (typos, bursts and reactions at once:
what a real chat log looks like from the properties issue 21 names). Per condition and
variant: recall@10 (top 10 of ``k=25``), recall within 1,000 tokens (top 150), recall p50
(ms), and the paired difference against the first variant
with its bootstrap 95% interval; per category, and split into the conversations used for
choosing parameters (``--tune``) and the others (held-out view).

    python benchmarks/recall_ab.py --conditions clean chat --variants on no-fuzzy
    python benchmarks/recall_ab.py --limit-conversations 2 --questions 60 --variants on off
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
    results_dir,
)
from _perturb import Mapped, split_into_bursts, with_chatter, with_typos
from locomo import BM25, turns_of
from robustness import BUDGET_K, METRICS, RANK_K
from robustness import CONDITIONS as PERTURBED

from memtrellis import Memory
from memtrellis.embeddings import default_embedder
from memtrellis.store.keyword import tokenize as keyword_tokenize

BASELINE = "bm25 -stopwords"
#: Conversations parameters may be chosen on; the others are the held-out view.
TUNE = ("conv-26", "conv-30", "conv-42")


def _chat(conv: Conversation, seed: int) -> Conversation:
    return with_chatter(split_into_bursts(with_typos(conv, seed), seed), seed)


# robustness.py's conditions (clean, typos, bursts, shuffled, all), and reactions.
CONDITIONS = {**PERTURBED, "chatter": with_chatter, "chat": _chat}

#: Variant name -> the module attributes it sets (``module:ATTR`` -> value) while it runs.
VARIANTS: dict[str, dict[str, Any]] = {
    "on": {},
    "no-graph": {"memtrellis.recall.hybrid:GRAPH_OFF": True},
    "no-fuzzy": {"memtrellis.store.keyword:FUZZY": False},
    "no-slight": {"memtrellis.recall.neighbours:SKIP_SLIGHT": False},
    "before": {
        "memtrellis.store.keyword:FUZZY": False,
        "memtrellis.recall.neighbours:SKIP_SLIGHT": False,
    },
    "dense-0.4": {"memtrellis.recall.hybrid:DENSE_WEIGHT": 0.4},
    "dense-0.6": {"memtrellis.recall.hybrid:DENSE_WEIGHT": 0.6},
    "fetch-200": {"memtrellis.recall.hybrid:_MIN_FETCH": 200},
}


@contextmanager
def patched(settings: dict[str, Any]) -> Iterator[None]:
    """Set the module attributes of a variant, and put them back after."""
    saved: list[tuple[Any, str, Any]] = []
    try:
        for target, value in settings.items():
            module_name, attr = target.split(":")
            module = importlib.import_module(module_name)
            saved.append((module, attr, getattr(module, attr)))
            setattr(module, attr, value)
        yield
    finally:
        for module, attr, value in reversed(saved):
            setattr(module, attr, value)


def _row(question: Any, top: Sequence[Any], many: Sequence[Any]) -> dict[str, Any]:
    return {
        "conversation": question.conversation,
        "category": question.category,
        "recall@10": recall_at_k(question.evidence, [Mapped(h) for h in top], 10),
        "recall@1000tok": recall_within_budget(question.evidence, [Mapped(h) for h in many], 1000)[
            0
        ],
    }


def run_condition(
    name: str,
    conversations: Sequence[Conversation],
    seed: int,
    memory: Memory,
    variants: Sequence[str],
    questions: int | None,
) -> dict[str, list[dict[str, Any]]]:
    """Ingest one perturbed copy of every conversation; rows per variant and baseline."""
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in [*variants, BASELINE]}
    for conv in (CONDITIONS[name](c, seed) for c in conversations):
        entity = f"{name}-{conv.sample_id}"
        for session in conv.sessions:
            if session.messages:
                memory.add(session.messages, entity_id=entity, mode="fast")
        baseline = BM25(turns_of(conv), tokenize=keyword_tokenize)
        memory.recall("warm-up", entity_id=entity, k=RANK_K)
        for question in conv.scored_questions[:questions]:
            for variant in variants:
                graph = not VARIANTS[variant].get("memtrellis.recall.hybrid:GRAPH_OFF", False)
                settings = {
                    k: v for k, v in VARIANTS[variant].items() if not k.endswith(":GRAPH_OFF")
                }
                with patched(settings):
                    started = time.perf_counter()
                    top = memory.recall(
                        question.question, entity_id=entity, k=RANK_K, graph_context=graph
                    ).memories
                    latency = (time.perf_counter() - started) * 1000.0
                    many = memory.recall(
                        question.question, entity_id=entity, k=BUDGET_K, graph_context=graph
                    ).memories
                row = _row(question, top, many)
                row["latency_ms"] = latency
                rows[variant].append(row)
            found = baseline.search(question.question, BUDGET_K)
            rows[BASELINE].append(_row(question, found[:RANK_K], found))
        print(f"  {name} {conv.sample_id}: done", flush=True)
    return rows


def _mean(rows: Sequence[dict[str, Any]], metric: str) -> float:
    return 100.0 * statistics.fmean(float(r[metric]) for r in rows) if rows else float("nan")


def figures(
    rows: dict[str, list[dict[str, Any]]], reference: str, tune: Sequence[str]
) -> dict[str, Any]:
    """Means, paired differences against ``reference``, per category and split."""
    out: dict[str, Any] = {}
    base = rows[reference]
    for variant, chosen in rows.items():
        entry: dict[str, Any] = {m: round(_mean(chosen, m), 1) for m in METRICS}
        if variant != BASELINE:
            entry["p50_ms"] = round(percentile([r["latency_ms"] for r in chosen], 0.5), 2)
        for metric in METRICS:
            a = [100.0 * r[metric] for r in chosen]
            b = [100.0 * r[metric] for r in base]
            if variant != reference:
                diff, low, high = paired_bootstrap(a, b)
                entry[f"{metric} vs {reference}"] = [round(diff, 1), round(low, 1), round(high, 1)]
            diff, low, high = paired_bootstrap(a, [100.0 * r[metric] for r in rows[BASELINE]])
            entry[f"{metric} vs {BASELINE}"] = [round(diff, 1), round(low, 1), round(high, 1)]
        entry["by_category"] = {
            CATEGORY_NAMES.get(cat, str(cat)): {
                m: round(_mean([r for r in chosen if r["category"] == cat], m), 1) for m in METRICS
            }
            for cat in sorted({int(r["category"]) for r in chosen})
        }
        for part, keep in (("tune", True), ("held-out", False)):
            picked = [r for r in chosen if (r["conversation"] in tune) == keep]
            entry[part] = {m: round(_mean(picked, m), 1) for m in METRICS}
        out[variant] = entry
    return out


def print_condition(name: str, figs: dict[str, Any], reference: str) -> None:
    """One condition's table."""
    print(f"\n== {name}")
    cats = list(next(iter(figs.values()))["by_category"])
    head = (
        f"{'variant':<22}{'R@10':>6}{'1000t':>7}{'p50':>7}"
        f"{'dR@10 [CI]':>20}{'d1000t [CI]':>20}{'tune R@10/1000t':>17}{'held R@10/1000t':>17}"
        + "".join(f"{c[:9]:>11}" for c in cats)
    )
    print(head)
    for variant, e in figs.items():

        def ci(metric: str, e: dict[str, Any] = e) -> str:
            found = e.get(f"{metric} vs {reference}")
            return f"{found[0]:+.1f} [{found[1]:+.1f},{found[2]:+.1f}]" if found else ""

        cells = "".join(
            f"{e['by_category'][c]['recall@10']:>5.1f}/{e['by_category'][c]['recall@1000tok']:<5.1f}"
            for c in cats
        )
        print(
            f"{variant:<22}{e['recall@10']:>6.1f}{e['recall@1000tok']:>7.1f}"
            f"{e.get('p50_ms', float('nan')):>7.1f}{ci('recall@10'):>20}{ci('recall@1000tok'):>20}"
            f"{e['tune']['recall@10']:>9.1f}/{e['tune']['recall@1000tok']:<7.1f}"
            f"{e['held-out']['recall@10']:>9.1f}/{e['held-out']['recall@1000tok']:<7.1f}" + cells
        )
    ours = figs[reference]
    print(
        f"{reference} - {BASELINE}: R@10 {ours[f'recall@10 vs {BASELINE}']}, "
        f"1000t {ours[f'recall@1000tok vs {BASELINE}']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conditions and variants; print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--conversations", nargs="+", default=None, metavar="ID")
    parser.add_argument("--questions", type=int, default=None, help="per conversation")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--conditions", nargs="+", default=["clean", "chat"], choices=CONDITIONS)
    parser.add_argument("--variants", nargs="+", default=["on"], choices=VARIANTS)
    parser.add_argument("--tune", nargs="+", default=list(TUNE), metavar="ID")
    parser.add_argument("--json", type=Path, default=results_dir() / "recall_ab.json")
    args = parser.parse_args(argv)
    path = data_path_or_none(args.data)
    if path is None:
        return 0
    conversations = load_locomo(path)
    if args.conversations:
        conversations = [c for c in conversations if c.sample_id in args.conversations]
    conversations = conversations[: args.limit_conversations]
    print(
        f"{len(conversations)} conversations; conditions {' '.join(args.conditions)}; "
        f"variants {' '.join(args.variants)}; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    began = time.perf_counter()
    embedder = default_embedder()
    results: dict[str, Any] = {}
    reference = args.variants[0]
    with (
        tempfile.TemporaryDirectory(prefix="memtrellis-ab-", ignore_cleanup_errors=True) as tmp,
        Memory(Path(tmp) / "store", embedder=embedder) as memory,
    ):
        for name in args.conditions:
            started = time.perf_counter()
            rows = run_condition(
                name, conversations, args.seed, memory, args.variants, args.questions
            )
            results[name] = figures(rows, reference, args.tune)
            print_condition(name, results[name], reference)
            print(f"({time.perf_counter() - started:.0f} s)", flush=True)
    payload = {
        "code": code_version(),
        "conversations": [c.sample_id for c in conversations],
        "tune": args.tune,
        "seed": args.seed,
        "variants": {v: VARIANTS[v] for v in args.variants},
        "results": results,
        "elapsed_s": round(time.perf_counter() - began, 1),
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
