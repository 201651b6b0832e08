"""The process tests/test_crash_safety.py kills: a fork server and the workload it forks.

Run as ``python tests/crash_child.py``. It imports memtrellis and Chroma once (no client,
no thread yet), then reads one JSON trial per stdin line, forks a worker for it and
prints ``pid <n>``; when the worker dies it prints ``exit <n> <wait status>``. Forking
from a warm interpreter saves the ~1 s start-up of a fresh Python per trial, while each
worker is still a real process opening a real store that the test kills with SIGKILL.

A worker opens ``Memory`` on the trial's store, prints ``ready``, then loops over random
writes (``add`` in fast mode, ``store``, ``capture``, ``forget``) until it is killed.
After each call RETURNS it appends one JSON acknowledgement line to the ack file and
fsyncs it: an acknowledged call is one the caller was told had succeeded. A trial of
``"kind": "repair"`` runs ``repair_store`` on the store instead (``--from-graph`` or
automatic), printing ``ready`` before and ``repaired`` after, and waits to be killed.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from collections.abc import Iterator
from typing import Any

from memtrellis import Memory
from memtrellis.store import graph_file
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.shard import Shard
from memtrellis.testing import HashingEmbedder, store_of
from memtrellis.types import MemoryItem, MemoryType, Scope

ENTITIES = ("alice", "bob")


def word(number: int) -> str:
    """A number spelt in letters (13 -> "bd"): numbered texts would read as changed values."""
    return "".join(chr(97 + int(digit)) for digit in str(number))


def _slow_snapshots() -> None:
    """Make every snapshot write take a while, so that kills often land inside one."""
    original = graph_file.json_chunks

    def slow(graph: MemoryGraph, generation: int) -> Iterator[bytes]:
        for chunk in original(graph, generation):
            time.sleep(0.015)
            yield chunk

    graph_file.json_chunks = slow


def _ack(fd: int, record: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(record) + "\n").encode())
    os.fsync(fd)


def work(trial: dict[str, Any]) -> None:
    """Random writes on the trial's store until killed; each returned call acknowledged."""
    rng = random.Random(trial["seed"])
    if trial["slow_snapshots"]:
        _slow_snapshots()
    ack = os.open(trial["ack"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    # Small thresholds: a new snapshot of a shard every few writes, so kills land around
    # compactions. (A shard normally waits for as many changes as its last snapshot held;
    # not here.) The worker is a forked process: patching the class touches only it.
    load, compact = Shard._load, Shard._compact

    def load_small(self: Shard) -> None:
        load(self)
        self._snapshot_size = 0

    def compact_often(self: Shard) -> None:
        compact(self)
        self._snapshot_size = 0

    Shard._load = load_small  # type: ignore[method-assign]
    Shard._compact = compact_often  # type: ignore[method-assign]
    memory = Memory(trial["store"], entity_id="alice", embedder=HashingEmbedder())
    store_of(memory)._settings.compact_every = trial["compact_every"]
    print("ready", flush=True)
    tag = trial["tag"]
    acked: list[tuple[str, str]] = []  # (entity, id) of acknowledged adds and stores
    for number in range(1_000_000):
        entity = rng.choice(ENTITIES)
        text = f"{tag} {entity} note {word(number)}"
        roll = rng.random()
        if roll < 0.35:
            items = memory.add(text, entity_id=entity, memory_type="episode", mode="fast")
            _ack(ack, {"op": "add", "entity": entity, "text": text, "ids": [i.id for i in items]})
            acked.extend((entity, i.id) for i in items)
        elif roll < 0.55:
            item = MemoryItem(
                id=f"{tag}-{number}",
                text=text,
                memory_type=MemoryType.EPISODE,
                scope=Scope(entity_id=entity),
            )
            stored = memory.store(item)
            _ack(ack, {"op": "store", "entity": entity, "text": text, "ids": [stored.id]})
            acked.append((entity, stored.id))
        elif roll < 0.9:
            # A burst: capture returns at once, so a backlog of unstored turns builds up.
            for turn in range(rng.randint(1, 8)):
                said = f"{text} turn {word(turn)}"
                message = {"role": "user", "content": said}
                entry = memory.capture([message], entity_id=entity, mode="fast")
                _ack(ack, {"op": "capture", "entity": entity, "text": said, "entry": entry})
        elif acked:
            entity, memory_id = acked.pop(rng.randrange(len(acked)))
            # Killed mid-forget, the memory may be there or not: say so before the call.
            _ack(ack, {"op": "forgetting", "entity": entity, "ids": [memory_id]})
            memory.forget(memory_id, entity_id=entity)
            _ack(ack, {"op": "forget", "entity": entity, "ids": [memory_id]})


def repair(trial: dict[str, Any]) -> None:
    """Repair the trial's store (``source`` auto or graph) until killed.

    Vector writes are slowed a little so that kills land among them; a repair that ends
    before the kill waits for it (the test only kills).
    """
    from memtrellis import repair_store
    from memtrellis.store.vectors import VectorIndex

    upsert, delete = VectorIndex.upsert, VectorIndex.drop_entity

    def slow_upsert(self: VectorIndex, items: Any, embeddings: Any) -> None:
        time.sleep(0.02)
        upsert(self, items, embeddings)

    def slow_drop(self: VectorIndex, entity_id: str) -> None:
        delete(self, entity_id)
        time.sleep(0.05)

    VectorIndex.upsert = slow_upsert  # type: ignore[method-assign]
    VectorIndex.drop_entity = slow_drop  # type: ignore[method-assign]
    print("ready", flush=True)
    repair_store(trial["store"], source=trial["source"], embedder=HashingEmbedder())
    print("repaired", flush=True)
    while True:
        time.sleep(1)


def serve() -> None:
    """Fork one worker per trial line on stdin; report its pid and how it ended."""
    for line in sys.stdin:
        trial = json.loads(line)
        sys.stdout.flush()
        go, told = os.pipe()  # the worker starts once its pid is printed: lines never mix
        pid = os.fork()
        if pid == 0:
            code = 0
            os.close(told)
            os.read(go, 1)
            os.close(go)
            try:
                repair(trial) if trial.get("kind") == "repair" else work(trial)
            except BaseException:  # reported to the test through stderr
                traceback.print_exc()
                sys.stderr.flush()
                code = 3
            os._exit(code)
        print(f"pid {pid}", flush=True)
        os.close(go)
        os.write(told, b"x")
        os.close(told)
        _, status = os.waitpid(pid, 0)
        print(f"exit {pid} {status}", flush=True)


if __name__ == "__main__":
    serve()
