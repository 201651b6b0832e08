"""LoCoMo evidence recall: memtrellis beside plain BM25 and dense-only Chroma, in one run.

The no-LLM retrieval benchmark of ``../shared/bench/README.md`` (issue 4, item 1). The data
is LoCoMo (CC BY-NC 4.0, evaluation only): it is read from ``../shared/bench/`` beside the
repository (or ``--data PATH``, any file in the ``locomo10.json`` schema) and never
copied into the project. When the file is missing the script says so and exits 0.

Systems, each ingesting the same conversations (one entity per conversation):

* ``memtrellis`` (raw turns): every turn through ``Memory.add(session, mode="fast")``, one
  call per session, keeping the dia_id as the source message id, the speaker and the
  session date; queried with ``Memory.recall(question, entity_id=conv, k=K)``;
* ``memtrellis -graph``: the same store, ``recall(..., graph_context=False)`` (ablation);
* ``memtrellis obs`` (observations mode): the dataset's ``observation`` facts stored with
  ``Memory.store`` as pre-built ``MemoryItem`` facts, one ``SourceRef`` per source dia_id
  (standing in for LLM extraction), queried the same way;
* ``bm25``: plain Okapi BM25 written here (k1 1.5, b 0.75, lower-cased ``\\w+`` tokens, no
  stopwords, no speaker prefix) over the raw turn texts;
* ``dense``: a bare Chroma collection per conversation (cosine space, the library's HNSW
  settings, ``embedding_function=None``) holding the same embedder's vectors of the raw
  turn texts, queried with the same embedder's query vector.

For every question with evidence, each system is asked twice and scored by the fraction
of the evidence dia_ids among the source message ids of what it returned:

* for its top 25 (timed): recall@1/5/10/25, tokens per query (the top 10 rendered) and
  latency p50/p95. ``Memory.recall`` fetches ``max(4k, 100)`` candidates from each search,
  so its top 10 is the same for any k up to 25 (what an application asking for 10 gets);
* for its top ``--budget-k`` (default 150, untimed; enough that the 2,000-token figure is
  rarely cut short by k): recall within 250/500/1,000/2,000 tokens of memory context (each
  memory rendered by ``_locomo.render_line``, o200k_base, best first until the next would
  not fit), as an application asking for "as many as fit" gets.

Figures are given overall, per category and per conversation, with the ingest time.
Paired bootstrap 95% intervals of memtrellis minus each baseline are printed for
recall@10 and recall@1000tok.

Latency is wall-clock around one query call, systems interleaved question by question
(after one untimed warm-up query per conversation and system):

* memtrellis: ``Memory.recall`` end to end (query embedding, Chroma, BM25, fusion, graph
  context, detached copies, the recall-count write);
* dense: query embedding and the Chroma query;
* bm25: tokenising and scoring in pure Python (no embedding).

Figures go to ``--json`` (default ``benchmarks/results/locomo.json``) as
``{"memtrellis": ..., "bm25": ..., "dense": ..., ...}`` (each with ``recall@5``,
``recall@10``, ``recall@1000tok``, ``tokens_per_query``, ``latency_p50_ms``,
``latency_p95_ms`` and more, overall and under ``by_category`` / ``by_conversation``;
``memtrellis`` is raw turns unless ``--mode observations``), the plots to
``benchmarks/results/locomo_recall_vs_tokens.png`` and
``benchmarks/results/locomo_recall10_by_category.png`` (needs matplotlib), and with
``--docs`` the ``## LoCoMo evidence recall`` section of ``docs/benchmarks.md`` (only that
section is replaced; ``_locomo_report.py`` writes it). The stores are written as
``Memory`` writes them by default (no LLM: the relation rules); ``--relation-model``
writes them with the offline relation model too, to see what it changes.

    . /tmp/dev/bin/activate
    python benchmarks/locomo.py --docs                   # all conversations, both modes
    python benchmarks/locomo.py --mode raw --limit-conversations 2 --no-plots
    python benchmarks/locomo.py --data other_locomo.json --json /tmp/locomo.json
    python benchmarks/locomo.py --mode observations --relation-model --no-plots --json /tmp/m.json
    python benchmarks/locomo.py --render-from benchmarks/results/locomo.json --docs
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _locomo import (
    CATEGORY_NAMES,
    Conversation,
    Question,
    data_path_or_none,
    default_data_path,
    line_tokens,
    load_locomo,
    paired_bootstrap,
    percentile,
    recall_at_k,
    recall_within_budgets,
    repo_root,
    results_dir,
    summarise,
)
from _locomo_report import (
    BM25_STOP,
    NO_GRAPH,
    OBS,
    ORDER,
    RAW,
    SECTION_HEADING,
    markdown_section,
    plot,
    report,
    write_section,
)

from memtrellis import Memory, MemoryItem, MemoryType, Scope, SourceKind, SourceRef
from memtrellis.embeddings import Embedder, default_embedder
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.store.keyword import tokenize as keyword_tokenize
from memtrellis.store.vectors import HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH

RANK_K = 25  # the timed call; recall@1/5/10/25 come from it
BUDGET_K_DEFAULT = 150  # the call the token-budget figures come from
AT_K = (1, 5, 10, 25)
BUDGETS = (250, 500, 1000, 2000)
#: Budgets of the recall-vs-tokens curve (a superset of BUDGETS).
CURVE_BUDGETS = (100, 250, 500, 750, 1000, 1500, 2000)
TOKENS_AT = 10  # "tokens per query" renders the top 10
RECALL_METRICS = tuple(f"recall@{k}" for k in AT_K) + tuple(f"recall@{b}tok" for b in CURVE_BUDGETS)
TOKEN_METRICS = ("tokens_per_query", "tokens@1000tok", "tokens@2000tok")
EXTRA_METRICS = ("recall@10_of_deep",)
COMPARED = ("recall@10", "recall@1000tok")
BM25_K1 = 1.5
BM25_B = 0.75
TARGET_MARGIN = 10.0  # recall@10 points above BM25
TARGET_BUDGET = 75.0  # recall within 1,000 tokens
# Issue 21's, stricter: over the stop-word floor, and more within the budget.
TARGET_MARGIN_STOP = 20.0  # recall@10 points above stop-word BM25
TARGET_BUDGET_21 = 85.0  # recall within 1,000 tokens

LATENCY_NOTES = {
    "memtrellis": "Memory.recall end to end: query embedding, Chroma + BM25, fusion, graph "
    "context, detached copies, recall-count write",
    "bm25": "tokenise + score + sort in pure Python over the conversation's turns",
    "dense": "query embedding + Chroma query (HNSW, cosine) of the conversation's collection",
}


# -- the baselines -------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """A raw turn as a baseline returns it: scored and rendered like a memory."""

    text: str
    sources: tuple[SourceRef, ...]


def turns_of(conv: Conversation) -> list[Turn]:
    """Every turn of ``conv`` with its dia_id as the one source's message id."""
    return [
        Turn(
            text=str(m["content"]),
            sources=(SourceRef(kind=SourceKind.CHAT, message_id=str(m["id"])),),
        )
        for m in conv.messages
    ]


_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (``\\w+``), no stopwords, no stemming."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over one conversation's turns (Lucene-style non-negative idf).

    Each distinct query term counts once; ties go to the earlier turn. ``tokenize``
    defaults to :func:`words` (no stopwords).
    """

    def __init__(
        self,
        docs: Sequence[Turn],
        k1: float = BM25_K1,
        b: float = BM25_B,
        tokenize: Callable[[str], list[str]] = words,
    ) -> None:
        self.docs = list(docs)
        self.k1 = k1
        self.b = b
        self.tokenize = tokenize
        counts = [Counter(tokenize(doc.text)) for doc in self.docs]
        self.lengths = [sum(c.values()) for c in counts]
        self.average = (sum(self.lengths) / len(self.lengths) if self.lengths else 0.0) or 1.0
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for index, count in enumerate(counts):
            for term, tf in count.items():
                self.postings[term].append((index, tf))
        n = len(self.docs)
        self.idf = {
            term: math.log(1.0 + (n - len(p) + 0.5) / (len(p) + 0.5))
            for term, p in self.postings.items()
        }

    def search(self, query: str, k: int) -> list[Turn]:
        """The top ``k`` turns (only turns sharing a term with the query), best first."""
        scores: dict[int, float] = defaultdict(float)
        for term in set(self.tokenize(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for index, tf in self.postings[term]:
                norm = self.k1 * (1.0 - self.b + self.b * self.lengths[index] / self.average)
                scores[index] += idf * tf * (self.k1 + 1.0) / (tf + norm)
        top = heapq.nsmallest(k, scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return [self.docs[index] for index, _ in top]


class DenseBaseline:
    """Bare Chroma, one cosine collection per conversation, vectors from ``embedder``."""

    def __init__(self, embedder: Embedder, path: Path) -> None:
        import chromadb
        from chromadb.config import Settings

        self.embedder = embedder
        self.client = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
        self.collections: dict[str, Any] = {}
        self.turns: dict[str, dict[str, Turn]] = {}

    def ingest(self, conv: Conversation) -> None:
        """Embed the raw turn texts and add them to a fresh collection."""
        turns = turns_of(conv)
        vectors: list[Sequence[float]] = list(
            self.embedder.embed_documents([t.text for t in turns])
        )
        name = "locomo-" + hashlib.blake2b(conv.sample_id.encode(), digest_size=8).hexdigest()
        collection = self.client.create_collection(
            name,
            configuration={
                "hnsw": {
                    "space": "cosine",
                    "ef_search": HNSW_EF_SEARCH,
                    "ef_construction": HNSW_EF_CONSTRUCTION,
                }
            },
            embedding_function=None,
        )
        ids = [str(t.sources[0].message_id) for t in turns]
        step = max(1, int(self.client.get_max_batch_size()))
        for start in range(0, len(turns), step):
            collection.add(ids=ids[start : start + step], embeddings=vectors[start : start + step])
        self.collections[conv.sample_id] = collection
        self.turns[conv.sample_id] = dict(zip(ids, turns, strict=True))

    def search(self, conv_id: str, query: str, k: int) -> list[Turn]:
        """Embed ``query`` and return the ``k`` nearest turns, best first."""
        vector = self.embedder.embed_query(query)
        turns = self.turns[conv_id]
        result = self.collections[conv_id].query(
            query_embeddings=[vector], n_results=min(k, len(turns)), include=["distances"]
        )
        return [turns[i] for i in result["ids"][0]]


# -- memtrellis ingest ---------------------------------------------------------------------


def ingest_raw(memory: Memory, conv: Conversation) -> int:
    """Every turn through ``Memory.add`` in fast mode, one call per session."""
    stored = 0
    for session in conv.sessions:
        if session.messages:
            items = memory.add(session.messages, entity_id=conv.sample_id, mode="fast")
            stored += len(items)
    return stored


def observation_items(conv: Conversation) -> list[MemoryItem]:
    """The conversation's observation facts as pre-built fact memories."""
    content = {str(m["id"]): str(m["content"]) for m in conv.messages}
    scope = Scope(entity_id=conv.sample_id)
    return [
        MemoryItem(
            text=obs.fact,
            memory_type=MemoryType.FACT,
            tags=["locomo:observation"],
            sources=[
                SourceRef(
                    kind=SourceKind.CHAT,
                    message_id=dia_id,
                    role="user",
                    speaker=obs.speaker,
                    content=content.get(dia_id, ""),
                    timestamp=obs.date,
                )
                for dia_id in obs.dia_ids
            ],
            scope=scope,
            valid_from=obs.date,
        )
        for obs in conv.observations
    ]


def ingest_observations(memory: Memory, conv: Conversation) -> int:
    """Each observation through ``Memory.store`` (the library has no batch store)."""
    items = observation_items(conv)
    for item in items:
        memory.store(item)
    return len(items)


# -- running and scoring -------------------------------------------------------------------


Search = Callable[[str, str, int], list[Any]]  # (conversation id, question, k) -> hits


@dataclass
class System:
    """One row of the table: how to query it, and what its ingest cost."""

    name: str
    search: Search
    ingest_s: float = 0.0
    indexed: int = 0
    latency_note: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)


def library_search(memory: Memory, *, graph_context: bool) -> Search:
    """``Memory.recall`` as a :data:`Search` (the recalled memories, best first)."""

    def search(conv_id: str, question: str, k: int) -> list[MemoryItem]:
        result = memory.recall(question, entity_id=conv_id, k=k, graph_context=graph_context)
        return result.memories

    return search


def score(
    question: Question,
    ranked: Sequence[Any],
    deep: Sequence[Any],
    latency_ms: float,
    budget_k: int,
) -> dict[str, Any]:
    """One question's figures for one system (fractions 0..1, tokens, milliseconds).

    ``ranked`` is the timed top :data:`RANK_K`, ``deep`` the top ``budget_k``.
    """
    evidence = question.evidence
    row: dict[str, Any] = {
        "conversation": question.conversation,
        "category": question.category,
        "latency_ms": latency_ms,
    }
    for at in AT_K:
        row[f"recall@{at}"] = recall_at_k(evidence, ranked, at)
    row["tokens_per_query"] = sum(line_tokens(hit) for hit in ranked[:TOKENS_AT])
    row["recall@10_of_deep"] = recall_at_k(evidence, deep, 10)
    for budget, (coverage, used, exhausted) in recall_within_budgets(
        evidence, deep, CURVE_BUDGETS
    ).items():
        row[f"recall@{budget}tok"] = coverage
        row[f"tokens@{budget}tok"] = used
        # Every hit fitted and there were k of them: more hits might have raised the figure.
        row[f"k_limited@{budget}tok"] = exhausted and len(deep) >= budget_k
    return row


def run_queries(
    systems: Sequence[System], conversations: Sequence[Conversation], budget_k: int
) -> None:
    """Query every system for every scored question, interleaved question by question."""
    for conv in conversations:
        for system in systems:
            system.search(conv.sample_id, "warm-up", RANK_K)  # untimed: lazy loads, caches
        for question in conv.scored_questions:
            for system in systems:
                started = time.perf_counter()
                ranked = system.search(conv.sample_id, question.question, RANK_K)
                latency = (time.perf_counter() - started) * 1000.0
                deep = system.search(conv.sample_id, question.question, budget_k)
                system.rows.append(score(question, ranked, deep, latency, budget_k))
        print(f"  queried {conv.sample_id}: {len(conv.scored_questions)} questions", flush=True)


def latencies(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """p50 and p95 of the rows' latencies, milliseconds (2 decimals)."""
    values = [float(row["latency_ms"]) for row in rows]
    return {
        "latency_p50_ms": round(percentile(values, 0.50), 2),
        "latency_p95_ms": round(percentile(values, 0.95), 2),
    }


def summary_of(system: System) -> dict[str, Any]:
    """Everything the JSON holds for one system."""
    rows = system.rows
    out = summarise(rows, (*RECALL_METRICS, *EXTRA_METRICS, *TOKEN_METRICS))
    out.update(latencies(rows))
    for name, figures in out["by_category"].items():
        chosen = [r for r in rows if CATEGORY_NAMES.get(int(r["category"])) == name]
        figures.update(latencies(chosen))
    conversations = sorted({str(r["conversation"]) for r in rows})
    out["by_conversation"] = {}
    for conv in conversations:
        chosen = [r for r in rows if r["conversation"] == conv]
        figures = summarise(chosen, (*RECALL_METRICS, "tokens_per_query"))
        del figures["by_category"]
        figures.update(latencies(chosen))
        out["by_conversation"][conv] = figures
    out["k_limited@2000tok"] = round(
        100.0 * statistics.fmean(bool(r["k_limited@2000tok"]) for r in rows), 1
    )
    out["ingest_s"] = round(system.ingest_s, 2)
    out["indexed"] = system.indexed
    out["latency_includes"] = system.latency_note
    return out


def differences(
    systems: dict[str, System], pairs: Sequence[tuple[str, str]]
) -> dict[str, dict[str, dict[str, float]]]:
    """Paired bootstrap (mean, 95% interval) of a minus b, in points, per compared metric."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for a, b in pairs:
        if a not in systems or b not in systems:
            continue
        figures: dict[str, dict[str, float]] = {}
        for metric in COMPARED:
            diff, low, high = paired_bootstrap(
                [100.0 * r[metric] for r in systems[a].rows],
                [100.0 * r[metric] for r in systems[b].rows],
            )
            figures[metric] = {
                "difference": round(diff, 1),
                "ci95_low": round(low, 1),
                "ci95_high": round(high, 1),
            }
        out[f"{a}-{b}"] = figures
    return out


# -- targets -------------------------------------------------------------------------------


def targets(
    results: dict[str, dict[str, Any]], diffs: dict[str, dict[str, dict[str, float]]]
) -> dict[str, Any]:
    """Issue 4's and issue 21's LoCoMo targets, met or missed, for the main memtrellis row.

    Margins are the paired mean differences (as the bootstrap prints them), not
    differences of the rounded means.
    """
    ours, bm25 = results[RAW], results["bm25"]

    def margin_over(other: str) -> float | None:
        pair = diffs.get(f"{RAW}-{other}")
        if pair is not None:
            return pair["recall@10"]["difference"]
        if other not in results:
            return None
        return round(float(ours["recall@10"]) - float(results[other]["recall@10"]), 1)

    margin = margin_over("bm25")
    assert margin is not None
    stop = margin_over(BM25_STOP)
    per_conv = {
        conv: round(
            figures["recall@10"] - bm25["by_conversation"][conv]["recall@10"],
            1,
        )
        for conv, figures in ours["by_conversation"].items()
    }
    return {
        "recall@10_minus_bm25": margin,
        "recall@10_minus_bm25_target": TARGET_MARGIN,
        "recall@10_minus_bm25_met": margin >= TARGET_MARGIN,
        # The stronger keyword floor (stopwords removed): issue 21's target.
        "recall@10_minus_bm25_stopwords": stop,
        "recall@10_minus_bm25_stopwords_target": TARGET_MARGIN_STOP,
        "recall@10_minus_bm25_stopwords_met": stop is not None and stop >= TARGET_MARGIN_STOP,
        "recall@1000tok_21": ours["recall@1000tok"],
        "recall@1000tok_21_target": TARGET_BUDGET_21,
        "recall@1000tok_21_met": ours["recall@1000tok"] >= TARGET_BUDGET_21,
        "recall@1000tok": ours["recall@1000tok"],
        "recall@1000tok_target": TARGET_BUDGET,
        "recall@1000tok_met": ours["recall@1000tok"] >= TARGET_BUDGET,
        "recall@10_minus_bm25_by_conversation": per_conv,
        "conversations_meeting_margin": sum(v >= TARGET_MARGIN for v in per_conv.values()),
        "conversations_meeting_budget": sum(
            f["recall@1000tok"] >= TARGET_BUDGET for f in ours["by_conversation"].values()
        ),
    }


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help=f"default {default_data_path()}")
    parser.add_argument(
        "--json", type=Path, default=None, help="default benchmarks/results/locomo.json"
    )
    parser.add_argument("--mode", choices=("raw", "observations", "both"), default="both")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument(
        "--no-graph-context",
        action="store_true",
        help="memtrellis recalls with graph_context=False (and no ablation row)",
    )
    parser.add_argument(
        "--budget-k",
        type=int,
        default=BUDGET_K_DEFAULT,
        help=f"hits asked for the token-budget figures (default {BUDGET_K_DEFAULT})",
    )
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument(
        "--relation-model",
        action="store_true",
        help="store with LifecycleConfig(relation_model=True): the offline relation model too",
    )
    parser.add_argument(
        "--docs",
        type=Path,
        nargs="?",
        const=repo_root() / "docs" / "benchmarks.md",
        default=None,
        metavar="PATH",
        help="also write the LoCoMo section of PATH (default docs/benchmarks.md)",
    )
    parser.add_argument(
        "--render-from",
        type=Path,
        default=None,
        metavar="JSON",
        help="measure nothing: print, plot, --docs (and --json) from a saved results file",
    )
    return parser.parse_args(argv)


def sha256_of(path: Path) -> str:
    """The file's sha256 (hex)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lifecycle_of(args: argparse.Namespace) -> LifecycleConfig:
    """The lifecycle the stores are written with: the default, or with the relation model
    (``--relation-model``)."""
    return LifecycleConfig(relation_model=args.relation_model)


def build_systems(
    args: argparse.Namespace,
    conversations: Sequence[Conversation],
    embedder: Embedder,
    root: Path,
    memories: list[Memory],
) -> tuple[dict[str, System], dict[str, dict[str, int]]]:
    """Ingest into every system (timed); the stores opened go into ``memories``."""
    turns = sum(len(c.messages) for c in conversations)
    graph_context = not args.no_graph_context
    systems: dict[str, System] = {}
    graph_edges: dict[str, dict[str, int]] = {}
    note = LATENCY_NOTES["memtrellis"]
    if args.mode in ("raw", "both"):
        memory = Memory(root / "raw", embedder=embedder, lifecycle=lifecycle_of(args))
        memories.append(memory)
        started = time.perf_counter()
        stored = sum(ingest_raw(memory, conv) for conv in conversations)
        ingest_s = time.perf_counter() - started
        if stored != turns:
            print(f"warning: Memory.add stored {stored} of {turns} turns", file=sys.stderr)
        graph_edges["raw"] = dict(memory.health().edges_by_kind)
        systems[RAW] = System(
            RAW,
            library_search(memory, graph_context=graph_context),
            ingest_s,
            stored,
            note if graph_context else note + " (graph_context=False)",
        )
        if graph_context:
            systems[NO_GRAPH] = System(
                NO_GRAPH,
                library_search(memory, graph_context=False),
                ingest_s,
                stored,
                note + " (graph_context=False; same store)",
            )
        print(f"  memtrellis raw: {stored} turns added in {ingest_s:.1f} s", flush=True)
    if args.mode in ("observations", "both"):
        memory = Memory(root / "observations", embedder=embedder, lifecycle=lifecycle_of(args))
        memories.append(memory)
        started = time.perf_counter()
        stored = sum(ingest_observations(memory, conv) for conv in conversations)
        ingest_s = time.perf_counter() - started
        graph_edges["observations"] = dict(memory.health().edges_by_kind)
        name = OBS if args.mode == "both" else RAW
        search = library_search(memory, graph_context=graph_context)
        systems[name] = System(name, search, ingest_s, stored, note)
        print(f"  memtrellis observations: {stored} facts stored in {ingest_s:.1f} s", flush=True)

    started = time.perf_counter()
    indexes = {conv.sample_id: BM25(turns_of(conv)) for conv in conversations}
    systems["bm25"] = System(
        "bm25",
        lambda conv_id, q, k: indexes[conv_id].search(q, k),
        time.perf_counter() - started,
        turns,
        LATENCY_NOTES["bm25"],
    )
    started = time.perf_counter()
    stopped = {
        conv.sample_id: BM25(turns_of(conv), tokenize=keyword_tokenize) for conv in conversations
    }
    systems[BM25_STOP] = System(
        BM25_STOP,
        lambda conv_id, q, k: stopped[conv_id].search(q, k),
        time.perf_counter() - started,
        turns,
        LATENCY_NOTES["bm25"] + "; memtrellis's tokenizer (English stopwords removed)",
    )

    dense = DenseBaseline(embedder, root / "dense")
    started = time.perf_counter()
    for conv in conversations:
        dense.ingest(conv)
    ingest_s = time.perf_counter() - started
    systems["dense"] = System("dense", dense.search, ingest_s, turns, LATENCY_NOTES["dense"])
    print(f"  dense: {turns} turns embedded and added in {ingest_s:.1f} s", flush=True)
    return systems, graph_edges


def run(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """Ingest, query and score every system; the results document."""
    began = time.perf_counter()
    conversations = load_locomo(data)
    if args.limit_conversations is not None:
        conversations = conversations[: args.limit_conversations]
    turns = sum(len(c.messages) for c in conversations)
    questions = sum(len(c.scored_questions) for c in conversations)
    observations = sum(len(c.observations) for c in conversations)
    print(
        f"LoCoMo {data.name}: {len(conversations)} conversations, {turns} turns, "
        f"{questions} questions with evidence, {observations} observations; "
        f"k={RANK_K} (timed) and {args.budget_k} (budgets); "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    load_before = os.getloadavg()[0]
    embedder = default_embedder()
    embedder.embed_documents(["load the model before timing anything"])
    memories: list[Memory] = []
    with tempfile.TemporaryDirectory(
        prefix="memtrellis-locomo-", ignore_cleanup_errors=True
    ) as tmp:
        try:
            systems, graph_edges = build_systems(args, conversations, embedder, Path(tmp), memories)
            run_queries(list(systems.values()), conversations, args.budget_k)
        finally:
            for memory in memories:
                memory.close()

    results = {name: summary_of(systems[name]) for name in ORDER if name in systems}
    pairs: list[tuple[str, str]] = [
        (RAW, "bm25"),
        (RAW, BM25_STOP),
        (RAW, "dense"),
        (RAW, NO_GRAPH),
        (OBS, "bm25"),
        (OBS, "dense"),
    ]
    return {
        "meta": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "data": data.name,
            "data_sha256": sha256_of(data),
            "mode": args.mode,
            "memtrellis_is": "observations" if args.mode == "observations" else "raw turns",
            "graph_context": not args.no_graph_context,
            "conversations": [c.sample_id for c in conversations],
            "turns": turns,
            "questions": questions,
            "observations": observations,
            "k_ranked": RANK_K,
            "k_budget": args.budget_k,
            "budgets": list(CURVE_BUDGETS),
            "tokens_per_query": f"o200k_base tokens of the top {TOKENS_AT} rendered lines",
            "bm25": {"k1": BM25_K1, "b": BM25_B, "tokens": "lower-cased \\w+, no stopwords"},
            "bm25_stopwords": {
                "k1": BM25_K1,
                "b": BM25_B,
                "tokens": "memtrellis.store.keyword.tokenize (English stopwords removed)",
            },
            "dense": {"hnsw_ef_search": HNSW_EF_SEARCH, "space": "cosine"},
            "embedder": embedder.model_id,
            "graph_edges": graph_edges,
            "runtime_s": round(time.perf_counter() - began, 1),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_before": round(load_before, 2),
            "load_average_after": round(os.getloadavg()[0], 2),
        },
        **results,
        "differences": (diffs := differences(systems, pairs)),
        "targets": targets(results, diffs),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or re-render a saved one); 0 also when the data is missing."""
    args = parse_args(argv)
    if args.render_from is not None:
        document = json.loads(args.render_from.read_text(encoding="utf-8"))
    else:
        data = data_path_or_none(args.data)
        if data is None:
            return 0
        document = run(args, data)
    # Recomputed, so that a saved file renders with the current definition of the targets.
    results = {n: document[n] for n in ORDER if n in document}
    document["targets"] = targets(results, document["differences"])
    out = args.json or (results_dir() / "locomo.json" if args.render_from is None else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    report(document)
    if out is not None:
        print(f"figures written to {out}")
    if not args.no_plots:
        budgets = document["meta"]["budgets"]
        for path in plot(results, budgets, results_dir(), TARGET_BUDGET):
            print(f"plot written to {path}")
    if args.docs is not None:
        write_section(args.docs, markdown_section(document))
        print(f"section {SECTION_HEADING!r} written to {args.docs}")
    print(f"runtime {document['meta']['runtime_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
