"""Migrating a 0.1 store to entity shards: how long it takes and what it costs in RAM.

    python benchmarks/migrate.py                     # 20,000 memories
    python benchmarks/migrate.py --memories 100000 --keep

The 0.1 store is built by release 0.1 itself (commit ``f7b168f``, taken from the git
history with ``git archive``) running ``tests/v01_store_builder.py bulk``: entities of 500
fast-mode memories in conversations of 50 messages, the 64-d hashing embedder (so only the
store is measured), closed cleanly. Then, each in a fresh process:

* ``0.1 open``: ``Memory(path)`` with the 0.1 code, the cost a 0.1 user pays at every open;
* ``migrate``: ``migrate_store(path)`` with the current code, and the process's peak RSS;
* ``one shard``: loading one entity's shard of the migrated store.

``--small-entities N`` also builds a store of N entities of 5 memories (through the 0.1
``Store.put``, in batches) and migrates it, where the per-entity costs show (a store of
many users with few memories each).

Figures are printed and saved to ``benchmarks/results/migrate.json``; compare them as
ratios of one run (the machine is shared).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUILDER = ROOT / "tests" / "v01_store_builder.py"
V01_COMMIT = "f7b168f"

OPEN_V01 = """
import json, resource, sys, time
started = time.perf_counter()
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder
imported = time.perf_counter()
memory = Memory(sys.argv[1], embedder=HashingEmbedder())
opened = time.perf_counter()
memory.close()
print(json.dumps({"import_s": imported - started, "open_s": opened - imported,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

MIGRATE = """
import json, resource, sys, time
from memtrellis.store.migrate import migrate_store
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
report = migrate_store(sys.argv[1])
print(json.dumps({"report": report.to_dict(), "rss_before_mb": rss,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

ONE_SHARD = """
import json, sys, time
from pathlib import Path
from memtrellis.store.catalog import SqliteCatalog
from memtrellis.store.shardfiles import FileShardStorage
path = Path(sys.argv[1])
catalog = SqliteCatalog(path / "catalog.sqlite3")
stats = catalog.all()
catalog.close()
entity = next(iter(stats))
started = time.perf_counter()
graph, generation = FileShardStorage(path, entity).load()
print(json.dumps({"load_s": time.perf_counter() - started, "memories": len(graph),
                  "catalog_memories": {e: s.memories for e, s in stats.items()}}))
"""


def run(code: list[str], pythonpath: str) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=pythonpath, ANONYMIZED_TELEMETRY="False")
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *code], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{code[0]} failed:\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    return time.perf_counter() - started, lines[-1] if lines else ""


def v01_sources(target: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", V01_COMMIT, "src"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target)
    return target / "src"


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--small-entities", type=int, default=0, metavar="N")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memtrellis-migrate-"))
    current = os.pathsep.join([str(ROOT / "src"), *sys.path])
    try:
        old = v01_sources(work / "v01")
        store = work / "store"
        env_old = str(old)
        os.environ["V01_SOURCES"] = env_old
        build_s, _ = run(
            [str(BUILDER), "bulk", str(store), str(work / "built.json"), str(args.memories)],
            env_old,
        )
        built = json.loads((work / "built.json").read_text())
        graph_mb = (store / "graph.json").stat().st_size / 1e6
        store_mb = size_mb(store)
        _, line = run(["-c", OPEN_V01, str(store)], env_old)
        opened = json.loads(line)
        migrate_s, line = run(["-c", MIGRATE, str(store)], current)
        migrated = json.loads(line)
        _, line = run(["-c", ONE_SHARD, str(store)], current)
        shard = json.loads(line)
        if shard["catalog_memories"] != built["counts"]:
            raise SystemExit("the catalog does not count what 0.1 stored")
        report = migrated["report"]
        figures: dict[str, Any] = {
            "memories": sum(built["counts"].values()),
            "entities": len(built["counts"]),
            "build_with_0.1_s": round(build_s, 1),
            "graph_json_mb": round(graph_mb, 1),
            "store_mb_before": round(store_mb, 1),
            "store_mb_after": round(size_mb(store), 1),
            "v01_open_s": round(opened["open_s"], 3),
            "v01_open_peak_rss_mb": round(opened["peak_rss_mb"]),
            "migrate_s": round(report["seconds"], 3),
            "migrate_process_s": round(migrate_s, 2),
            "migrate_peak_rss_mb": round(migrated["peak_rss_mb"]),
            "migrate_rss_before_mb": round(migrated["rss_before_mb"]),
            "migrate_per_1k_memories_s": round(
                1000 * report["seconds"] / max(1, report["memories"]), 4
            ),
            "migrate_vs_v01_open": round(report["seconds"] / opened["open_s"], 2),
            "one_shard_load_s": round(shard["load_s"], 4),
            "one_shard_memories": shard["memories"],
        }
        if args.small_entities:
            small = work / "small"
            many = [str(BUILDER), "many", str(small), str(work / "small.json")]
            run([*many, str(args.small_entities), "5"], env_old)
            _, line = run(["-c", OPEN_V01, str(small)], env_old)
            small_open = json.loads(line)
            _, line = run(["-c", MIGRATE, str(small)], current)
            small_report = json.loads(line)["report"]
            figures.update(
                {
                    "small_entities": small_report["entities"],
                    "small_memories": small_report["memories"],
                    "small_v01_open_s": round(small_open["open_s"], 3),
                    "small_migrate_s": round(small_report["seconds"], 3),
                    "small_migrate_vs_v01_open": round(
                        small_report["seconds"] / small_open["open_s"], 2
                    ),
                }
            )
        for name, value in figures.items():
            print(f"{name:>28}: {value}")
        out = ROOT / "benchmarks" / "results" / "migrate.json"
        out.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"saved {out.relative_to(ROOT)}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
