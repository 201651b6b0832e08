"""The random-SIGKILL harnesses at a larger size than the test suite runs them.

Runs the two harnesses of ``tests/test_crash_safety.py`` with the fork server of
``tests/crash_child.py``:

* writes: a worker adds, stores, captures and forgets at random and is killed with
  SIGKILL after 50-800 ms (every fifth trial while it is still opening); after each kill
  the store is reopened and every guarantee checked (nothing acknowledged lost or doubled,
  no forget undone, graph and index agreeing, nothing pending, catalog exact);
* repairs: each store is built by write trials, then damaged (or not) and repaired by a
  worker running ``repair_store`` (``--from-graph`` or automatic), killed at a random
  point; the store is reopened (running the repair its error names, when it refuses to
  open) and checked the same way.

It prints, for each harness, the trials run, the operations acknowledged before the kills,
and the failures (each with its seed and trial, so that ``MEMTRELLIS_CRASH_SEED`` can
replay it). Every store lives under a temporary directory removed at the end.

    python benchmarks/sigkill_harness.py                       # 60 write trials, 6x5 repairs
    python benchmarks/sigkill_harness.py --writes 132 --repair-stores 10 --seed 7
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from memtrellis.testing import own_tempdir  # noqa: E402
from test_crash_safety import (  # noqa: E402
    ForkServer,
    run_repair_harness,
    run_write_harness,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=60, help="write trials")
    parser.add_argument("--per-store", type=int, default=5, help="write trials per store")
    parser.add_argument("--repair-stores", type=int, default=6, help="stores repaired")
    parser.add_argument("--repairs", type=int, default=5, help="killed repairs per store")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"seed {seed}")
    failed = 0
    with own_tempdir(prefix="memtrellis-sigkill-"):
        server = ForkServer()
        try:
            for name in ("writes", "repairs"):
                failures: list[str] = []
                root = Path(tempfile.mkdtemp(prefix=f"{name}-"))
                started = time.perf_counter()
                if name == "writes":
                    tally = run_write_harness(
                        server,
                        root,
                        seed,
                        trials=args.writes,
                        per_store=args.per_store,
                        failures=failures,
                    )
                else:
                    tally = run_repair_harness(
                        server,
                        root,
                        seed,
                        stores=args.repair_stores,
                        repairs=args.repairs,
                        failures=failures,
                    )
                seconds = time.perf_counter() - started
                print(
                    f"{name}: trials {tally.trials}, acknowledged operations {tally.acks}, "
                    f"failures {len(failures)} ({seconds:.0f} s)"
                )
                print(f"  {tally}")
                for failure in failures:
                    print(f"  FAILED {failure[:600]}")
                failed += len(failures)
        finally:
            server.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
