"""Embedders and rerankers side by side: LoCoMo dev recall and recall latency, one table.

For each embedder named with ``--embedders`` (``memtrellis.embeddings.catalog``) the
script builds one store of LoCoMo's raw turns (``Memory.add(..., mode="fast")`` per
session, as ``locomo.py`` does) and asks every scored question of every conversation
through ``Memory.recall`` with no reranker and with each ``--rerankers`` stage (the same
store: the stage is switched between calls), beside plain BM25, stop-word BM25 and a bare
Chroma collection of the same embedder's vectors, all in one process and interleaved
question by question. Recall@10 comes from the timed k=25 call, recall within 1,000
tokens from an untimed k=``--budget-k`` call (``locomo.py``'s definitions).

Then, unless ``--latency-size 0``, a synthetic store of ``--latency-size`` chat memories
(``_synth.py``, 10 users, half of them held by one) is built per embedder, and that
user's recall p50 (k=10, graph context on, with and without each reranker) is timed
beside the bare Chroma floor (``embed_query`` + ``collection.query(n_results=10)``) in
the same process, interleaved; the table gives the ratio to that floor. At 100k memories
``latency.py`` measures the default the same way; the embedder's share of a recall and
the reranker's cost do not grow with the store, the rest does alike for every embedder.

    python benchmarks/ranking.py --limit-conversations 2 --latency-size 2000
    python benchmarks/ranking.py --embedders minilm,minilm-l3,static --rerankers minilm-maxsim@20

A reranker spec is ``NAME@DEPTH`` or ``NAME@DEPTHxWEIGHT`` (``minilm-maxsim@20x0.5``).
Figures go to ``--json`` (default ``benchmarks/results/ranking.json``); the table is
printed as Markdown (``--docs`` writes it into the "Embedders and reranking" section of
``docs/benchmarks.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _locomo import data_path_or_none, load_locomo, percentile, repo_root, results_dir
from locomo import BM25, BUDGET_K_DEFAULT, RANK_K, DenseBaseline, ingest_raw, score, turns_of

from memtrellis import Memory
from memtrellis._engine import engine_of
from memtrellis.embeddings import as_embedder
from memtrellis.embeddings.catalog import named_reranker
from memtrellis.recall.rerank import RerankStage, as_reranker
from memtrellis.store.keyword import tokenize as keyword_tokenize

SECTION = "## Embedders and reranking"


class Remembered:
    """A reranker that keeps its scores per (query, text): the untimed deep call of a
    question reuses what its timed call computed (same scores, so the same order)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.known: dict[tuple[str, str], float] = {}

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        missing = [t for t in dict.fromkeys(texts) if (query, t) not in self.known]
        if missing:
            for text, value in zip(missing, self.inner.score(query, missing), strict=True):
                self.known[(query, text)] = float(value)
        return [self.known[(query, t)] for t in texts]


def parse_stage(spec: str, remember: bool = False) -> RerankStage:
    """``NAME@DEPTH[xWEIGHT]`` as a stage (its model wrapped in `Remembered` if asked)."""
    name, _, rest = spec.partition("@")
    depth, _, weight = (rest or "20").partition("x")
    model = named_reranker(name)
    if remember:
        model = Remembered(model)
    return as_reranker(model, depth=int(depth), weight=float(weight) if weight else None)


def label(embedder: str, spec: str | None) -> str:
    return embedder if spec is None else f"{embedder} + {spec}"


def locomo_run(args: argparse.Namespace, data: Path, root: Path) -> dict[str, Any]:
    """Recall figures (and p50 on LoCoMo) for every embedder x reranker, BM25s, dense."""
    conversations = load_locomo(data)[: args.limit_conversations]
    questions = [(c, q) for c in conversations for q in c.scored_questions]
    if args.limit_questions:
        questions = random.Random(7).sample(questions, min(args.limit_questions, len(questions)))
        questions.sort(key=lambda cq: conversations.index(cq[0]))
    print(f"LoCoMo {data.name}: {len(conversations)} conversations, {len(questions)} questions")
    systems: dict[str, Callable[[str, str, int], list[Any]]] = {}
    ingest: dict[str, float] = {}
    memories: list[Memory] = []
    for name in args.embedders:
        embedder = as_embedder(name)
        embedder.embed_documents(["load the model before timing anything"])
        memory = Memory(root / f"locomo-{name}", embedder=embedder)
        memories.append(memory)
        started = time.perf_counter()
        for conv in conversations:
            ingest_raw(memory, conv)
        ingest[name] = round(time.perf_counter() - started, 1)
        print(f"  {name}: {len(conversations)} conversations stored in {ingest[name]} s")
        parts = engine_of(memory).parts
        for spec in [None, *(args.rerankers if name in args.rerank_with else ())]:
            stage = parse_stage(spec, remember=True) if spec else None

            def search(
                conv_id: str, q: str, k: int, m: Memory = memory, s: Any = stage, p: Any = parts
            ) -> Any:
                p.reranker = s
                return m.recall(q, entity_id=conv_id, k=k).memories

            systems[label(name, spec)] = search
        if name in args.dense_for:
            dense = DenseBaseline(embedder, root / f"dense-{name}")
            for conv in conversations:
                dense.ingest(conv)
            systems[f"dense ({name})"] = dense.search
    plain = {c.sample_id: BM25(turns_of(c)) for c in conversations}
    stopped = {c.sample_id: BM25(turns_of(c), tokenize=keyword_tokenize) for c in conversations}
    systems["bm25"] = lambda c, q, k: plain[c].search(q, k)
    systems["bm25 -stopwords"] = lambda c, q, k: stopped[c].search(q, k)

    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in systems}
    try:
        for conv in conversations:
            for search in systems.values():
                search(conv.sample_id, "warm-up", RANK_K)
        names = list(systems)
        for index, (conv, question) in enumerate(questions):
            shift = index % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                ranked = systems[name](conv.sample_id, question.question, RANK_K)
                ms = (time.perf_counter() - started) * 1000.0
                deep = systems[name](conv.sample_id, question.question, args.budget_k)
                rows[name].append(score(question, ranked, deep, ms, args.budget_k))
            if (index + 1) % 100 == 0:
                print(f"  {index + 1}/{len(questions)} questions", flush=True)
    finally:
        for memory in memories:
            memory.close()
    out: dict[str, Any] = {}
    for name, chosen in rows.items():
        out[name] = {
            "recall@10": round(100 * statistics.fmean(r["recall@10"] for r in chosen), 1),
            "recall@1000tok": round(100 * statistics.fmean(r["recall@1000tok"] for r in chosen), 1),
            "locomo_p50_ms": round(percentile([r["latency_ms"] for r in chosen], 0.5), 2),
        }
    return {"questions": len(questions), "ingest_s": ingest, "systems": out}


def latency_run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Recall p50 (none / each reranker) and the bare Chroma p50 at ``--latency-size``."""
    from _synth import UserStream
    from latency import pick_questions, sessions

    from memtrellis.store import collection_name
    from memtrellis.testing import store_of

    size = args.latency_size
    heavy = size // 2
    users = {"user-00": heavy, **{f"user-{n:02d}": (size - heavy) // 9 for n in range(1, 10)}}
    streams = {u: UserStream(u, seed=7).take(n) for u, n in users.items()}
    queries = [q["question"] for q in pick_questions(streams["user-00"], args.queries, 7)]
    out: dict[str, Any] = {"memories": sum(users.values()), "queries": len(queries)}
    for name in args.embedders:
        embedder = as_embedder(name)
        store = root / f"latency-{name}"
        started = time.perf_counter()
        with Memory(store, embedder=embedder) as memory:
            for user, messages in streams.items():
                for group in sessions(messages):
                    memory.add(
                        [m.as_dict() for m in group],
                        entity_id=user,
                        entities=list(group[0].entities),
                        mode="fast",
                    )
        built = round(time.perf_counter() - started, 1)
        print(f"  {name}: {out['memories']} memories stored in {built} s", flush=True)
        with Memory(store, embedder=embedder) as memory:
            parts = engine_of(memory).parts
            collection = store_of(memory).vectors._client.get_collection(
                collection_name("user-00"), embedding_function=None
            )

            def bare(q: str, e: Any = embedder, c: Any = collection) -> None:
                c.query(query_embeddings=[e.embed_query(q)], n_results=10, include=["distances"])

            def ours(q: str, s: Any, m: Memory = memory, p: Any = parts) -> None:
                p.reranker = s
                m.recall(q, entity_id="user-00", k=10)

            modes: dict[str, Callable[[str], None]] = {
                "bare": bare,
                label(name, None): lambda q: ours(q, None),
            }
            for spec in args.rerankers if name in args.rerank_with else ():
                stage = parse_stage(spec)
                modes[label(name, spec)] = lambda q, s=stage: ours(q, s)
            samples: dict[str, list[float]] = {m: [] for m in modes}
            order = list(modes)
            for q in queries[:10]:
                for call in modes.values():
                    call(q)
            for index, q in enumerate(queries):
                shift = index % len(order)
                for mode in order[shift:] + order[:shift]:
                    t = time.perf_counter()
                    modes[mode](q)
                    samples[mode].append((time.perf_counter() - t) * 1000.0)
            bare_p50 = percentile(samples["bare"], 0.5)
            figures: dict[str, Any] = {"build_s": built, "bare_p50_ms": round(bare_p50, 2)}
            for mode in order[1:]:
                p50 = percentile(samples[mode], 0.5)
                figures[mode] = {"p50_ms": round(p50, 2), "ratio_to_bare": round(p50 / bare_p50, 2)}
            out[name] = figures
    return out


def table(doc: dict[str, Any]) -> str:
    """The trade-off table (Markdown)."""
    systems = doc["locomo"]["systems"]
    stop = systems["bm25 -stopwords"]["recall@10"]
    latency = doc.get("latency") or {}
    size = latency.get("memories")
    head = "| system | recall@10 | vs stop-word BM25 | within 1,000 tokens | p50 on LoCoMo (ms) |"
    rule = "|---|--:|--:|--:|--:|"
    if size:
        head += f" p50 at {size:,} (ms) | × bare Chroma |"
        rule += "--:|--:|"
    head += " points over stop-word BM25 per ms |"
    rule += "--:|"
    lines = [head, rule]
    for name, figures in systems.items():
        cells = [
            name,
            f"{figures['recall@10']:.1f}",
            f"{figures['recall@10'] - stop:+.1f}" if name != "bm25 -stopwords" else "",
            f"{figures['recall@1000tok']:.1f}",
            f"{figures['locomo_p50_ms']:.1f}",
        ]
        if size:
            embedder = name.split(" + ")[0]
            timed = (latency.get(embedder) or {}).get(name)
            if name.startswith("dense ("):
                bare = (latency.get(name[7:-1]) or {}).get("bare_p50_ms")
                cells += [f"{bare:.1f}" if bare else "", "1.00" if bare else ""]
            else:
                cells += (
                    [f"{timed['p50_ms']:.1f}", f"{timed['ratio_to_bare']:.2f}"]
                    if timed
                    else ["", ""]
                )
        p50 = figures["locomo_p50_ms"]
        if size and cells[-2]:
            p50 = float(cells[-2])
        gain = figures["recall@10"] - stop
        cells.append(f"{gain / p50:.2f}" if name.split(" ")[0] in latency or not size else "")
        if name.startswith(("bm25", "dense")):
            cells[-1] = ""
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_docs(path: Path, doc: dict[str, Any]) -> None:
    """Replace the table between the section's ``<!-- ranking table -->`` markers."""
    text = path.read_text(encoding="utf-8")
    start, end = "<!-- ranking table -->", "<!-- /ranking table -->"
    if start not in text or end not in text:
        sys.exit(f"{path} has no {start} ... {end} markers under {SECTION!r}")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    path.write_text(f"{before}{start}\n{table(doc)}\n{end}{after}", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument(
        "--limit-questions", type=int, default=None, metavar="N", help="a seeded sample of N"
    )
    parser.add_argument("--embedders", default="minilm,minilm-l3,static")
    parser.add_argument("--rerankers", default="minilm-maxsim@20", help="comma-separated specs")
    parser.add_argument(
        "--rerank-with", default="minilm", help="embedders the rerankers run after (comma list)"
    )
    parser.add_argument(
        "--dense-for", default="minilm", help="embedders with a bare Chroma row (comma list)"
    )
    parser.add_argument(
        "--only", choices=("locomo", "latency"), default=None, help="measure one part only"
    )
    parser.add_argument(
        "--merge", type=Path, default=None, metavar="JSON", help="take the other part from JSON"
    )
    parser.add_argument("--budget-k", type=int, default=BUDGET_K_DEFAULT)
    parser.add_argument("--latency-size", type=int, default=10_000, help="0: skip")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--render-from", type=Path, default=None, metavar="JSON")
    parser.add_argument(
        "--docs", nargs="?", type=Path, const=repo_root() / "docs" / "benchmarks.md", default=None
    )
    args = parser.parse_args(argv)
    args.embedders = [e for e in args.embedders.split(",") if e]
    args.rerankers = [r for r in args.rerankers.split(",") if r]
    args.rerank_with = [e for e in args.rerank_with.split(",") if e]
    args.dense_for = [e for e in args.dense_for.split(",") if e]
    if args.render_from is not None:
        doc = json.loads(args.render_from.read_text(encoding="utf-8"))
    else:
        data = data_path_or_none(args.data)
        if data is None:
            return 0
        began = time.perf_counter()
        random.seed(7)
        with tempfile.TemporaryDirectory(prefix="memtrellis-ranking-") as tmp:
            doc = {
                "meta": {
                    "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    "data": data.name,
                    "embedders": args.embedders,
                    "rerankers": args.rerankers,
                    "cpus": os.cpu_count(),
                    "load_average_before": round(os.getloadavg()[0], 2),
                },
            }
            if args.only != "latency":
                doc["locomo"] = locomo_run(args, data, Path(tmp))
            if args.latency_size and args.only != "locomo":
                doc["latency"] = latency_run(args, Path(tmp))
        if args.merge is not None:
            other = json.loads(args.merge.read_text(encoding="utf-8"))
            for part in ("locomo", "latency"):
                if part not in doc and part in other:
                    doc[part] = other[part]
                    doc["meta"][f"{part}_from"] = {"file": args.merge.name, **other["meta"]}
        doc["meta"]["runtime_s"] = round(time.perf_counter() - began, 1)
        doc["meta"]["load_average_after"] = round(os.getloadavg()[0], 2)
        out = args.json or results_dir() / "ranking.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        print(f"figures written to {out}")
    if "locomo" in doc:
        print(table(doc))
    if args.docs is not None:
        write_docs(args.docs, doc)
        print(f"table written to {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
