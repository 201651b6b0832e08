"""What the checks a shard makes when it opens cost (issue 19: no silent open of damage).

Opening a shard now compares what it loaded with the catalog's last record of the entity
(one SQLite row read) and with the entity's vector count (one Chroma ``count``), see
``memtrellis.store._open_checks``. This builds a store of ``--entities`` entities with
``--memories`` memories each (fast mode, the hashing embedder, the last ``--logged`` of
each entity left in its write-ahead log as a writer that died leaves them), then opens it
``--rounds`` times and loads every shard, alternately with the checks on and off
(``ShardSettings.verify``), and prints the median time to open the store and load every
shard, per shard, and the ratio with the checks to without, measured in the same run.

    python benchmarks/open_checks.py
    python benchmarks/open_checks.py --entities 20 --memories 250 --rounds 7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder, own_tempdir, store_of

LOG_AND_DIE = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    m = Memory(sys.argv[1], embedder=HashingEmbedder())
    for e in range(int(sys.argv[2])):
        for i in range(int(sys.argv[3])):
            m.add(f"logged note {e} {i}", entity_id=f"user-{e}", memory_type="episode",
                  mode="fast")
    os._exit(0)
"""


def build(path: Path, entities: int, memories: int, logged: int) -> None:
    with Memory(path, embedder=HashingEmbedder()) as memory:
        for entity in range(entities):
            texts = [f"note {entity} {i}" for i in range(memories - logged)]
            for text in texts:
                memory.add(text, entity_id=f"user-{entity}", memory_type="episode", mode="fast")
    subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LOG_AND_DIE), str(path), str(entities), str(logged)],
        check=True,
    )


def open_all(path: Path, entities: int, *, verify: bool, recall: bool) -> float:
    started = time.perf_counter()
    with Memory(path, embedder=HashingEmbedder()) as memory:
        store = store_of(memory)
        store._settings.verify = verify
        for entity in range(entities):
            store.shard(f"user-{entity}")
            if recall:
                memory.recall("note", entity_id=f"user-{entity}")
        took = time.perf_counter() - started
        # No close-time snapshot between rounds: every round loads the same logs.
        for shard in list(store._shards.values()):
            shard._ops_since_snapshot = 0
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10)
    parser.add_argument("--memories", type=int, default=300, help="per entity")
    parser.add_argument("--logged", type=int, default=30, help="per entity, only in the log")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with own_tempdir(prefix="memtrellis-open-checks-"):
        path = Path(tempfile.mkdtemp()) / "store"
        build(path, args.entities, args.memories, args.logged)
        total = args.entities * args.memories
        print(f"store: {args.entities} entities x {args.memories} memories = {total}")
        for recall, what in ((False, "load every shard"), (True, "load and recall each")):
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.rounds):
                for verify in (False, True):
                    took = open_all(path, args.entities, verify=verify, recall=recall)
                    times[verify].append(took)
            off, on = statistics.median(times[False]), statistics.median(times[True])
            print(
                f"open + {what}: checks off {off * 1000:.1f} ms, on {on * 1000:.1f} ms "
                f"(median of {args.rounds}); per shard {(on - off) / args.entities * 1000:+.2f} "
                f"ms, ratio on/off {on / off:.3f}"
            )


if __name__ == "__main__":
    main()
