"""Importing an export of 1,000 memories: the old path against ``Memory.import_``.

Issue 17. One run builds a store of N memories (fast-mode conversations of 10 messages,
so ``follows`` edges too, over 5 entities), exports it with ``Memory.export``, then
imports the file into two fresh stores:

* **old path**: what ``memtrellis import`` did before ``Memory.import_`` existed, one
  ``Memory.store(item, lifecycle=False)`` per line (an embedding call, a logged and fsynced
  commit and a Chroma upsert per memory);
* **new path**: ``Memory.import_`` into a store of the same embedder: the vectors the
  export carries are reused and each batch of 256 memories is one commit per entity;
* **new path, re-embedding**: ``Memory.import_`` of the same file without its vectors (as
  a store of another embedder sees it, or a file of the old format): each batch is also
  embedded in one call.

All use the default offline embedder (all-MiniLM-L6-v2, int8 ONNX) unless ``--hashing``
is given, and the stores must then hold the same memories (checked). Prints the export
time, the import times and their ratios to the old path, measured in the same run.

Run:  python benchmarks/export_import.py            (N = 1,000: about a minute on 2 cores)
      python benchmarks/export_import.py --n 200 --hashing   (a few seconds)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from memtrellis import Memory
from memtrellis.embeddings import Embedder, default_embedder
from memtrellis.testing import HashingEmbedder
from memtrellis.transfer import parse_line

ENTITIES = 5
TOPICS = ("the garden", "a trip to Kyoto", "the new bike", "jazz records", "the tax return")


def _conversation(entity: int, number: int) -> list[dict[str, str]]:
    topic = TOPICS[(entity + number) % len(TOPICS)]
    return [
        {
            "role": "user" if turn % 2 == 0 else "assistant",
            "content": f"Message {turn} of chat {number} of user {entity} about {topic}",
        }
        for turn in range(10)
    ]


def _build(path: Path, n: int, embedder: Embedder) -> None:
    with Memory(path, embedder=embedder) as memory:
        for number in range(n // 10):
            entity = number % ENTITIES
            memory.add(_conversation(entity, number), entity_id=f"user-{entity}", mode="fast")


def _old_import(memory: Memory, dump: Path) -> int:
    count = 0
    with dump.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                item = parse_line(line).item
                memory.store(item, lifecycle=False)
                count += 1
    return count


def _contents(path: Path, embedder: Embedder) -> set[tuple[str, str, str]]:
    with Memory(path, embedder=embedder) as memory:
        return {
            (item.scope.entity_id, item.id, item.text)
            for entity in range(ENTITIES)
            for item in memory.list(entity_id=f"user-{entity}", limit=100_000)
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="memories (default 1,000)")
    parser.add_argument("--hashing", action="store_true", help="the hashing test embedder")
    args = parser.parse_args()
    embedder: Embedder = HashingEmbedder() if args.hashing else default_embedder()
    embedder.embed_documents(["warm up"])
    with tempfile.TemporaryDirectory(prefix="mt-export-import-") as tmp:
        root = Path(tmp)
        _build(root / "source", args.n, embedder)
        dump = root / "export.jsonl"
        with Memory(root / "source", embedder=embedder) as memory:
            started = time.perf_counter()
            exported = memory.export(dump, progress=False)
            export_s = time.perf_counter() - started

        with Memory(root / "old", embedder=embedder) as memory:
            started = time.perf_counter()
            old_count = _old_import(memory, dump)
            old_s = time.perf_counter() - started
        with Memory(root / "new", embedder=embedder) as memory:
            started = time.perf_counter()
            report = memory.import_(dump, progress=False)
            new_s = time.perf_counter() - started
        bare = root / "without-vectors.jsonl"
        with dump.open(encoding="utf-8") as lines, bare.open("w", encoding="utf-8") as out:
            for line in lines:
                record = json.loads(line)
                record.pop("vector", None)
                out.write(json.dumps(record) + "\n")
        with Memory(root / "embedded", embedder=embedder) as memory:
            started = time.perf_counter()
            embedded = memory.import_(bare, progress=False)
            embed_s = time.perf_counter() - started
        old = _contents(root / "old", embedder)
        same = old == _contents(root / "new", embedder) == _contents(root / "embedded", embedder)

    print(f"memories: {exported} over {ENTITIES} entities, embedder {embedder.model_id}")
    print(f"export (Memory.export):              {export_s:7.2f} s")
    print(f"import, old path (store per line):   {old_s:7.2f} s  ({old_count} memories)")
    print(f"import, new path (Memory.import_):   {new_s:7.2f} s  ({report.imported} memories)")
    print(f"import, new path re-embedding:       {embed_s:7.2f} s  ({embedded.imported} memories)")
    print(f"speed-up new vs old:                 {old_s / new_s:7.1f}x")
    print(f"speed-up new re-embedding vs old:    {old_s / embed_s:7.1f}x")
    print(f"edges restored: {report.edges}; both stores hold the same memories: {same}")
    if not same or report.imported != old_count:
        sys.exit(1)


if __name__ == "__main__":
    main()
