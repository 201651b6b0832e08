"""Crash repair, torn logs, compaction and two processes writing to one store."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import zygote
from memtrellis import Memory, StoreCorruptError
from memtrellis.store import collection_name
from memtrellis.store.shardfiles import shard_dir
from memtrellis.testing import HashingEmbedder, store_of


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return zygote.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=240,
    )


def _index_ids(path: Path, entity: str) -> set[str]:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(path / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    try:
        got = client.get_collection(collection_name(entity)).get(include=[])
        return set(got["ids"])
    finally:
        client.close()


CRASH_BETWEEN_GRAPH_AND_INDEX = """
    import os, sys
    from memtrellis import Memory
    from memtrellis.store.vectors import VectorIndex
    from memtrellis.testing import HashingEmbedder

    m = Memory(sys.argv[1], entity_id="alice", embedder=HashingEmbedder())
    m.add("survives the crash")
    def die(self, items, embeddings):
        os._exit(9)  # the process dies after the log write, before the index write
    VectorIndex.upsert = die
    m.add("written to the log, not yet to the index")
"""


def test_crash_between_graph_and_index_is_rolled_forward(store_path: Path) -> None:
    proc = _run(CRASH_BETWEEN_GRAPH_AND_INDEX, str(store_path))
    assert proc.returncode == 9, proc.stderr
    assert len(_index_ids(store_path, "alice")) == 1  # the index is behind the log
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        # The shard is read, and repaired, on the entity's first use.
        texts = {i.text for i in m.list()}
        assert len(m.recovery_report.rolled_forward) == 1
        assert m.health().recovered_on_open == 1
        assert texts == {"survives the crash", "written to the log, not yet to the index"}
        ids = {i.id for i in m.list()}
        assert _index_ids(store_path, "alice") == ids
        assert m.recall("not yet index").items[0].memory.text.startswith("written to the log")
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert len(m.list()) == 2
        assert m.recovery_report.rolled_forward == []  # repaired once, for good


def test_crash_during_forget_is_rolled_forward(store_path: Path) -> None:
    code = """
        import os, sys
        from memtrellis import Memory
        from memtrellis.store.vectors import VectorIndex
        from memtrellis.testing import HashingEmbedder
        m = Memory(sys.argv[1], entity_id="alice", embedder=HashingEmbedder())
        [a, b] = m.add(["keep me", "forget me"])
        VectorIndex.delete = lambda self, entity_id, ids: os._exit(9)
        m.forget(b.id)
    """
    assert _run(code, str(store_path)).returncode == 9
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert [i.text for i in m.list()] == ["keep me"]
        assert _index_ids(store_path, "alice") == {m.list()[0].id}


def test_torn_log_tail_is_dropped(store_path: Path) -> None:
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        m.add("complete")
    generation = _generation(store_path)
    log = shard_dir(store_path, "alice") / f"wal-{generation:06d}.jsonl"
    with log.open("ab") as handle:
        handle.write(b'{"op":"put","item":{"te')  # a crash mid-append
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert [i.text for i in m.list()] == ["complete"]
        assert m.recovery_report.torn_records == 1
        m.add("after repair")
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert [i.text for i in m.list()] == ["complete", "after repair"]


def test_garbled_graph_names_path(store_path: Path) -> None:
    with Memory(store_path, embedder=HashingEmbedder()) as m:
        m.add("x")
        entity = m.default_scope.entity_id
    graph = shard_dir(store_path, entity) / "graph.json"
    graph.write_text('{"nodes": [')
    # A shard is read on first use: the open succeeds, the first read of the entity fails,
    # naming the shard's file and the repair of the whole store.
    with (
        Memory(store_path, embedder=HashingEmbedder()) as m,
        pytest.raises(StoreCorruptError, match=r"graph\.json") as caught,
    ):
        m.list()
    assert caught.value.path == str(graph)
    assert caught.value.command == f"memtrellis repair {store_path}"


def test_a_garbled_log_record_names_the_store_for_repair(store_path: Path) -> None:
    proc = _run(
        """
        import os, sys
        from memtrellis import Memory
        from memtrellis.testing import HashingEmbedder
        m = Memory(sys.argv[1], entity_id="alice", embedder=HashingEmbedder())
        m.add("first")
        m.add("second")
        os._exit(0)  # no close: the changes stay in the log
        """,
        str(store_path),
    )
    assert proc.returncode == 0, proc.stderr
    [log] = shard_dir(store_path, "alice").glob("wal-*.jsonl")
    lines = log.read_bytes().split(b"\n")
    lines[0] = b"{garbled"
    log.write_bytes(b"\n".join(lines))
    with (
        Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m,
        pytest.raises(StoreCorruptError) as caught,
    ):
        m.list()
    assert caught.value.path == str(log)
    assert caught.value.command == f"memtrellis repair {store_path}"


def test_garbled_manifest_names_path(store_path: Path) -> None:
    Memory(store_path, embedder=HashingEmbedder()).close()
    (store_path / "manifest.json").write_text("not json")
    with pytest.raises(StoreCorruptError, match=r"manifest\.json"):
        Memory(store_path, embedder=HashingEmbedder())


def _word(number: int) -> str:
    """A number spelt in letters (13 -> "bd"): numbered texts would read as changed values."""
    return "".join(chr(97 + int(digit)) for digit in str(number))


def test_compaction_keeps_everything(store_path: Path) -> None:
    from memtrellis.store import Store

    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        store_of(m)._settings.compact_every = 10
        for i in range(35):
            m.add(f"fact {_word(i)}")
        assert _generation(store_path) >= 2
        assert len(list(shard_dir(store_path, "alice").glob("wal-*.jsonl"))) == 1
    assert isinstance(store_of(m), Store)
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert len(m.list(limit=1000)) == 35
        assert m.recall(f"fact {_word(17)}").items[0].memory.text == f"fact {_word(17)}"


WRITER = """
    import sys
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Memory(path, entity_id="shared", embedder=HashingEmbedder()) as m:
        for i in range(n):
            # Episodes: stored as said, never merged, so every write can be counted.
            m.add(f"{tag} note " + "".join(chr(97 + int(d)) for d in str(i)), memory_type="episode")
            if i % 10 == 0:
                m.recall(f"{tag} note")
    print("done")
"""


def test_two_processes_on_one_store_lose_nothing(store_path: Path) -> None:
    Memory(store_path, entity_id="shared", embedder=HashingEmbedder()).close()
    procs = [
        zygote.Popen(
            [sys.executable, "-c", textwrap.dedent(WRITER), str(store_path), tag, "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("alpha", "beta")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    with Memory(store_path, entity_id="shared", embedder=HashingEmbedder()) as m:
        texts = {i.text for i in m.list(limit=1000)}
        expected = {f"{tag} note {_word(i)}" for tag in ("alpha", "beta") for i in range(60)}
        assert texts == expected
        assert _index_ids(store_path, "shared") == {i.id for i in m.list(limit=1000)}


def test_a_long_lived_process_sees_another_process_writes(store_path: Path) -> None:
    with Memory(store_path, entity_id="shared", embedder=HashingEmbedder()) as m:
        m.add("written here first")
        proc = _run(WRITER, str(store_path), "other", "5")
        assert proc.returncode == 0, proc.stderr
        assert len(m.list()) == 6
        hits = [r.memory.text for r in m.recall("other note d").items]
        assert hits[0] == "other note d"
        assert m.recall("other note d").items[0].explanation.dense_score is not None


def _generation(store_path: Path, entity: str = "alice") -> int:
    """The snapshot generation ``shard.json`` names for the entity's shard."""
    pointer = shard_dir(store_path, entity) / "shard.json"
    return int(json.loads(pointer.read_text())["generation"])


def test_a_read_only_session_does_not_rewrite_the_snapshot(store_path: Path) -> None:
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        [item] = m.add("Clara lives in Lisbon")
    after_write = _generation(store_path)
    for _ in range(2):  # the second open replays the recall counts the first one logged
        with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
            m.recall("Where does Clara live?")
    assert _generation(store_path) == after_write  # only recall counts since: no snapshot
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert m.get(item.id).recall_count == 2  # ...and the counts survived in the log
        m.add("Clara has a cat")
    assert _generation(store_path) == after_write + 1  # a change is snapshotted on close


def test_many_recall_counts_are_compacted(store_path: Path) -> None:
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        m.add("Clara lives in Lisbon")
    before = _generation(store_path)
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        store_of(m)._settings.compact_every = 3
        for _ in range(4):
            m.recall("Clara")
    assert _generation(store_path) == before + 1


def test_snapshot_is_streamed_as_the_same_document(store_path: Path) -> None:
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        m.add(CHAT_LIKE, entities=["Clara"])
        m.add("Bob fixes bikes", entity_id="bob", entities=["Bob"])
        graph = store_of(m).graph_of("alice")
        graph.save(store_path / "copy.json", 7)
        expected = graph.to_node_link(7)
    assert json.loads((store_path / "copy.json").read_text()) == expected
    assert len(expected["nodes"]) == 4 and expected["edges"]  # 3 memories, 1 entity


CHAT_LIKE = [
    {"role": "user", "content": 'Clara moved to "Porto"', "id": "x1"},
    {"role": "assistant", "content": "Nice \\ city ☀", "id": "x2"},
    {"role": "user", "content": "She starts at the hospital", "id": "x3"},
]


def test_a_failed_snapshot_leaves_the_old_one(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memtrellis.store import graph_file
    from memtrellis.store.graph import MemoryGraph

    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        m.add("Clara lives in Lisbon")
    shard = shard_dir(store_path, "alice")
    before = (shard / "graph.json").read_bytes()

    def broken(graph: MemoryGraph) -> object:
        yield {"id": "half"}
        raise RuntimeError("disk gone")

    monkeypatch.setattr(graph_file, "_edge_records", broken)
    m = Memory(store_path, entity_id="alice", embedder=HashingEmbedder())
    m.add("Clara has a cat")
    with pytest.raises(RuntimeError):
        store_of(m).graph_of("alice").save(shard / "graph.json", 99)
    assert (shard / "graph.json").read_bytes() == before
    assert not list(store_path.rglob(".graph.json.*.tmp"))
    monkeypatch.undo()
    m.close()
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        assert len(m.list()) == 2
