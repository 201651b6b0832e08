"""How many relation-judge calls a fine-mode ingestion makes: LoCoMo's observations as facts.

Fine mode stores the facts a model extracted and, with an LLM configured, asks the
relation judge (`memtrellis.lifecycle.relation_judge`) about the candidates the rules are
not sure of. LoCoMo's ``observation`` facts stand in for what extraction gives (as in
``benchmarks/locomo.py --mode observations``): each conversation's facts are stored one
by one with ``Memory.store`` into a store of its own, with a chat model that counts the
judge's calls and the candidates in each, and answers with no opinion (so the rules
decide and the store evolves as it would without a judge; the judge's failure counter
counts these no-opinion replies too). It reports the calls, the candidates asked, and
how many facts the rules superseded.

The data is LoCoMo (CC BY-NC 4.0, evaluation only), read from ``../shared/bench/`` and
never copied into the project; when it is missing the script says so and exits 0.

    python benchmarks/judge_calls.py                       # the MiniLM embedder
    python benchmarks/judge_calls.py --limit-conversations 2 --json /tmp/calls.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _locomo import default_data_path, load_locomo
from locomo import observation_items

from memtrellis import Memory
from memtrellis.embeddings import default_embedder

#: What the counting model answers: no opinion on any candidate (the rules decide).
NO_OPINION = json.dumps({"relations": []})
_EXISTING = ("EXISTING memories:", "已有记忆：")


class CountingLLM:
    """A chat model that counts the relation judge's calls and candidates."""

    def __init__(self) -> None:
        self.calls = 0
        self.candidates = 0

    def complete(self, messages: Sequence[dict[str, str]]) -> str:
        self.calls += 1
        user = messages[-1]["content"]
        for marker in _EXISTING:
            if marker in user:
                listed = user.split(marker, 1)[1].strip().splitlines()
                self.candidates += sum(1 for line in listed if line.split(":", 1)[0].isdigit())
        return NO_OPINION


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    data = args.data or default_data_path()
    if not data.exists():
        print(f"LoCoMo data not found at {data}; pass --data PATH", file=sys.stderr)
        return 0
    logging.getLogger("memtrellis.lifecycle").setLevel(logging.ERROR)  # no-opinion replies
    conversations = load_locomo(data)[: args.limit_conversations]
    embedder = default_embedder()
    load = os.getloadavg()[0]
    figures: dict[str, Any] = {"conversations": {}, "load_average_before": round(load, 2)}
    totals = {"facts": 0, "judge_calls": 0, "candidates_asked": 0, "superseded": 0}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memtrellis-judge-calls-") as tmp:
        for conv in conversations:
            llm = CountingLLM()
            with Memory(Path(tmp) / conv.sample_id, embedder=embedder, llm=llm) as memory:
                items = observation_items(conv)
                for item in items:
                    memory.store(item)
                superseded = memory.health().superseded
            row = {
                "facts": len(items),
                "judge_calls": llm.calls,
                "candidates_asked": llm.candidates,
                "superseded": superseded,
            }
            figures["conversations"][conv.sample_id] = row
            for key in totals:
                totals[key] += row[key]
            print(f"  {conv.sample_id}: {row}", flush=True)
    figures.update(totals)
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["load_average_after"] = round(os.getloadavg()[0], 2)
    facts = max(1, totals["facts"])
    print(
        f"{totals['facts']} facts: {totals['judge_calls']} judge calls "
        f"({100 * totals['judge_calls'] / facts:.1f}% of facts), "
        f"{totals['candidates_asked']} candidates asked "
        f"({totals['candidates_asked'] / max(1, totals['judge_calls']):.2f} a call), "
        f"{totals['superseded']} superseded by the rules; load {load:.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
