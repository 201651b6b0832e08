"""LoCoMo answer quality end to end: a chat model answers from memtrellis's memory context,
an LLM judge scores it (J), beside two baselines in the same run.

The data is LoCoMo (CC BY-NC 4.0, evaluation only): read from ``../shared/bench/`` beside
the repository (or ``--data PATH``) and never copied into the project; when it is missing
the script says so and exits 0.

Systems, each answering the same questions with the same model and the same prompt
(`_qa.answer_messages`; only the context block differs):

* ``memtrellis``: every turn through ``Memory.add(session, mode="fast")`` (or
  ``--ingest fine``: the answer model extracts memories), one entity per conversation;
  the context is ``memtrellis.context.build_context(Memory.recall(question, k=K),
  token_budget=B)``, the block the adapters inject;
* ``full context``: the whole conversation as a transcript (session dates, ``Speaker:
  text``); when it does not fit the model's context window (``--context-tokens``, by
  default the local server's), the most recent turns that fit are kept and the row says
  how many were cut;
* ``dense``: plain dense retrieval, a bare Chroma collection of the same embedder's
  vectors of the raw turns (``locomo.DenseBaseline``); its top K turns, each as ``- [date]
  speaker: text``, within the same token budget B as memtrellis.

Each answer is then judged by an LLM (`_qa.judge_messages`, our wording of the judge
the Mem0 and Zep papers use): **J** is the share judged correct. Token F1 against the
gold answer (LoCoMo's own no-LLM figure) and the share of the question's evidence turns
that made it into the context are given too. Category 5 (adversarial: no answer in the
conversation) is left out unless ``--categories`` names it, as in those papers.

The model is any OpenAI-compatible endpoint (``--base-url``, ``--model``, the key from
the variable ``--api-key-env`` names; the judge may be another, ``--judge-*``). Without
``--base-url`` the script starts a local llama.cpp server with the Gemma 3 270M model the
``local-llm`` extra installs (`_llama_server.py`; no download at run time), on a free
loopback port, and stops it at the end: a smoke run, whose figures say that the pipeline
works end to end, not how good memtrellis is (a 270M model answers and judges poorly).

    pip install -e ".[bench,local-llm]"
    python benchmarks/locomo_qa.py                               # local smoke run
    python benchmarks/locomo_qa.py --conversations 2 --questions 20 --docs
    OPENAI_API_KEY=... python benchmarks/locomo_qa.py --base-url https://api.openai.com/v1 \\
        --model gpt-4o-mini --context-tokens 128000 --conversations 10 --questions 0

Figures go to ``--json`` (default ``benchmarks/results/locomo_qa.json``), and with
``--docs`` to the ``## LoCoMo answer quality`` section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
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
    load_locomo,
    percentile,
    repo_root,
    results_dir,
)
from _qa import (
    answer_messages,
    as_percent,
    fit_latest,
    judge_messages,
    mean,
    pick_questions,
    read_verdict,
    token_f1,
    transcript_lines,
)

from memtrellis import Memory
from memtrellis.context import build_context
from memtrellis.embeddings import default_embedder
from memtrellis.openai_compatible import OpenAICompatibleLLM
from memtrellis.tokens import count_tokens

SECTION_HEADING = "## LoCoMo answer quality (LLM judge)"
SYSTEMS = ("memtrellis", "full context", "dense")
CONTEXT_NAMES = {
    "memtrellis": "Memory context",
    "full context": "Conversation",
    "dense": "Retrieved messages",
}
#: Tokens kept free in the full-context prompt beside the transcript: the instructions,
#: the question and the answer.
PROMPT_RESERVE = 256
REMOTE_CONTEXT_DEFAULT = 128_000


@dataclass
class Row:
    """One system's answer to one question, and its scores."""

    system: str
    question: Question
    context_tokens: int
    evidence_in_context: float | None
    answer: str = ""
    answer_s: float = 0.0
    error: str | None = None
    verdict: str | None = None
    judge_reply: str = ""
    f1: float = 0.0


@dataclass
class Run:
    """What a run measured, beside the rows."""

    rows: list[Row] = field(default_factory=list)
    cut: dict[str, dict[str, int]] = field(default_factory=dict)  # full context per conv
    ingest_s: dict[str, float] = field(default_factory=dict)


# -- contexts -------------------------------------------------------------------------------


def evidence_share(question: Question, ids: set[str]) -> float | None:
    """The share of the question's evidence turns among ``ids`` (None without evidence)."""
    if not question.evidence:
        return None
    return len(ids.intersection(question.evidence)) / len(question.evidence)


def memtrellis_context(
    memory: Memory, conv: Conversation, question: Question, k: int, budget: int
) -> tuple[str, int, set[str]]:
    """memtrellis's memory-context block for ``question``, its tokens and source turn ids."""
    result = memory.recall(question.question, entity_id=conv.sample_id, k=k)
    block = build_context(result, token_budget=budget)
    shown = set(block.memory_ids)
    ids = {
        s.message_id
        for hit in result.items
        if hit.memory.id in shown
        for s in hit.memory.sources
        if s.message_id
    }
    return block.text, block.tokens, ids


def dense_context(
    dense: Any, conv: Conversation, question: Question, k: int, budget: int
) -> tuple[str, int, set[str]]:
    """The dense baseline's top turns as lines, best first, within ``budget`` tokens."""
    turns = {str(m["id"]): m for m in conv.messages}
    lines: list[str] = []
    ids: set[str] = set()
    used = 0
    for hit in dense.search(conv.sample_id, question.question, k):
        dia_id = str(hit.sources[0].message_id)
        message = turns[dia_id]
        when = str(message["timestamp"])[:10]
        line = f"- [{when}] {message['speaker']}: {message['content']}"
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        lines.append(line)
        ids.add(dia_id)
        used += cost
    return "\n".join(lines), used, ids


# -- the model -------------------------------------------------------------------------------


def ask(llm: OpenAICompatibleLLM, messages: list[dict[str, str]]) -> tuple[str, float, str | None]:
    """The reply's first line, seconds taken, and the error if the call failed."""
    started = time.perf_counter()
    try:
        reply = llm.complete(messages)
    except Exception as exc:  # a failed call is an empty answer, counted
        return "", time.perf_counter() - started, f"{type(exc).__name__}: {exc}"[:300]
    text = reply.strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first, time.perf_counter() - started, None


@contextlib.contextmanager
def endpoint(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """The answer and judge models (starting the local server when no URL is given)."""
    server = None
    info: dict[str, Any] = {}
    base_url = args.base_url
    if base_url is None:
        from _llama_server import MODEL_NAME, LlamaServer, tokenize_counter

        print(f"starting llama-server (context {args.local_context})...", flush=True)
        started = time.perf_counter()
        server = LlamaServer(context=args.local_context, threads=args.threads).start()
        props = server.props()
        info["local"] = {
            "model_file": server.model.name,
            "server_start_s": round(time.perf_counter() - started, 1),
            "n_ctx": (props.get("default_generation_settings") or {}).get("n_ctx"),
            "threads": server.threads,
            "build": props.get("build_info"),
        }
        base_url = server.base_url
        model = args.model or MODEL_NAME
        info["count"] = tokenize_counter(server.url)
        info["tokens"] = "the model's own tokenizer (llama-server /tokenize)"
        info["context_tokens"] = args.context_tokens or args.local_context
    else:
        model = args.model or "gpt-4o-mini"
        info["count"] = count_tokens
        info["tokens"] = "o200k_base (the endpoint's own tokenizer may count more)"
        info["context_tokens"] = args.context_tokens or REMOTE_CONTEXT_DEFAULT
    try:
        info["answer"] = OpenAICompatibleLLM(
            model,
            base_url=base_url,
            api_key_env=args.api_key_env,
            max_tokens=args.answer_tokens,
            timeout=args.timeout,
        )
        info["judge"] = OpenAICompatibleLLM(
            args.judge_model or model,
            base_url=args.judge_base_url or base_url,
            api_key_env=args.judge_api_key_env or args.api_key_env,
            max_tokens=64,
            timeout=args.timeout,
        )
        info["base_url"] = base_url if server is None else "local llama-server"
        info["model"] = model
        info["judge_model"] = args.judge_model or model
        yield info
    finally:
        if server is not None:
            server.stop()


# -- the run ---------------------------------------------------------------------------------


def ingest(memory: Memory, conv: Conversation, mode: str) -> tuple[int, float]:
    """Every session of ``conv`` through ``Memory.add``; memories stored and seconds."""
    started = time.perf_counter()
    stored = 0
    for session in conv.sessions:
        if session.messages:
            stored += len(memory.add(session.messages, entity_id=conv.sample_id, mode=mode))
    return stored, time.perf_counter() - started


def run(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """Ingest, answer, judge; the results document."""
    from locomo import DenseBaseline

    began = time.perf_counter()
    conversations = load_locomo(data)[: args.conversations]
    categories = [int(c) for c in args.categories.split(",") if c.strip()]
    limit = args.questions or None
    picked = {c.sample_id: pick_questions(c, limit, categories) for c in conversations}
    total = sum(len(q) for q in picked.values())
    print(
        f"LoCoMo {data.name}: {len(conversations)} conversations, {total} questions "
        f"(categories {categories}); budget {args.budget} tokens, k={args.k}",
        flush=True,
    )
    embedder = default_embedder()
    outcome = Run()
    with (
        endpoint(args) as model,
        tempfile.TemporaryDirectory(
            prefix="memtrellis-locomo-qa-", ignore_cleanup_errors=True
        ) as tmp,
    ):
        llm = model["answer"] if args.ingest == "fine" else None
        memory = Memory(Path(tmp) / "store", embedder=embedder, llm=llm)
        dense = DenseBaseline(embedder, Path(tmp) / "dense")
        try:
            for conv in conversations:
                stored, seconds = ingest(memory, conv, args.ingest)
                started = time.perf_counter()
                dense.ingest(conv)
                outcome.ingest_s[conv.sample_id] = round(seconds, 1)
                print(
                    f"  {conv.sample_id}: {len(conv.messages)} turns -> {stored} memories "
                    f"({args.ingest}, {seconds:.1f} s); dense "
                    f"{time.perf_counter() - started:.1f} s",
                    flush=True,
                )
                answer_conversation(
                    args, model, memory, dense, conv, picked[conv.sample_id], outcome
                )
            judge_all(model["judge"], outcome.rows)
        finally:
            memory.close()
        meta_model = {
            k: model[k] for k in ("base_url", "model", "judge_model", "tokens", "context_tokens")
        }
        meta_model["local"] = model.get("local")
    return document(args, data, conversations, outcome, meta_model, time.perf_counter() - began)


def answer_conversation(
    args: argparse.Namespace,
    model: dict[str, Any],
    memory: Memory,
    dense: Any,
    conv: Conversation,
    questions: Sequence[Question],
    outcome: Run,
) -> None:
    """Every system answers every question of ``conv``: one system after the other, so
    that the full-context prompt's long prefix stays in the server's prompt cache."""
    count: Callable[[str], int] = model["count"]
    entries = transcript_lines(conv)
    lines = [line for line, _ in entries]
    budget = int(model["context_tokens"]) - PROMPT_RESERVE - args.answer_tokens
    kept, used, left_out = fit_latest(lines, budget, count)
    full_ids = {dia_id for _, dia_id in entries[left_out:] if dia_id}
    transcript = "\n".join(kept)
    outcome.cut[conv.sample_id] = {
        "lines": len(lines),
        "lines_left_out": left_out,
        "tokens": used,
        "budget": budget,
    }
    if left_out:
        print(
            f"    full context cut to the latest {len(kept)} of {len(lines)} lines "
            f"({used} tokens, window {model['context_tokens']})",
            flush=True,
        )
    for system in SYSTEMS:
        started = time.perf_counter()
        for question in questions:
            if system == "memtrellis":
                text, tokens, ids = memtrellis_context(memory, conv, question, args.k, args.budget)
            elif system == "dense":
                text, tokens, ids = dense_context(dense, conv, question, args.k, args.budget)
            else:
                text, tokens, ids = transcript, used, full_ids
            messages = answer_messages(
                conv, text, question.question, context_name=CONTEXT_NAMES[system]
            )
            answer, seconds, error = ask(model["answer"], messages)
            row = Row(system, question, tokens, evidence_share(question, ids), answer, seconds)
            row.error = error
            row.f1 = token_f1(answer, question.answer)
            outcome.rows.append(row)
        print(
            f"    {system}: {len(questions)} answers in {time.perf_counter() - started:.1f} s",
            flush=True,
        )


def judge_all(judge: OpenAICompatibleLLM, rows: Sequence[Row]) -> None:
    """The LLM judge's verdict on every answer (None when unreadable or the call failed)."""
    started = time.perf_counter()
    for row in rows:
        messages = judge_messages(row.question.question, row.question.answer, row.answer)
        try:
            reply = judge.complete(messages)
        except Exception as exc:  # counted as unreadable
            row.judge_reply = f"{type(exc).__name__}: {exc}"[:300]
            continue
        row.judge_reply = reply.strip()[:300]
        row.verdict = read_verdict(reply)
    print(f"  judged {len(rows)} answers in {time.perf_counter() - started:.1f} s", flush=True)


# -- figures ---------------------------------------------------------------------------------


def figures(rows: Sequence[Row]) -> dict[str, Any]:
    """J, F1, evidence in context and the costs, for some rows (fractions 0..1)."""
    evidence = [r.evidence_in_context for r in rows if r.evidence_in_context is not None]
    seconds = [r.answer_s for r in rows]
    return {
        "questions": len(rows),
        "J": mean([float(r.verdict == "CORRECT") for r in rows]),
        "F1": mean([r.f1 for r in rows]),
        "evidence_in_context": mean(evidence),
        "context_tokens": mean([float(r.context_tokens) for r in rows]),
        "answer_s_p50": round(percentile(seconds, 0.5), 2) if seconds else None,
        "judge_unreadable": sum(r.verdict is None for r in rows),
        "answer_errors": sum(r.error is not None for r in rows),
        "not_mentioned": sum("not mentioned" in r.answer.casefold() for r in rows),
    }


def document(
    args: argparse.Namespace,
    data: Path,
    conversations: Sequence[Conversation],
    outcome: Run,
    model: dict[str, Any],
    runtime: float,
) -> dict[str, Any]:
    """The results document: figures per system (overall, by category) and every answer."""
    results: dict[str, Any] = {}
    for system in SYSTEMS:
        rows = [r for r in outcome.rows if r.system == system]
        summary = figures(rows)
        summary["by_category"] = {
            CATEGORY_NAMES.get(cat, str(cat)): figures(
                [r for r in rows if r.question.category == cat]
            )
            for cat in sorted({r.question.category for r in rows})
        }
        results[system] = summary
    return {
        "meta": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "data": data.name,
            "conversations": [c.sample_id for c in conversations],
            "questions_per_conversation": args.questions or "all",
            "categories": args.categories,
            "ingest": args.ingest,
            "budget_tokens": args.budget,
            "k": args.k,
            "answer_tokens": args.answer_tokens,
            "model": model,
            "full_context_cut": outcome.cut,
            "ingest_s": outcome.ingest_s,
            "runtime_s": round(runtime, 1),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        **results,
        "answers": [
            {
                "system": r.system,
                "conversation": r.question.conversation,
                "index": r.question.index,
                "category": r.question.category,
                "question": r.question.question,
                "gold": r.question.answer,
                "answer": r.answer,
                "verdict": r.verdict,
                "f1": round(r.f1, 3),
                "evidence_in_context": r.evidence_in_context,
                "context_tokens": r.context_tokens,
                "error": r.error,
                "judge_reply": r.judge_reply,
            }
            for r in outcome.rows
        ],
    }


def table(document: dict[str, Any]) -> list[str]:
    """The markdown table of the systems."""
    out = [
        "| system | J | F1 | evidence in context | context tokens | answer s (p50) "
        '| judge unreadable | "not mentioned" |',
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for system in SYSTEMS:
        f = document[system]
        name = f"**{system}**" if system == "memtrellis" else system
        tokens = "–" if f["context_tokens"] is None else f"{f['context_tokens']:.0f}"
        out.append(
            f"| {name} | {as_percent(f['J'])} | {as_percent(f['F1'])} "
            f"| {as_percent(f['evidence_in_context'])} | {tokens} | {f['answer_s_p50']} "
            f"| {f['judge_unreadable']} | {f['not_mentioned']} |"
        )
    return out


def category_table(document: dict[str, Any]) -> list[str]:
    """J by category, one column per system."""
    cats = list(document["memtrellis"]["by_category"])
    out = ["| category (questions) | " + " | ".join(SYSTEMS) + " |"]
    out.append("|---|" + "--:|" * len(SYSTEMS))
    for cat in cats:
        n = document["memtrellis"]["by_category"][cat]["questions"]
        cells = [as_percent(document[s]["by_category"].get(cat, {}).get("J")) for s in SYSTEMS]
        out.append(f"| {cat} ({n}) | " + " | ".join(cells) + " |")
    return out


def markdown_section(document: dict[str, Any]) -> str:
    """The ``## LoCoMo answer quality`` section of docs/benchmarks.md."""
    meta = document["meta"]
    model = meta["model"]
    local = model.get("local")
    cut = meta["full_context_cut"]
    cut_text = "; ".join(
        f"{conv}: the latest {c['lines'] - c['lines_left_out']} of {c['lines']} lines "
        f"({c['tokens']} tokens)"
        for conv, c in cut.items()
        if c["lines_left_out"]
    )
    where = (
        f"a local llama.cpp server (`{local['model_file']}`, context {model['context_tokens']}, "
        f"threads: {local['threads']}) as answer model and judge"
        if local
        else f"`{model['model']}` at {model['base_url']} (judge `{model['judge_model']}`)"
    )
    lines = [
        SECTION_HEADING,
        "",
        "<!-- Written by `python benchmarks/locomo_qa.py --docs`; rerun it rather than "
        "editing the figures by hand. -->",
        "",
        "Does the memory context let a chat model answer? Each LoCoMo question is answered "
        "by the same model with the same prompt, given only memtrellis's memory context "
        "(`build_context(Memory.recall(...))`, the block the adapters inject), the full "
        "conversation, or plain dense retrieval (the same embedder over the raw turns); an "
        "LLM judge compares each answer with the gold one (**J**, the share judged correct, "
        "as in the Mem0 and Zep papers; the prompts are ours, in `benchmarks/_qa.py`).",
        "",
        f"Latest run: {meta['date']}, {len(meta['conversations'])} conversation(s) "
        f"({', '.join(meta['conversations'])}), {document['memtrellis']['questions']} questions "
        f"(up to {meta['questions_per_conversation']} per conversation, categories "
        f"{meta['categories']}, spread round-robin over them), {where}; memory context "
        f"within {meta['budget_tokens']} tokens (k={meta['k']}); ingest `{meta['ingest']}`; "
        f"{meta['runtime_s']:.0f} s in all on {meta['cpus']} CPUs. Figures: "
        "`benchmarks/results/locomo_qa.json` (every answer and verdict).",
        "",
        *table(document),
        "",
        "J, F1 (token overlap with the gold answer) and evidence in context (the share of "
        "the question's evidence turns in what the model was given) in percent; context "
        "tokens counted with "
        + model["tokens"]
        + ". "
        + (
            f"The full conversation did not fit the model's context window and was cut, "
            f"keeping the most recent turns: {cut_text}."
            if cut_text
            else "The full conversation fitted the model's context window."
        ),
        "",
        "J by category:",
        "",
        *category_table(document),
        "",
    ]
    if local:
        questions = sum(document[s]["questions"] for s in SYSTEMS)
        unreadable = sum(document[s]["judge_unreadable"] for s in SYSTEMS)
        lines += [
            "**A smoke run, not a result.** The packaged Gemma 3 270M is the base model (not "
            "instruction-tuned) with a ChatML template in its GGUF file: it is far too small "
            "to answer or to judge these questions, and mostly echoes the prompt or writes "
            f"template tokens ({unreadable} of {questions} judge replies had no readable "
            "verdict, counted as wrong). The run shows that ingest, recall, memory context, "
            "answer and judge work end to end on a model a package ships (no download); "
            "evidence in context, which does not depend on the model, is the column that "
            "says something here. The figures that compare memtrellis with the baselines "
            "come from a real model, reproduced as below.",
            "",
        ]
    lines += [
        "Reproduce (the local smoke run needs the `local-llm` extra, which builds "
        "llama.cpp's server from source once; a real model needs only an endpoint):",
        "",
        "```",
        'pip install -e ".[bench,local-llm]"',
        "python benchmarks/locomo_qa.py --docs                      # local smoke run",
        *(
            [
                f"python benchmarks/locomo_qa.py --conversations {len(meta['conversations'])} "
                f"--questions {meta['questions_per_conversation']} --local-context "
                f"{model['context_tokens']} --budget {meta['budget_tokens']} --docs  # this run"
            ]
            if local
            else []
        ),
        "export OPENAI_API_KEY=...                                  # or --api-key-env NAME",
        "python benchmarks/locomo_qa.py --base-url https://api.openai.com/v1 \\",
        "    --model gpt-4o-mini --context-tokens 128000 --conversations 10 --questions 0 --docs",
        "```",
        "",
        "Any OpenAI-compatible server works the same way (vLLM, Ollama's `/v1`, LM Studio, "
        "a LiteLLM proxy); `--judge-base-url`/`--judge-model` put the judge on another "
        "model; `--ingest fine` has the answer model extract memories (fine mode) instead "
        "of storing raw turns.",
        "",
    ]
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Insert or replace this benchmark's section of ``path`` (to the next ``## ``)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Benchmarks\n"
    lines = text.splitlines()
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
    parser.add_argument("--data", type=Path, default=None, help=f"default {default_data_path()}")
    parser.add_argument("--json", type=Path, default=None, help="default results/locomo_qa.json")
    parser.add_argument(
        "--base-url", default=None, help="OpenAI-compatible endpoint; default: a local server"
    )
    parser.add_argument("--model", default=None, help="model name (default gpt-4o-mini remote)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="NAME")
    parser.add_argument("--judge-base-url", default=None, help="default: --base-url")
    parser.add_argument("--judge-model", default=None, help="default: --model")
    parser.add_argument("--judge-api-key-env", default=None, metavar="NAME")
    parser.add_argument("--conversations", type=int, default=1, metavar="N")
    parser.add_argument(
        "--questions", type=int, default=8, metavar="N", help="per conversation; 0: all"
    )
    parser.add_argument(
        "--categories", default="1,2,3,4", help="LoCoMo categories (5: adversarial)"
    )
    parser.add_argument("--budget", type=int, default=1000, help="memory-context tokens")
    parser.add_argument("--k", type=int, default=50, help="memories recalled / turns retrieved")
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=None,
        help="the model's context window, for the full-context baseline "
        f"(default: the local server's, else {REMOTE_CONTEXT_DEFAULT})",
    )
    parser.add_argument("--local-context", type=int, default=32768, help="local server's -c")
    parser.add_argument(
        "--threads", type=int, default=None, help="local server's threads (default 2)"
    )
    parser.add_argument("--answer-tokens", type=int, default=48, help="longest answer")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per model call")
    parser.add_argument("--ingest", choices=("fast", "fine"), default="fast")
    parser.add_argument(
        "--docs",
        type=Path,
        nargs="?",
        const=repo_root() / "docs" / "benchmarks.md",
        default=None,
        metavar="PATH",
        help="also write this benchmark's section of PATH (default docs/benchmarks.md)",
    )
    parser.add_argument(
        "--render-from",
        type=Path,
        default=None,
        metavar="JSON",
        help="measure nothing: print (and --docs) from a saved results file",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 also when the data is missing."""
    args = parse_args(argv)
    if args.render_from is not None:
        result = json.loads(args.render_from.read_text(encoding="utf-8"))
        if args.docs is not None:
            write_section(args.docs, markdown_section(result))
        print("\n".join(table(result)))
        return 0
    data = data_path_or_none(args.data)
    if data is None:
        return 0
    result = run(args, data)
    out = args.json or results_dir() / "locomo_qa.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("\n".join(table(result)))
    print()
    print("\n".join(category_table(result)))
    print(f"figures written to {out}")
    if args.docs is not None:
        write_section(args.docs, markdown_section(result))
        print(f"section {SECTION_HEADING!r} written to {args.docs}")
    print(f"runtime {result['meta']['runtime_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
