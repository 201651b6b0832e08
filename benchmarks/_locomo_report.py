"""Plots and the ``docs/benchmarks.md`` section of the LoCoMo benchmark (``locomo.py``).

Not a script: ``locomo.py`` calls it, with the figures it has just measured or (with
``--render-from``) with a saved ``benchmarks/results/locomo.json``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BM25_STOP",
    "LABELS",
    "NO_GRAPH",
    "OBS",
    "ORDER",
    "RAW",
    "SECTION_HEADING",
    "label",
    "markdown_section",
    "plot",
    "report",
    "write_section",
]

RAW = "memtrellis"
NO_GRAPH = "memtrellis_no_graph_context"
OBS = "memtrellis_observations"
BM25_STOP = "bm25_stopwords"
#: The rows, in table order.
ORDER = (RAW, NO_GRAPH, OBS, "bm25", BM25_STOP, "dense")
#: Short names of the systems (the JSON keys) in tables and legends.
LABELS = {
    RAW: "memtrellis",
    NO_GRAPH: "memtrellis no-graph",
    OBS: "memtrellis obs",
    "bm25": "bm25",
    BM25_STOP: "bm25 stopwords",
    "dense": "dense",
}
#: colour, line style, marker
STYLES = {
    RAW: ("#1f77b4", "-", "o"),
    NO_GRAPH: ("#1f77b4", ":", "x"),
    OBS: ("#2ca02c", "--", "s"),
    "bm25": ("#d62728", "-", "^"),
    BM25_STOP: ("#d62728", "--", "<"),
    "dense": ("#ff7f0e", "-", "v"),
}
SECTION_HEADING = "## LoCoMo evidence recall"
CURVE_PNG = "locomo_recall_vs_tokens.png"
CATEGORY_PNG = "locomo_recall10_by_category.png"


def label(name: str) -> str:
    """The short name of a system."""
    return LABELS.get(name, name)


def plot(
    results: dict[str, dict[str, Any]],
    budgets: Sequence[int],
    out_dir: Path,
    target_budget: float = 75.0,
) -> list[Path]:
    """Recall-vs-token-budget curves and per-category recall@10 bars (PNG, Agg backend)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install matplotlib)", file=sys.stderr)
        return []
    styles = STYLES
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for name, figures in results.items():
        color, line, marker = styles.get(name, ("#7f7f7f", "-", "."))
        ys = [figures[f"recall@{b}tok"] for b in budgets]
        ax.plot(budgets, ys, color=color, linestyle=line, marker=marker, label=label(name))
    ax.axhline(target_budget, color="#999999", linewidth=0.8, linestyle="--")
    ax.axvline(1000, color="#999999", linewidth=0.8, linestyle="--")
    ax.set_xlabel("memory context budget (o200k_base tokens)")
    ax.set_ylabel("evidence recall (%)")
    ax.set_title("LoCoMo evidence recall within a token budget")
    ax.set_xticks(list(budgets))
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out_dir / CURVE_PNG
    fig.savefig(path)
    plt.close(fig)
    written.append(path)

    categories = list(next(iter(results.values()))["by_category"])
    fig, ax = plt.subplots(figsize=(8.5, 4.8), dpi=120)
    width = 0.8 / len(results)
    for offset, (name, figures) in enumerate(results.items()):
        color, line, _ = styles.get(name, ("#7f7f7f", "-", "."))
        xs = [i + (offset - (len(results) - 1) / 2) * width for i in range(len(categories))]
        ys = [figures["by_category"][c]["recall@10"] for c in categories]
        ax.bar(
            xs,
            ys,
            width,
            color=color,
            label=label(name),
            hatch="//" if line != "-" else None,
            alpha=0.6 if line == ":" else 1.0,
        )
    counts = [next(iter(results.values()))["by_category"][c]["questions"] for c in categories]
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels([f"{c}\n({n} q)" for c, n in zip(categories, counts, strict=True)])
    ax.set_ylabel("recall@10 (%)")
    ax.set_title("LoCoMo evidence recall@10 by question category")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=len(results), fontsize="small")
    fig.tight_layout()
    path = out_dir / CATEGORY_PNG
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    written.append(path)
    return written


# -- printed tables ------------------------------------------------------------------------


def _fmt(value: Any, width: int, digits: int = 1) -> str:
    if value is None:
        return "-".rjust(width)
    if isinstance(value, float):
        return f"{value:.{digits}f}".rjust(width)
    return str(value).rjust(width)


def print_main_table(results: dict[str, dict[str, Any]]) -> None:
    """Overall figures, one row per system."""
    columns = [
        ("R@1", "recall@1"),
        ("R@5", "recall@5"),
        ("R@10", "recall@10"),
        ("R@25", "recall@25"),
        ("R@250t", "recall@250tok"),
        ("R@500t", "recall@500tok"),
        ("R@1000t", "recall@1000tok"),
        ("R@2000t", "recall@2000tok"),
        ("tok/q", "tokens_per_query"),
        ("p50 ms", "latency_p50_ms"),
        ("p95 ms", "latency_p95_ms"),
        ("ingest s", "ingest_s"),
    ]
    width = max(len(label(n)) for n in results) + 1
    print("system".ljust(width) + "".join(h.rjust(9) for h, _ in columns))
    for name, figures in results.items():
        cells = []
        for _, key in columns:
            digits = 2 if key.startswith("latency") else 1
            cells.append(_fmt(figures.get(key), 9, digits))
        print(label(name).ljust(width) + "".join(cells))


def print_breakdown(
    results: dict[str, dict[str, Any]], section: str, metric: str, title: str
) -> None:
    """One metric, rows = categories or conversations, columns = systems."""
    names = list(results)
    keys = list(next(iter(results.values()))[section])
    width = max(len(k) for k in [*keys, "min", "max"]) + 6
    print(f"\n{title}")
    print("".ljust(width) + "".join(label(n).rjust(21) for n in names))
    for key in keys:
        count = results[names[0]][section][key]["questions"]
        cells = "".join(_fmt(results[n][section][key][metric], 21) for n in names)
        print(f"{key} ({count})".ljust(width) + cells)
    if section == "by_conversation" and len(keys) > 1:
        for row_name, pick in (("min", min), ("max", max)):
            cells = "".join(
                _fmt(pick(results[n][section][k][metric] for k in keys), 21) for n in names
            )
            print(row_name.ljust(width) + cells)


def print_differences(diffs: dict[str, dict[str, dict[str, float]]]) -> None:
    """The paired bootstrap intervals."""
    print("\npaired bootstrap (2,000 resamples of questions), difference in points [95% CI]")
    for pair, figures in diffs.items():
        a, b = pair.split("-", 1)
        text = "   ".join(
            f"{metric} {f['difference']:+.1f} [{f['ci95_low']:+.1f}, {f['ci95_high']:+.1f}]"
            for metric, f in figures.items()
        )
        print(f"  {label(a)} - {label(b)}:".ljust(38) + text)


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f}"


def _verdict(found: dict[str, Any], key: str) -> str:
    """ "met", or by how much a target is missed."""
    if found[f"{key}_met"]:
        return "met"
    return f"missed by {found[f'{key}_target'] - found[key]:.1f}"


def _issue_21(found: dict[str, Any]) -> list[str]:
    """Issue 21's stricter pair of targets, when the results hold them."""
    if found.get("recall@10_minus_bm25_stopwords_target") is None:
        return []
    stop = found.get("recall@10_minus_bm25_stopwords")
    met = "not measured" if stop is None else _verdict(found, "recall@10_minus_bm25_stopwords")
    return [
        "Targets (issue 21, raw turns):",
        "",
        f"- recall@10 at least 20 points above stop-word BM25 in the same run: "
        f"**{_signed(stop)}** — {met} (paired mean; its 95% interval above).",
        f"- recall within 1,000 tokens at least 85: **{found['recall@1000tok_21']:.1f}** — "
        f"{_verdict(found, 'recall@1000tok_21')}.",
        "",
    ]


def print_targets(found: dict[str, Any], mode: str) -> None:
    """The targets, with the per-conversation (held-out) view."""
    print(f"\ntargets (issue 4; memtrellis {mode})")
    margin, budget = found["recall@10_minus_bm25"], found["recall@1000tok"]
    verdict = _verdict(found, "recall@10_minus_bm25")
    print(f"  recall@10 - bm25 = {margin:+.1f} points (target >= +10): {verdict}")
    stop = found.get("recall@10_minus_bm25_stopwords")
    if stop is not None:
        print(f"  (recall@10 - bm25 stopwords = {stop:+.1f} points)")
    verdict = _verdict(found, "recall@1000tok")
    print(f"  recall within 1,000 tokens = {budget:.1f} (target >= 75): {verdict}")
    per_conv = found["recall@10_minus_bm25_by_conversation"]
    total = len(per_conv)
    print(
        f"  per conversation: margin >= +10 in {found['conversations_meeting_margin']}/{total}"
        f" (min {min(per_conv.values()):+.1f}, max {max(per_conv.values()):+.1f}); "
        f">= 75 within 1,000 tokens in {found['conversations_meeting_budget']}/{total}"
    )


def report(document: dict[str, Any]) -> None:
    """Print the tables of a results document."""
    meta = document["meta"]
    results = {n: document[n] for n in ORDER if n in document}
    print()
    print_main_table(results)
    print_breakdown(results, "by_category", "recall@10", "recall@10 by category (questions)")
    print_breakdown(
        results, "by_category", "recall@1000tok", "recall within 1,000 tokens by category"
    )
    print_breakdown(
        results, "by_conversation", "recall@10", "recall@10 by conversation (held-out view)"
    )
    print_breakdown(
        results, "by_conversation", "recall@1000tok", "recall within 1,000 tokens by conversation"
    )
    print_differences(document["differences"])
    print_targets(document["targets"], meta["memtrellis_is"])
    k = meta["k_budget"]
    deep = {label(n): r["recall@10_of_deep"] for n, r in results.items()}
    limited = {label(n): r["k_limited@2000tok"] for n, r in results.items()}
    print(f"\nrecall@10 of the top {k} (deeper candidate fetch): {deep}")
    print(f"% of questions whose 2,000-token figure k={k} cut short: {limited}")


# -- docs/benchmarks.md ----------------------------------------------------------------------


def _cell(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _breakdown(
    results: dict[str, dict[str, Any]], section: str, metric: str, first: str
) -> list[str]:
    names = list(results)
    keys = list(results[names[0]][section])
    rows = [
        [f"{key} ({results[names[0]][section][key]['questions']})"]
        + [_cell(results[n][section][key][metric]) for n in names]
        for key in keys
    ]
    if section == "by_conversation" and len(keys) > 1:
        for name, pick in (("min", min), ("max", max)):
            rows.append(
                [f"*{name}*"]
                + [_cell(pick(results[n][section][k][metric] for k in keys)) for n in names]
            )
    return _table([first, *(label(n) for n in names)], rows)


def markdown_section(document: dict[str, Any]) -> str:
    """The ``## LoCoMo evidence recall`` section of ``docs/benchmarks.md`` for a run."""
    meta = document["meta"]
    names = [n for n in ORDER if n in document]
    results = {n: document[n] for n in names}
    found = document["targets"]
    primary = meta["memtrellis_is"]
    out: list[str] = [SECTION_HEADING, ""]
    out += [
        "<!-- Written by `python benchmarks/locomo.py --docs`; rerun it rather than editing "
        "the figures by hand. -->",
        "",
        "Does recall put the turns that answer a question into the memory context? For "
        "every LoCoMo question with evidence, each system is scored by the share of the "
        "evidence turns (dia_ids) among the sources of what it returned — among its top k, "
        "and among what fits in a token budget of rendered memory context (each memory one "
        "line `- text`, o200k_base tokens, best first). No LLM is involved.",
        "",
        f"Latest run: {meta.get('date', '?')}, {len(meta['conversations'])} conversations "
        f"({', '.join(meta['conversations'])}), {meta['turns']} turns, {meta['questions']} "
        f"questions with evidence, {meta['cpus']} CPUs, {meta['runtime_s']:.0f} s in all. "
        "Data: `../shared/bench/locomo10_dev.json` (LoCoMo, CC BY-NC 4.0: evaluation only, "
        "read from outside the repository, never copied into it). Figures: "
        "`benchmarks/results/locomo.json`.",
        "",
        "```",
        ". /tmp/dev/bin/activate  # or any environment with memtrellis and matplotlib",
        "python benchmarks/locomo.py --docs      # all conversations, both modes; ~4 min",
        "```",
        "",
    ]
    budgets = [250, 500, 1000, 2000]
    header = [
        "system",
        "R@1",
        "R@5",
        "R@10",
        "R@25",
        *(f"≤{b:,} tok" for b in budgets),
        "tokens/query",
        "p50 ms",
        "p95 ms",
        "ingest s",
    ]
    rows = []
    for name, r in results.items():
        rows.append(
            [
                f"**{label(name)}**" if name == RAW else label(name),
                *(_cell(r[f"recall@{k}"]) for k in (1, 5, 10, 25)),
                *(_cell(r[f"recall@{b}tok"]) for b in budgets),
                _cell(r["tokens_per_query"]),
                _cell(r["latency_p50_ms"], 2),
                _cell(r["latency_p95_ms"], 2),
                _cell(r["ingest_s"]),
            ]
        )
    out += _table(header, rows)
    out += [
        "",
        f"Recall in percent; R@k over each system's top k; ≤N tok within N tokens of memory "
        f"context; tokens/query = the top 10 rendered; latency per query, p50/p95 over "
        f"{meta['questions']} questions. `memtrellis` is {primary} in fast mode; "
        "`memtrellis no-graph` the same store recalled with `graph_context=False`; "
        "`memtrellis obs` the dataset's observation facts stored as pre-built memories "
        "(standing in for LLM extraction); `bm25`, `bm25 stopwords` and `dense` the "
        "baselines over raw turns.",
        "",
    ]
    diffs = document.get("differences", {})
    if diffs:
        out += ["Paired bootstrap over questions (2,000 resamples), difference in points:", ""]
        rows = []
        for pair, figures in diffs.items():
            a, b = pair.split("-", 1)
            rows.append(
                [f"{label(a)} − {label(b)}"]
                + [
                    f"{f['difference']:+.1f} [{f['ci95_low']:+.1f}, {f['ci95_high']:+.1f}]"
                    for f in figures.values()
                ]
            )
        out += _table(["comparison", "recall@10 [95% CI]", "≤1,000 tok [95% CI]"], rows)
        out.append("")
    margin = found["recall@10_minus_bm25"]
    per_conv = found["recall@10_minus_bm25_by_conversation"]
    total = len(per_conv)
    met = _verdict(found, "recall@10_minus_bm25")
    budget_met = _verdict(found, "recall@1000tok")
    out += [
        "Targets (issue 4, raw turns):",
        "",
        f"- recall@10 at least 10 points above BM25 in the same run: **{margin:+.1f}** — "
        f"{met}; per conversation {found['conversations_meeting_margin']}/{total} "
        f"(from {min(per_conv.values()):+.1f} to {max(per_conv.values()):+.1f}). Against "
        f"the stronger `bm25 stopwords`: {_signed(found.get('recall@10_minus_bm25_stopwords'))}.",
        f"- recall within 1,000 tokens at least 75: **{found['recall@1000tok']:.1f}** — "
        f"{budget_met}; per conversation {found['conversations_meeting_budget']}/{total}.",
        "",
        *_issue_21(found),
        f"![LoCoMo recall within a token budget](../benchmarks/results/{CURVE_PNG})",
        "",
        f"![LoCoMo recall@10 by category](../benchmarks/results/{CATEGORY_PNG})",
        "",
        "### By category",
        "",
        "recall@10:",
        "",
        *_breakdown(results, "by_category", "recall@10", "category (questions)"),
        "",
        "recall within 1,000 tokens:",
        "",
        *_breakdown(results, "by_category", "recall@1000tok", "category (questions)"),
        "",
        "### By conversation (held-out view)",
        "",
        "Recall was tuned on these same conversations, so there is no true held-out "
        "set; the spread across conversations shows how much the figures move from one "
        "conversation to another (each is a different pair of speakers and topics).",
        "",
        "recall@10:",
        "",
        *_breakdown(results, "by_conversation", "recall@10", "conversation (questions)"),
        "",
        "recall within 1,000 tokens:",
        "",
        *_breakdown(results, "by_conversation", "recall@1000tok", "conversation (questions)"),
        "",
        "### How it is measured",
        "",
        '- **memtrellis, raw turns**: every turn through `Memory.add(session, mode="fast")`, '
        "one call per session and one `entity_id` per conversation, keeping the dia_id as "
        "the source message id, the speaker and the session date; a shared image's caption "
        "is appended to its turn as `[shared image: …]`. Recall is `Memory.recall(question, "
        "entity_id=conversation, k=...)`.",
        "- **memtrellis, observations**: the dataset's `observation` facts stored with "
        "`Memory.store` as `fact` memories, one chat `SourceRef` per source dia_id (speaker, "
        "session date). `store` makes no `follows` edges and no entities, so graph context "
        "has nothing to work with there.",
        "- **bm25**: Okapi BM25 written in the script (k1 1.5, b 0.75, lower-cased `\\w+` "
        "tokens, no stopwords, no speaker prefix, non-negative idf) over the raw turn texts "
        "of the conversation. This is the plain floor the issue names; it lands below the "
        "README's rough figures (R@5 52, R@10 58, ≤1,000 tok 67), which match BM25 with "
        "English stopwords removed — hence the second row.",
        "- **bm25 stopwords**: the same BM25 with memtrellis's keyword tokenizer "
        "(`memtrellis.store.keyword.tokenize`: lower-cased words, about 60 English "
        "stopwords removed), still no speaker prefix.",
        f"- **dense**: a bare Chroma collection per conversation (cosine, HNSW ef_search "
        f"{meta['dense']['hnsw_ef_search']}, no embedding function) holding the same "
        f"embedder's ({meta['embedder']}) vectors of the raw turn texts, queried with its "
        "query vector. memtrellis embeds `speaker: text`; the dense baseline embeds the "
        "turn text alone, as a plain vector store given the messages would.",
        f"- Every system is asked twice per question: its top {meta['k_ranked']} (timed; "
        "R@k and tokens/query come from it) and its top "
        f"{meta['k_budget']} (the token-budget figures). `Memory.recall` fetches "
        "max(4k, 100) candidates from each search, so its top 10 is the same for any k up "
        "to 25 — what an application asking for 10 gets. Asked for "
        f"{meta['k_budget']}, it fetches deeper and its top 10 scores "
        f"{_cell(document[RAW].get('recall@10_of_deep'))} instead of "
        f"{_cell(document[RAW]['recall@10'])}.",
        "- Latency is wall-clock per query call, the systems interleaved question by "
        "question after one untimed warm-up per conversation: memtrellis = `Memory.recall` "
        "end to end (query embedding, Chroma and BM25, fusion, graph context, copies, the "
        "recall-count bookkeeping); dense = query embedding and the Chroma query; bm25 = "
        "pure-Python scoring, no embedding. Ingest: memtrellis = all `add` (or `store`) "
        "calls including embedding; dense = embedding and Chroma adds; bm25 = building "
        "the index.",
        "",
    ]
    return "\n".join(out)


def write_section(path: Path, section: str) -> None:
    """Insert or replace the LoCoMo section of ``path``, leaving the rest untouched.

    The section runs from :data:`SECTION_HEADING` to the next ``## `` heading (or the
    end). A missing file is created with a ``# Benchmarks`` title. The file is replaced
    atomically, as another script writes its own sections of the same page.
    """
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Benchmarks\n"
    lines = text.splitlines()
    body = section.rstrip("\n").splitlines()
    try:
        start = lines.index(SECTION_HEADING)
    except ValueError:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ["", *body]
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        tail = lines[end:]
        lines = lines[:start] + body + ([""] if tail else []) + tail
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".benchmarks-", suffix=".md")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    Path(tmp).replace(path)
