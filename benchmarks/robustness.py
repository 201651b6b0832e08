"""Robustness of recall on LoCoMo dev: typos, bursts and shuffled sessions, against the clean run.

Issue 21, item 5. Each condition perturbs every conversation (``_perturb``, seeded with
``--seed``) and is ingested into fresh indexes; memtrellis (fast mode, the defaults:
``Memory.add(session, mode="fast")`` per session, ``Memory.recall``), plain BM25 and
stop-word BM25 (``locomo.BM25``, over the same turns) are scored in the same run:

* ``clean``: LoCoMo as it is;
* ``typos``: 15% of the words of 4+ letters in every turn *and* question get one typo
  (swap, drop, double, neighbouring key);
* ``bursts``: every turn of more than one sentence is sent as a burst of up to 3
  messages seconds apart (a memory holding any piece of an evidence turn counts for it);
* ``shuffled``: the sessions' dates are permuted and the sessions ingested in that new
  order of time;
* ``all``: the three at once.

Per condition and system: recall@10 (top 10 of ``k=25``) and recall within 1,000 tokens
(top ``--budget-k``, each hit ``- text`` as ``_locomo.render_line`` counts it), and the
drop against ``clean`` in points. Figures go to ``benchmarks/results/robustness.json``.

    python benchmarks/robustness.py
    python benchmarks/robustness.py --limit-conversations 1 --conditions clean typos
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _locomo import (
    Conversation,
    code_version,
    data_path_or_none,
    load_locomo,
    recall_at_k,
    recall_within_budget,
    results_dir,
    summarise,
)
from _perturb import Mapped, shuffle_sessions, split_into_bursts, with_typos
from locomo import BM25, turns_of

from memtrellis import Memory
from memtrellis.embeddings import default_embedder
from memtrellis.store.keyword import tokenize as keyword_tokenize

RANK_K = 25
BUDGET_K = 150
METRICS = ("recall@10", "recall@1000tok")
SYSTEMS = ("memtrellis", "bm25", "bm25 -stopwords")

Perturb = Callable[[Conversation, int], Conversation]


def _all(conv: Conversation, seed: int) -> Conversation:
    return shuffle_sessions(split_into_bursts(with_typos(conv, seed), seed), seed)


CONDITIONS: dict[str, Perturb] = {
    "clean": lambda conv, seed: conv,
    "typos": with_typos,
    "bursts": split_into_bursts,
    "shuffled": shuffle_sessions,
    "all": _all,
}


def run_condition(
    name: str, conversations: Sequence[Conversation], seed: int, memory: Memory
) -> dict[str, list[dict[str, Any]]]:
    """Ingest one perturbed copy of every conversation; rows per system."""
    perturbed = [CONDITIONS[name](conv, seed) for conv in conversations]
    rows: dict[str, list[dict[str, Any]]] = {system: [] for system in SYSTEMS}
    for conv in perturbed:
        entity = f"{name}-{conv.sample_id}"
        for session in conv.sessions:
            if session.messages:
                memory.add(session.messages, entity_id=entity, mode="fast")
        turns = turns_of(conv)
        baselines = {
            "bm25": BM25(turns),
            "bm25 -stopwords": BM25(turns, tokenize=keyword_tokenize),
        }
        for question in conv.scored_questions:
            ranked = memory.recall(question.question, entity_id=entity, k=RANK_K).memories
            deep = memory.recall(question.question, entity_id=entity, k=BUDGET_K).memories
            hits: dict[str, tuple[list[Any], list[Any]]] = {"memtrellis": (ranked, deep)}
            for system, index in baselines.items():
                found = index.search(question.question, BUDGET_K)
                hits[system] = (found[:RANK_K], found)
            for system, (top, many) in hits.items():
                evidence = question.evidence
                rows[system].append(
                    {
                        "category": question.category,
                        "recall@10": recall_at_k(evidence, [Mapped(h) for h in top], 10),
                        "recall@1000tok": recall_within_budget(
                            evidence, [Mapped(h) for h in many], 1000
                        )[0],
                    }
                )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conditions, print the table of drops, write the JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument(
        "--conditions", nargs="+", default=list(CONDITIONS), choices=list(CONDITIONS)
    )
    parser.add_argument("--json", type=Path, default=results_dir() / "robustness.json")
    args = parser.parse_args(argv)
    code = code_version()
    path = data_path_or_none(args.data)
    if path is None:
        return 0
    conversations = load_locomo(path)[: args.limit_conversations]
    conditions = list(dict.fromkeys(["clean", *args.conditions]))
    print(
        f"{len(conversations)} conversations, "
        f"{sum(len(c.scored_questions) for c in conversations)} questions with evidence; "
        f"conditions {', '.join(conditions)}; seed {args.seed}; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    began = time.perf_counter()
    embedder = default_embedder()
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="memtrellis-robust-", ignore_cleanup_errors=True) as tmp,
        Memory(Path(tmp) / "store", embedder=embedder) as memory,
    ):
        for name in conditions:
            started = time.perf_counter()
            rows = run_condition(name, conversations, args.seed, memory)
            figures[name] = {s: summarise(r, METRICS) for s, r in rows.items()}
            cells = ", ".join(
                f"{s} {f['recall@10']:.1f} / {f['recall@1000tok']:.1f}"
                for s, f in figures[name].items()
            )
            print(f"  {name}: {time.perf_counter() - started:.1f} s; {cells}", flush=True)
    clean = figures["clean"]
    print()
    head = f"{'condition':<10}" + "".join(f" {s + ' R@10 / R@1000t (drop)':>44}" for s in SYSTEMS)
    print(head)
    print("-" * len(head))
    drops: dict[str, dict[str, dict[str, float]]] = {}
    for name, by_system in figures.items():
        cells = ""
        drops[name] = {}
        for system in SYSTEMS:
            s, base = by_system[system], clean[system]
            d10 = round(s["recall@10"] - base["recall@10"], 1)
            d1000 = round(s["recall@1000tok"] - base["recall@1000tok"], 1)
            drops[name][system] = {"recall@10": d10, "recall@1000tok": d1000}
            cells += (
                f" {s['recall@10']:>9.1f} / {s['recall@1000tok']:>5.1f}"
                f" ({d10:+5.1f} / {d1000:+5.1f})".rjust(44)
            )
        print(f"{name:<10}{cells}")
    margins = {
        name: round(by["memtrellis"]["recall@10"] - by["bm25 -stopwords"]["recall@10"], 1)
        for name, by in figures.items()
    }
    print(
        "\nmemtrellis recall@10 minus stop-word BM25, points: "
        + ", ".join(f"{name} {margin:+.1f}" for name, margin in margins.items())
    )
    elapsed = time.perf_counter() - began
    print(f"ran in {elapsed:.1f} s")
    payload = {
        "data": path.name,
        "code": code,
        "seed": args.seed,
        "conversations": [c.sample_id for c in conversations],
        "embedder": embedder.model_id,
        "figures": figures,
        "drop_vs_clean": drops,
        "memtrellis_minus_bm25_stopwords_recall@10": margins,
        "elapsed_s": round(elapsed, 1),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
