"""Concurrency: threads, processes and async tasks on one store lose and duplicate nothing.

The operation mixes are seeded; ``MEMTRELLIS_CONCURRENCY_SEED=<n>`` replays a failing run,
whose seed every failure message names.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import zygote
from memtrellis import Memory
from memtrellis.errors import MemoryNotFoundError
from memtrellis.testing import HashingEmbedder, capture_service_of, store_of

ENTITIES = ("alice", "bob")


def _seed() -> int:
    seed = int(os.environ.get("MEMTRELLIS_CONCURRENCY_SEED") or random.randrange(2**32))
    print(f"concurrency seed {seed} (replay: MEMTRELLIS_CONCURRENCY_SEED={seed})")
    return seed


def _word(number: int) -> str:
    """A number spelt in letters (13 -> "bd"): numbered texts would read as changed values."""
    return "".join(chr(97 + int(digit)) for digit in str(number))


def _check_agreement(memory: Memory, expected: dict[str, set[str]], seed: int) -> None:
    """Graph, vector index, list() and health() all hold exactly the expected ids."""
    store = store_of(memory)
    for entity in ENTITIES:
        store.refresh(entity)
    assert store.pending_count == 0, f"seed {seed}: changes missing from the vector index"
    for entity in ENTITIES:
        in_graph = set(store.graph_of(entity).memory_ids(entity))
        copies, unreadable = store.vectors.item_copies(entity)
        assert unreadable == 0, f"seed {seed}, {entity}: unreadable index copies"
        in_index = set(copies)
        listed = {item.id for item in memory.list(entity_id=entity, limit=10_000)}
        want = expected.get(entity, set())
        assert in_graph == want, (
            f"seed {seed}, {entity}: lost {sorted(want - in_graph)}, "
            f"not forgotten {sorted(in_graph - want)}"
        )
        assert in_index == want, f"seed {seed}, {entity}: the vector index disagrees"
        assert listed == want, f"seed {seed}, {entity}: list() disagrees"
    assert memory.health().total_memories == sum(len(ids) for ids in expected.values())


@dataclass
class Worker:
    """One thread's share of the mixed load and what it expects afterwards."""

    number: int
    rng: random.Random
    kept: dict[str, set[str]] = field(default_factory=lambda: {e: set() for e in ENTITIES})
    forgotten: list[tuple[str, str, str]] = field(default_factory=list)  # entity, id, text

    def run(self, memory: Memory, operations: int) -> None:
        texts: dict[str, str] = {}
        for step in range(operations):
            entity = self.rng.choice(ENTITIES)
            roll = self.rng.random()
            own = sorted(self.kept[entity])
            # Mostly recalls: every add and forget is an fsync'd log write (~30 ms here).
            if roll < 0.15 or not own:
                text = f"worker {_word(self.number)} step {_word(step)}"
                [item] = memory.add(text, entity_id=entity, memory_type="episode", mode="fast")
                assert item.text == text
                self.kept[entity].add(item.id)
                texts[item.id] = text
            elif roll < 0.95:
                memory.recall(f"worker {_word(self.number)}", entity_id=entity, k=5)
            else:
                memory_id = self.rng.choice(own)
                assert memory.forget(memory_id, entity_id=entity) == 1
                self.kept[entity].discard(memory_id)
                self.forgotten.append((entity, memory_id, texts[memory_id]))
                # Forgotten by this thread: no recall may return it any more.
                hits = memory.recall(texts[memory_id], entity_id=entity, k=10).items
                assert memory_id not in {hit.memory.id for hit in hits}


def test_eight_threads_mixing_add_recall_forget_on_one_memory(store_path: Path) -> None:
    seed = _seed()
    rng = random.Random(seed)
    workers = [Worker(number, random.Random(rng.randrange(2**32))) for number in range(8)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def run(worker: Worker) -> None:
        try:
            start.wait()
            worker.run(memory, 200)
        except BaseException as exc:  # every thread's failure is reported below
            errors.append(exc)

    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        threads = [threading.Thread(target=run, args=(w,)) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, f"seed {seed}: {errors!r}"
        expected = {e: set().union(*(w.kept[e] for w in workers)) for e in ENTITIES}
        assert sum(len(w.forgotten) for w in workers) > 0
        _check_agreement(memory, expected, seed)
        for entity, memory_id, _ in (f for w in workers for f in w.forgotten):
            try:
                memory.get(memory_id, entity_id=entity)
            except MemoryNotFoundError:
                continue
            raise AssertionError(f"seed {seed}: forgotten {memory_id} is still there")
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        _check_agreement(memory, expected, seed)  # and the same after a reopen


MIXED_WRITER = """
    import json, random, sys, threading
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder, store_of

    path, tag, seed, operations = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    word = lambda n: "".join(chr(97 + int(d)) for d in str(n))
    kept = {"alice": [], "bob": []}
    forgotten = []
    with Memory(path, entity_id="alice", embedder=HashingEmbedder()) as m:
        store_of(m)._compact_every = 10  # snapshots while the other process writes
        stop = threading.Event()
        errors = []
        def recaller():
            while not stop.is_set():
                try:
                    m.recall(f"{tag} note", entity_id=random.choice(list(kept)), k=5)
                except BaseException as exc:
                    errors.append(repr(exc))
                    raise
        reader = threading.Thread(target=recaller)
        reader.start()
        try:
            for i in range(operations):
                entity = rng.choice(list(kept))
                if rng.random() < 0.75 or not kept[entity]:
                    text = f"{tag} note {word(i)}"
                    [item] = m.add(text, entity_id=entity, memory_type="episode", mode="fast")
                    kept[entity].append(item.id)
                else:
                    memory_id = kept[entity].pop(rng.randrange(len(kept[entity])))
                    assert m.forget(memory_id, entity_id=entity) == 1
                    forgotten.append(memory_id)
        finally:
            stop.set()
            reader.join()
        assert not errors, errors
    print(json.dumps({"kept": kept, "forgotten": forgotten}))
"""


def test_two_processes_mixing_writes_and_forgets_keep_exact_counts(store_path: Path) -> None:
    seed = _seed()
    Memory(store_path, entity_id="alice", embedder=HashingEmbedder()).close()
    procs = [
        zygote.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(MIXED_WRITER),
                str(store_path),
                tag,
                str(seed + number),
                "40",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number, tag in enumerate(("alpha", "beta"))
    ]
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, f"seed {seed}: {err}"
        reports.append(json.loads(out.splitlines()[-1]))
    expected = {e: {i for r in reports for i in r["kept"][e]} for e in ENTITIES}
    assert sum(len(r["forgotten"]) for r in reports) > 0
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        _check_agreement(memory, expected, seed)
        stored = {item.id for e in ENTITIES for item in memory.list(entity_id=e, limit=10_000)}
        assert not stored & {i for r in reports for i in r["forgotten"]}


async def test_fifty_concurrent_async_captures_are_stored_exactly_once(store_path: Path) -> None:
    turns = [
        [{"role": "user", "content": f"async turn {_word(n)}"}] for n in range(50)
    ]  # one message each: one memory each
    async with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        # The captures race each other and a stream of adds and recalls on the same memory.
        results = await asyncio.gather(
            *(memory.acapture(turn, mode="fast") for turn in turns),
            *(memory.aadd(f"direct note {_word(n)}", memory_type="episode") for n in range(10)),
            *(memory.arecall("async turn") for _ in range(10)),
        )
        entry_ids = results[:50]
        assert len(set(entry_ids)) == 50
        assert await memory.aflush(60)
        captured = [i.text for i in await memory.alist(limit=1000) if i.text.startswith("async")]
        assert sorted(captured) == sorted(turn[0]["content"] for turn in turns)
        health = await memory.ahealth()
        assert health.capture_spooled == 0 and health.capture_failures == 0
    # Nothing is left in the spool to be extracted a second time by the next open.
    async with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        assert await memory.aflush(60)
        assert capture_service_of(memory).adopted == []
        texts = [i.text for i in await memory.alist(limit=1000)]
        assert len(texts) == len(set(texts)) == 60


def test_recall_threads_survive_index_reloads(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtrellis.store.vectors import VectorIndex

    # After another process writes, the next call here reopens the Chroma client (an
    # embedded client does not see another process's writes). The reloading thread below
    # does what that catch-up does. Widen the gap between taking a collection handle and
    # using it, where a recall in another thread used to be caught holding a handle of
    # the client just closed (AttributeError from inside Chroma).
    handle = VectorIndex._collection

    def slow_handle(self: VectorIndex, entity_id: str, *, create: bool) -> Any:
        found = handle(self, entity_id, create=create)
        time.sleep(0.002)
        return found

    monkeypatch.setattr(VectorIndex, "_collection", slow_handle)
    errors: list[BaseException] = []
    done = threading.Event()
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        memory.add(["a first note", "a second note"])

        def reload() -> None:
            try:
                for _ in range(40):
                    store_of(memory).vectors.stale = True  # what reading a foreign write does
                    store_of(memory).refresh("alice")
            finally:
                done.set()

        def recall() -> None:
            while not done.is_set():
                try:
                    assert len(memory.recall("note", k=5).items) == 2
                except BaseException as exc:  # reported below
                    errors.append(exc)

        threads = [threading.Thread(target=recall) for _ in range(2)]
        threads.append(threading.Thread(target=reload))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors[:3]


BUSY_WRITER = """
    import sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    with Memory(sys.argv[1], entity_id="alice", embedder=HashingEmbedder()) as m:
        print("writing", flush=True)
        for i in range(40):  # back to back: the lock is free only for instants
            m.add("busy note " + "".join(chr(97 + int(d)) for d in str(i)), memory_type="episode")
"""


def test_recall_does_not_wait_out_a_busy_writer_in_another_process(store_path: Path) -> None:
    # A short lock timeout: a recall that waited for the writer to pause would raise
    # StoreLockedError here long before the writer is done.
    with Memory(
        store_path, entity_id="alice", embedder=HashingEmbedder(), lock_timeout=0.5
    ) as memory:
        memory.add("a first note")
        writer = zygote.Popen(
            [sys.executable, "-c", textwrap.dedent(BUSY_WRITER), str(store_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        recalls = 0
        while writer.poll() is None:
            memory.recall("busy note", k=5)
            recalls += 1
        assert writer.wait() == 0, writer.stderr.read() if writer.stderr else ""
        assert recalls > 0
        # Once the writer is done, the index reload catches up with everything it wrote.
        hits = memory.recall("busy note ba", k=3).items
        assert hits[0].memory.text == "busy note ba"
        assert hits[0].explanation.dense_score is not None
        assert len(memory.list(limit=1000)) == 41


def test_index_reopen_waits_for_calls_in_flight_and_goes_before_new_ones() -> None:
    from memtrellis.store._rwlock import SharedExclusiveLock

    lock = SharedExclusiveLock()
    order: list[str] = []

    def reopen() -> None:
        with lock.exclusive():
            order.append("reopen")

    def late_call() -> None:
        with lock.shared():
            order.append("late call")

    with lock.shared():  # a call in flight
        reopener = threading.Thread(target=reopen)
        reopener.start()
        while not lock._waiting:  # until the reopen is queued behind the call in flight
            time.sleep(0.001)
        late = threading.Thread(target=late_call)
        late.start()
        order.append("call done")
    reopener.join()
    late.join()
    assert order == ["call done", "reopen", "late call"]
