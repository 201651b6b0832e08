"""What each test costs in CPU time, on a machine where wall time follows the load.

As a pytest plugin, it records for every test the CPU seconds of the process that ran it
(its threads included) and of the child processes it waited for (``getrusage``), and each
process's start and collection; as a script, it sums them up::

    PYTHONPATH=tools MEMTRELLIS_TEST_CPU=/tmp/cpu .nox/dev/bin/python -m pytest -p test_cpu -n 2
    .nox/dev/bin/python tools/test_cpu.py /tmp/cpu              # the costliest files and tests
    .nox/dev/bin/python tools/test_cpu.py /tmp/cpu --top 50

A child a test kills, or one that outlives it (a server it stops, a daemon), is not
counted: only what the test's process waited for. POSIX only (``resource``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["main", "summary"]

_OUT: Any = None


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _write(record: dict[str, Any]) -> None:
    global _OUT
    if _OUT is None:
        folder = Path(os.environ.get("MEMTRELLIS_TEST_CPU") or "test-cpu")
        folder.mkdir(parents=True, exist_ok=True)
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _OUT = (folder / f"{name}-{os.getpid()}.jsonl").open("a", encoding="utf-8")
    _OUT.write(json.dumps(record) + "\n")
    _OUT.flush()


def _mark(event: str) -> None:
    own, children = _cpu()
    _write({"event": event, "own": own, "children": children, "time": time.time()})


def pytest_configure(config: pytest.Config) -> None:
    _mark("start")


def pytest_collection_finish(session: pytest.Session) -> None:
    _mark("collected")


def pytest_sessionfinish(session: pytest.Session) -> None:
    _mark("finish")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    own, children, started = *_cpu(), time.monotonic()
    yield
    own_after, children_after = _cpu()
    _write(
        {
            "event": "test",
            "id": item.nodeid,
            "own": own_after - own,
            "children": children_after - children,
            "wall": time.monotonic() - started,
        }
    )


def summary(folder: Path, top: int = 20) -> str:
    """The processes' collection and total CPU, then the costliest files and tests."""
    lines: list[str] = []
    tests: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl")):
        marks: dict[str, float] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record["event"] == "test":
                tests.append(record)
            else:
                marks[record["event"]] = record["own"] + record["children"]
        if marks:  # the xdist controller collects nothing; its workers are its children
            collected = f"{marks['collected']:.1f}" if "collected" in marks else "-"
            lines.append(
                f"{path.stem}: CPU-s at its start {marks.get('start', 0):.1f}, once collected "
                f"{collected}, at the end {marks.get('finish', 0):.1f} (children included)"
            )
    own = sum(t["own"] for t in tests)
    children = sum(t["children"] for t in tests)
    lines.append(f"{len(tests)} tests: {own:.0f} CPU-s in-process, {children:.0f} in children")
    by_file: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for t in tests:
        name = t["id"].split("::")[0]
        by_file[name] += t["own"] + t["children"]
        count[name] += 1
    lines.append("CPU-s  tests  file")
    lines += [f"{cpu:6.1f} {count[name]:5d}  {name}" for name, cpu in by_file.most_common(top)]
    lines.append("CPU-s (own + children)  wall s  test")
    costly = sorted(tests, key=lambda t: t["own"] + t["children"], reverse=True)[:top]
    lines += [
        f"{t['own'] + t['children']:6.1f} ({t['own']:.1f} + {t['children']:.1f}) "
        f"{t['wall']:6.1f}  {t['id']}"
        for t in costly
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where the plugin wrote (MEMTRELLIS_TEST_CPU)")
    parser.add_argument("--top", type=int, default=20, help="files and tests to list")
    args = parser.parse_args(argv)
    print(summary(args.folder, args.top))


if __name__ == "__main__":
    main()
