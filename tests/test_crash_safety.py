"""Crash safety: writers killed with SIGKILL at random points lose nothing acknowledged.

Each trial forks a worker (tests/crash_child.py) that opens the store and writes at random
(``add`` in fast mode, ``store``, ``capture``, ``forget``), acknowledging every call that
returned in an fsync'd file. After a random 50-800 ms (or, every fifth trial, while it
is still opening and repairing the store) the worker gets SIGKILL. The test then reopens
the store and checks it: it opens, graph and vector index hold the same ids per entity,
nothing is left pending, every acknowledged write is there exactly once (captured turns
after a flush), every acknowledged forget holds, and no temporary file is left behind.

The trials are seeded: ``MEMTRELLIS_CRASH_SEED=<n>`` replays a failing run, whose seed
every failure message names.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memtrellis import Memory
from memtrellis.store.shardfiles import shard_dir
from memtrellis.testing import HashingEmbedder, capture_service_of, store_of
from test_store_durability import _run as run_code

CHILD = Path(__file__).with_name("crash_child.py")
ENTITIES = ("alice", "bob")
TRIALS = 20
TRIALS_PER_STORE = 5  # a store reused this often: later workers repair earlier crashes


class ForkServer:
    """tests/crash_child.py in a subprocess, and the lines it prints."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, ANONYMIZED_TELEMETRY="False"),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.errors: list[str] = []
        pump = threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True)
        pump.start()
        threading.Thread(target=self._collect_errors, daemon=True).start()

    @staticmethod
    def _pump(stream: Any, into: queue.Queue[str]) -> None:
        for line in stream:
            into.put(line.strip())
        into.put("eof")

    def _collect_errors(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line)

    def next_line(self, timeout: float = 60) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the fork server said nothing for {timeout} s") from None
        assert line != "eof", "the fork server died: " + "".join(self.errors[-40:])
        return line

    def start(self, trial: dict[str, Any]) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(trial) + "\n")
        self.proc.stdin.flush()
        kind, pid = self.next_line().split()
        assert kind == "pid"
        return int(pid)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def fork_server() -> Iterator[ForkServer]:
    server = ForkServer()
    try:
        yield server
    finally:
        server.close()


@dataclass
class Expected:
    """What the acknowledgements of one store's workers promise."""

    present: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (entity, text)
    gone: set[str] = field(default_factory=set)
    acks: int = 0

    def read(self, ack_file: Path) -> None:
        """Fold in a killed worker's acknowledgements (a torn last line was never acked)."""
        if not ack_file.exists():
            return
        for line in ack_file.read_text().splitlines(keepends=True):
            if not line.endswith("\n"):
                break
            record = json.loads(line)
            self.acks += record["op"] != "forgetting"
            if record["op"] in ("add", "store"):
                for memory_id in record["ids"]:
                    self.present[memory_id] = (record["entity"], record["text"])
            elif record["op"] == "capture":
                # Memory._store_result derives a captured turn's memory ids from the entry id.
                memory_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{record['entry']}:0").hex
                self.present[memory_id] = (record["entity"], record["text"])
            elif record["op"] == "forgetting":  # not acknowledged yet: may be either
                for memory_id in record["ids"]:
                    self.present.pop(memory_id, None)
            else:
                assert record["op"] == "forget", record
                self.gone.update(record["ids"])


@dataclass
class Tally:
    """Where kills landed, judged from what reopening found (printed, not asserted)."""

    acks: int = 0
    rolled_forward: int = 0
    torn_log_records: int = 0
    captures_adopted: int = 0
    snapshot_temp_files: int = 0
    trials: int = 0
    repairs_killed: int = 0  # repair trials killed before they finished
    refused_after_repair_kill: int = 0  # opens that named the repair instead of hiding damage


def _temp_files(path: Path) -> list[Path]:
    """Files a write cut off would leave: atomic-write temporaries (snapshots, shard
    pointers, the manifest) anywhere outside Chroma's own directory."""
    return [p for p in path.rglob(".*.tmp") if "chroma" not in p.relative_to(path).parts]


def _stray_shard_files(path: Path) -> list[str]:
    """What a shard directory holds besides its pointer, snapshot, current log and lock."""
    stray: list[str] = []
    for entity in ENTITIES:
        directory = shard_dir(path, entity)
        if not directory.is_dir():
            continue
        pointer = directory / "shard.json"  # absent until the first snapshot
        generation = json.loads(pointer.read_text())["generation"] if pointer.exists() else 0
        allowed = {"shard.json", "graph.json", "shard.lock", f"wal-{generation:06d}.jsonl"}
        stray += [
            f"{entity}/{p.name}"
            for p in directory.iterdir()
            # what a repair moved aside is kept on purpose (never deleted)
            if p.name not in allowed and ".corrupt-" not in p.name and ".replaced-" not in p.name
        ]
    return stray


def check_store(path: Path, expected: Expected, tally: Tally) -> None:
    """Reopen the store after a kill and check every guarantee."""
    tally.snapshot_temp_files += len(_temp_files(path))
    with Memory(path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        tally.captures_adopted += len(capture_service_of(memory).adopted)
        assert memory.flush(timeout=120), "adopted captured turns were not stored"
        store = store_of(memory)
        items: dict[str, Any] = {}
        counts: dict[str, int] = {}
        for entity in ENTITIES:
            # The first use of an entity loads its shard: catching up with its log, rolling
            # forward what was logged but not indexed, cutting a torn last record.
            with store.reading(entity) as shard:
                in_graph = set(shard.graph.memory_ids(entity))
                assert shard.graph.entity_ids() in ([entity], []), "a shard holds another entity"
                items.update({item.id: item for item in shard.graph.items()})
                copies, unreadable = store.vectors.item_copies(entity)
                assert unreadable == 0, f"{entity}: {unreadable} unreadable index copies"
                in_index = set(copies)
                assert in_graph == in_index, (
                    f"{entity}: graph and vector index disagree: only in the graph "
                    f"{sorted(in_graph - in_index)}, "
                    f"only in the index {sorted(in_index - in_graph)}"
                )
                counts[entity] = len(in_graph)
        assert sorted(store.resident()) == sorted(ENTITIES)
        assert store.pending_count == 0, "a change is still missing from the vector index"
        tally.rolled_forward += len(memory.recovery_report.rolled_forward)
        tally.torn_log_records += memory.recovery_report.torn_records
        texts = [item.text for item in items.values()]
        doubled = sorted({text for text in texts if texts.count(text) > 1})
        assert not doubled, f"stored twice: {doubled}"
        for memory_id, (entity, text) in expected.present.items():
            assert memory_id in items, f"acknowledged {text!r} ({memory_id}) was lost"
            assert (items[memory_id].scope.entity_id, items[memory_id].text) == (entity, text)
        assert not expected.gone & set(items), "an acknowledged forget came back"
        health = memory.health()
        assert health.total_memories == len(items)
        assert health.capture_spooled == 0
        own_spool = capture_service_of(memory).spool.path
        assert [p for p in (path / "spool").glob("*.jsonl") if p != own_spool] == []
        assert _stray_shard_files(path) == [], "a shard keeps files it no longer uses"
    assert _temp_files(path) == [], "a temporary file was left behind"
    assert _stray_shard_files(path) == [], "a shard keeps files it no longer uses"
    with Memory(path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        # Closed cleanly, the catalog holds every entity's exact figures (read unloaded).
        rows = store_of(memory).catalog.all()
        assert store_of(memory).resident() == []
        assert {e: r.memories for e, r in rows.items()} == {
            e: n for e, n in counts.items() if n or e in rows
        }, "the catalog's figures are not exact"


def run_trial(
    server: ForkServer, trial: dict[str, Any], rng: random.Random, *, longest: float = 0.8
) -> set[str]:
    """Start a worker, kill it at a random point and wait until it is gone; returns the
    lines it printed (``ready``, ``repaired``)."""
    pid = server.start(trial)
    said: set[str] = set()
    if trial.get("kill_while_opening"):
        time.sleep(rng.uniform(0.0, 0.6))
    else:
        line = server.next_line()
        assert line == "ready", line
        said.add(line)
        time.sleep(rng.uniform(0.05, longest))
    os.kill(pid, signal.SIGKILL)
    while True:
        line = server.next_line()
        if line in ("ready", "repaired"):  # it got that far just before the kill
            said.add(line)
            continue
        kind, dead, status = line.split()
        assert (kind, int(dead)) == ("exit", pid)
        break
    # A worker that raised instead of being killed found a bug of its own.
    assert os.WIFSIGNALED(int(status)), "the worker failed: " + "".join(server.errors[-40:])
    assert os.WTERMSIG(int(status)) == signal.SIGKILL
    return said


def write_trial(number: int, path: Path, root: Path, rng: random.Random) -> dict[str, Any]:
    return {
        "store": str(path),
        "ack": str(root / f"ack-{number}.jsonl"),
        "seed": rng.randrange(2**32),
        "tag": f"t{number}",
        "compact_every": rng.choice([3, 8, 20]),
        "slow_snapshots": rng.random() < 0.5,
        "kill_while_opening": number % 5 == 4,
    }


def run_write_harness(
    server: ForkServer,
    root: Path,
    seed: int,
    *,
    trials: int = TRIALS,
    per_store: int = TRIALS_PER_STORE,
    failures: list[str] | None = None,
) -> Tally:
    """The write trials: each kills a writer, then reopens and checks the store.

    A failure raises, naming the seed and trial; with ``failures`` (the benchmark) it is
    recorded there instead and the next trial starts a new store.
    """
    rng = random.Random(seed)
    tally = Tally()
    expected = Expected()
    fresh = 0
    for number in range(trials):
        if (number - fresh) % per_store == 0:
            expected = Expected()
        path = root / f"store-{fresh}-{(number - fresh) // per_store}"
        trial = write_trial(number, path, root, rng)
        try:
            run_trial(server, trial, rng)
            before = expected.acks
            expected.read(Path(trial["ack"]))
            tally.acks += expected.acks - before
            tally.trials += 1
            check_store(path, expected, tally)
        except Exception as exc:  # a store that fails to open, too
            message = f"crash-safety seed {seed}, trial {number} {trial}: {exc}"
            if failures is None:
                raise AssertionError(message) from exc
            failures.append(message)
            fresh = number + 1
    return tally


def test_sigkill_at_random_points_loses_nothing_acknowledged(
    tmp_path: Path, fork_server: ForkServer
) -> None:
    seed = int(os.environ.get("MEMTRELLIS_CRASH_SEED") or random.randrange(2**32))
    print(f"crash-safety seed {seed} (replay: MEMTRELLIS_CRASH_SEED={seed})")
    tally = run_write_harness(fork_server, tmp_path, seed)
    print(f"crash-safety seed {seed}: {tally}")
    assert tally.acks > 0, "no worker ever acknowledged a write: the harness tested nothing"


REPAIR_TRIALS = 4  # per store, after WRITES_BEFORE_REPAIRS write trials built it
WRITES_BEFORE_REPAIRS = 2
BUILD_RETRIES = 8  # more write trials while none was acknowledged
#: What a repair trial damages first, and the sources it may repair with. A lost log is
#: not among them: a forget the log lost cannot be told from a vector the index lost.
REPAIR_CASES = (
    ("none", "graph"),  # `memtrellis repair --from-graph` of a healthy store
    ("graph-garbled", "auto"),
    ("index-lost", "auto"),
    ("index-lost", "graph"),
)


def _damage_for_repair(path: Path, damage: str, rng: random.Random) -> None:
    if damage == "graph-garbled":
        graphs = [shard_dir(path, e) / "graph.json" for e in ENTITIES]
        graphs = [g for g in graphs if g.exists()]
        if graphs:
            target = rng.choice(graphs)
            raw = target.read_bytes()
            target.write_bytes(raw[: len(raw) // 2] + b"\x00garbled")
    elif damage == "index-lost":
        (path / "chroma" / "chroma.sqlite3").unlink(missing_ok=True)


def _reopen_or_repair(path: Path, tally: Tally) -> None:
    """Open the store and read every entity; if that names a repair, run it to the end."""
    from memtrellis import StoreCorruptError, repair_store

    try:
        with Memory(path, entity_id="alice", embedder=HashingEmbedder()) as memory:
            for entity in ENTITIES:
                memory.list(entity_id=entity)
    except StoreCorruptError as exc:
        assert exc.command is not None and exc.command.startswith("memtrellis repair "), exc
        tally.refused_after_repair_kill += 1
        graph = "--from-graph" in exc.command
        repair_store(path, embedder=HashingEmbedder(), source="graph" if graph else "auto")


def run_repair_harness(
    server: ForkServer,
    root: Path,
    seed: int,
    *,
    stores: int = 1,
    repairs: int = REPAIR_TRIALS,
    failures: list[str] | None = None,
) -> Tally:
    """Per store: a few write trials build it; then each repair trial damages it (or
    not), starts `repair_store` in a worker, kills it at a random point, reopens the
    store (running the repair its error names, if it refuses) and checks every
    guarantee of the write trials: nothing acknowledged lost, graph and index agreeing."""
    rng = random.Random(seed)
    tally = Tally()
    for number in range(stores):
        path = root / f"repaired-{number}"
        expected = Expected()
        step = "building"
        try:
            # Until the store holds an acknowledged write (bounded): on a loaded machine
            # every early kill can fall before the first acknowledgement, and repairs of a
            # store with nothing acknowledged would guard nothing.
            write = 0
            while write < WRITES_BEFORE_REPAIRS or (
                expected.acks == 0 and write < WRITES_BEFORE_REPAIRS + BUILD_RETRIES
            ):
                trial = write_trial(number * 100 + write, path, root, rng)
                trial["kill_while_opening"] = False
                run_trial(server, trial, rng, longest=1.2)
                expected.read(Path(trial["ack"]))
                check_store(path, expected, tally)
                write += 1
            tally.acks += expected.acks
            for attempt in range(repairs):
                damage, source = rng.choice(REPAIR_CASES)
                step = f"repair {attempt} ({damage}, {source})"
                _damage_for_repair(path, damage, rng)
                trial = {"kind": "repair", "store": str(path), "source": source}
                said = run_trial(server, trial, rng, longest=1.5)
                tally.trials += 1
                tally.repairs_killed += "repaired" not in said
                _reopen_or_repair(path, tally)
                check_store(path, expected, tally)
        except Exception as exc:
            message = f"repair-harness seed {seed}, store {number}, {step}: {exc}"
            if failures is None:
                raise AssertionError(message) from exc
            failures.append(message)
    return tally


def test_sigkill_during_repair_loses_nothing_acknowledged(
    tmp_path: Path, fork_server: ForkServer
) -> None:
    seed = int(os.environ.get("MEMTRELLIS_CRASH_SEED") or random.randrange(2**32))
    print(f"repair-harness seed {seed} (replay: MEMTRELLIS_CRASH_SEED={seed})")
    tally = run_repair_harness(fork_server, tmp_path, seed)
    print(f"repair-harness seed {seed}: {tally}")
    assert tally.acks > 0 and tally.trials == REPAIR_TRIALS


KILLED_MID_SNAPSHOT = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.store import graph_file
    from memtrellis.testing import HashingEmbedder, store_of

    original = graph_file.json_chunks
    def die_after_first_chunk(graph, generation):
        chunks = original(graph, generation)
        yield next(chunks)
        os.kill(os.getpid(), 9)  # SIGKILL half-way through writing the snapshot
    graph_file.json_chunks = die_after_first_chunk
    m = Memory(sys.argv[1], entity_id="alice", embedder=HashingEmbedder())
    store_of(m)._settings.compact_every = 1
    m.add("Clara lives in Lisbon", memory_type="episode")
"""


def test_a_snapshot_cut_off_by_a_kill_is_cleaned_up_and_loses_nothing(store_path: Path) -> None:
    proc = run_code(KILLED_MID_SNAPSHOT, str(store_path))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    shard = shard_dir(store_path, "alice")
    assert list(shard.glob(".graph.json.*.tmp"))  # the half-written snapshot
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        assert [i.text for i in memory.list()] == ["Clara lives in Lisbon"]
        assert _temp_files(store_path) == []
