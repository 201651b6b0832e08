"""Crash safety: what a writer killed with SIGKILL leaves behind is repaired or cleaned up."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

KILLED_MID_SNAPSHOT = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.store.graph import MemoryGraph
    from memtrellis.testing import HashingEmbedder

    original = MemoryGraph._json_chunks
    def die_after_first_chunk(self, generation):
        chunks = original(self, generation)
        yield next(chunks)
        os.kill(os.getpid(), 9)  # SIGKILL half-way through writing the snapshot
    MemoryGraph._json_chunks = die_after_first_chunk
    m = Memory(sys.argv[1], entity_id="alice", embedder=HashingEmbedder())
    m._store._compact_every = 1
    m._store._snapshot_size = 0
    m.add("Clara lives in Lisbon", memory_type="episode")
"""


def test_a_snapshot_cut_off_by_a_kill_is_cleaned_up_and_loses_nothing(store_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_MID_SNAPSHOT), str(store_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert list(store_path.glob(".graph.json.*.tmp"))  # the half-written snapshot
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as memory:
        assert [i.text for i in memory.list()] == ["Clara lives in Lisbon"]
        assert not list(store_path.glob(".graph.json.*.tmp"))
