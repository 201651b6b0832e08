"""Does a forget stick when writes race it? Random rounds in threads and in processes.

    PYTHONPATH=src python benchmarks/forget_races.py      # 300 thread rounds, 100 in processes
    PYTHONPATH=src python benchmarks/forget_races.py --threads 50 --processes 10

Each round uses a new entity holding one memory X. A writer starts one of these writes,
with its embedder (threads) or its relation judge (both) sleeping a random 0-4 ms so that
it may or may not overlap the forget:

- ``update``: ``update(X, text=...)``;
- ``merge``: ``add`` of X's text (a duplicate, merged into X);
- ``supersede``: ``add`` of a fact that a scripted relation judge says contradicts X;
- ``add``: ``add`` of an unrelated text, racing ``forget(entity_id=...)``.

Meanwhile the round forgets X (or, for ``add``, the whole entity) after a random 0-4 ms.
A round *fails* when the forget returned a count of at least 1 and afterwards (in the
same process and again after reopening) X is stored or indexed, or, for an entity
forgotten, the racing add stored anything although it began before the forget did (an
add begun after is stored as usual; one begun while the forget ran is not judged).
Process rounds run the writer in a second process that works on the same store
directory, a round at a time.

Printed: rounds, acknowledged forgets (those that returned >= 1) and failures, per write
and mode. Issue 19 reported 22 failures in 300 thread rounds and about 1 in 100 across
processes before the fix.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from memtrellis import Memory
from memtrellis.errors import MemoryNotFoundError
from memtrellis.testing import HashingEmbedder, ScriptedLLM, store_of

WRITES = ("update", "merge", "supersede", "add")
TEXT = "Ana keeps the spare key under the blue pot."


class Jittery(HashingEmbedder):
    """The hashing embedder, sleeping a random moment before each document call."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(self.rng.random() * 0.004)
        return super().embed_documents(texts)


def judge(rng: random.Random) -> ScriptedLLM:
    """A relation judge that says the closest memory is contradicted, after a moment."""

    def reply(messages: list[dict[str, str]]) -> str:
        time.sleep(rng.random() * 0.004)
        verdict = {"index": 0, "relation": "contradicts", "reason": "changed"}
        return json.dumps({"relations": [verdict]})

    return ScriptedLLM(reply)


def write(memory: Memory, kind: str, entity: str, target: str) -> float:
    """One racing write of ``kind`` against memory ``target`` of ``entity``; when it began
    (``time.monotonic()``, the same clock in every process of the machine)."""
    began = time.monotonic()
    try:
        if kind == "update":
            memory.update(target, entity_id=entity, text="Ana keeps the spare key in the shed.")
        elif kind == "merge":
            memory.add(TEXT, entity_id=entity, memory_type="fact", mode="fast")
        elif kind == "supersede":
            memory.add(
                "The spare key now hangs in the hall.",
                entity_id=entity,
                memory_type="fact",
                mode="fast",
            )
        else:
            memory.add("Ana's bike is red.", entity_id=entity, mode="fast")
    except MemoryNotFoundError:
        pass  # the forget came first: the update was refused, as it should be
    return began


def leftovers(memory: Memory, kind: str, entity: str, target: str) -> bool:
    """Whether anything the forget removed is stored or indexed again."""
    if kind == "add":
        return bool(memory.list(entity_id=entity)) or bool(store_of(memory).vectors.count(entity))
    ids = {item.id for item in memory.list(entity_id=entity)}
    return target in ids or bool(store_of(memory).vectors.has(entity, [target]))


def forget(
    memory: Memory, kind: str, entity: str, target: str, rng: random.Random
) -> tuple[int, float, float]:
    """Forget X (or the entity); the count, and when the forget began and ended."""
    time.sleep(rng.random() * 0.004)
    began = time.monotonic()
    if kind == "add":
        count = memory.forget(entity_id=entity)
    else:
        count = memory.forget(target, entity_id=entity)
    return count, began, time.monotonic()


def judged(
    counts: Counter[tuple[str, str]], kind: str, forgotten: tuple[int, float, float], began: float
) -> bool:
    """Count the round; whether its outcome is to be checked."""
    counts[(kind, "rounds")] += 1
    count, start, _ = forgotten
    if not count:
        return False
    counts[(kind, "acknowledged")] += 1
    if kind == "add" and began >= start:
        # Begun after the forget (stored as usual) or while it ran (either is right).
        counts[(kind, "add began after")] += 1
        return False
    return True


def thread_rounds(root: Path, rounds: int, seed: int) -> Counter[tuple[str, str]]:
    rng = random.Random(seed)
    counts: Counter[tuple[str, str]] = Counter()
    path = root / "threads"
    plan: list[tuple[str, str, str]] = []
    with Memory(path, embedder=Jittery(rng), llm=judge(rng)) as memory:
        for number in range(rounds):
            kind, entity = WRITES[number % len(WRITES)], f"t{number}"
            [item] = memory.add(TEXT, entity_id=entity, memory_type="fact", mode="fast")
            began: list[float] = []
            writer = threading.Thread(
                target=lambda: began.append(write(memory, kind, entity, item.id))  # noqa: B023
            )
            writer.start()
            forgotten = forget(memory, kind, entity, item.id, rng)
            writer.join()
            if judged(counts, kind, forgotten, began[0]):
                plan.append((kind, entity, item.id))
                if leftovers(memory, kind, entity, item.id):
                    counts[(kind, "failures")] += 1
    reopened(path, plan, counts)
    return counts


WRITER = """
import json, random, sys, time
sys.path.insert(0, sys.argv[2])
from forget_races import Jittery, judge, write
from memtrellis import Memory
rng = random.Random(int(sys.argv[3]))
with Memory(sys.argv[1], embedder=Jittery(rng), llm=judge(rng)) as memory:
    print("ready", flush=True)
    for line in sys.stdin:
        kind, entity, target = json.loads(line)
        print(write(memory, kind, entity, target), flush=True)
"""


def process_rounds(root: Path, rounds: int, seed: int) -> Counter[tuple[str, str]]:
    rng = random.Random(seed)
    counts: Counter[tuple[str, str]] = Counter()
    path = root / "processes"
    plan: list[tuple[str, str, str]] = []
    with Memory(path, embedder=HashingEmbedder()):
        pass
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(path), str(Path(__file__).parent), "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    with Memory(path, embedder=HashingEmbedder()) as memory:
        for number in range(rounds):
            kind, entity = WRITES[number % len(WRITES)], f"p{number}"
            [item] = memory.add(TEXT, entity_id=entity, memory_type="fact", mode="fast")
            child.stdin.write(json.dumps([kind, entity, item.id]) + "\n")
            child.stdin.flush()
            forgotten = forget(memory, kind, entity, item.id, rng)
            began = float(child.stdout.readline())
            if judged(counts, kind, forgotten, began):
                plan.append((kind, entity, item.id))
                if leftovers(memory, kind, entity, item.id):
                    counts[(kind, "failures")] += 1
    child.stdin.close()
    child.wait(timeout=60)
    reopened(path, plan, counts)
    return counts


def reopened(
    path: Path, plan: list[tuple[str, str, str]], counts: Counter[tuple[str, str]]
) -> None:
    """Check the judged rounds again in a fresh `Memory` on the store."""
    with Memory(path, embedder=HashingEmbedder()) as memory:
        for kind, entity, target in plan:
            if leftovers(memory, kind, entity, target):
                counts[(kind, "failures after reopen")] += 1


def report(name: str, counts: Counter[tuple[str, str]]) -> dict[str, Any]:
    columns = ("rounds", "acknowledged", "add began after", "failures", "failures after reopen")
    print(f"\n{name}")
    print(f"{'write':<10}" + "".join(f"{c:>22}" for c in columns))
    table: dict[str, Any] = {}
    for kind in WRITES:
        row = {c: counts[(kind, c)] for c in columns}
        table[kind] = row
        print(f"{kind:<10}" + "".join(f"{row[c]:>22}" for c in columns))
    total = {c: sum(counts[(k, c)] for k in WRITES) for c in columns}
    print(f"{'all':<10}" + "".join(f"{total[c]:>22}" for c in columns))
    table["all"] = total
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=300, help="thread rounds")
    parser.add_argument("--processes", type=int, default=100, help="process rounds")
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memtrellis-forget-races-"))
    try:
        results = {
            "threads": report("threads", thread_rounds(root, args.threads, args.seed)),
            "processes": report("processes", process_rounds(root, args.processes, args.seed)),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = Path(__file__).parent / "results" / "forget_races.json"
    out.write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
