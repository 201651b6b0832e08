"""Several machines: two OS processes with their own directories share one memory through a
real PostgreSQL server (shards, logs, catalog, locks) and a real `chroma run` server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import zygote
from memtrellis import InvalidInputError, Memory
from memtrellis.testing import HashingEmbedder, store_of

pytestmark = [pytest.mark.server, pytest.mark.postgres]

MIA = "Ana's daughter Mia starts school in Porto in September."


ENV = dict(os.environ, ANONYMIZED_TELEMETRY="False")


def _command(code: str, *args: str) -> list[str]:
    """A new Python process (another "machine": its own directory) running ``code``."""
    prelude = textwrap.dedent(
        """
        import json, os, signal, sys
        from memtrellis import Memory
        from memtrellis.testing import HashingEmbedder
        path, chroma_url, postgres_url, entity = sys.argv[1:5]
        def open_memory():
            return Memory(path, entity_id=entity, embedder=HashingEmbedder(),
                          chroma_url=chroma_url, postgres_url=postgres_url)
        """
    )
    return [sys.executable, "-c", prelude + textwrap.dedent(code), *args]


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return zygote.run(
        _command(code, *args), capture_output=True, text=True, timeout=120, env=ENV, check=False
    )


@pytest.fixture
def ana() -> str:
    # The Chroma server is shared by the whole test session: an entity of its own per test.
    return f"ana-{uuid.uuid4().hex[:8]}"


def _open(path: Path, chroma_server: str, postgres_url: str, entity: str) -> Memory:
    return Memory(
        path,
        entity_id=entity,
        embedder=HashingEmbedder(),
        chroma_url=chroma_server,
        postgres_url=postgres_url,
    )


def test_a_write_on_one_machine_is_recalled_on_another(
    tmp_path: Path, chroma_server: str, postgres_url: str, ana: str
) -> None:
    with _open(tmp_path / "b", chroma_server, postgres_url, ana) as b:
        assert b.recall("Where does Mia go to school?").items == []  # B is open first
        done = _child(
            """
            with open_memory() as a:
                [item] = a.add(sys.argv[5])
                print(json.dumps({"id": item.id}))
            """,
            str(tmp_path / "a"),
            chroma_server,
            postgres_url,
            ana,
            MIA,
        )
        assert done.returncode == 0, done.stderr
        written = json.loads(done.stdout.strip().splitlines()[-1])["id"]
        # B's next recall sees A's commit (a per-shard version check, no reopen).
        hits = b.recall("Where does Mia go to school?").items
        assert [h.memory.id for h in hits] == [written]
        assert [i.text for i in b.list()] == [MIA]
        health = b.health()
        assert health.total_memories == 1 and health.pending_index_writes == 0
    # Nothing of the shared memory is on either machine's disk.
    for machine in ("a", "b"):
        assert not list((tmp_path / machine).rglob("graph.json"))
        assert not list((tmp_path / machine).rglob("wal-*.jsonl"))


def test_writers_of_one_entity_on_two_machines_lose_nothing(
    tmp_path: Path, chroma_server: str, postgres_url: str, ana: str
) -> None:
    code = """
        with open_memory() as m:
            for n in range(int(sys.argv[6])):
                m.add(f"{sys.argv[5]} note {n}: the locker code is {n * 7919}", mode="fast")
        """
    procs = [
        zygote.Popen(
            _command(code, str(tmp_path / m), chroma_server, postgres_url, ana, m, "15"),
            env=ENV,
            stderr=subprocess.PIPE,
            text=True,
        )
        for m in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    with _open(tmp_path / "c", chroma_server, postgres_url, ana) as c:
        texts = [i.text for i in c.list(limit=100)]
        assert len(texts) == 30 == len(set(texts))
        assert {t.split(" ")[0] for t in texts} == {"a", "b"}
        shard = store_of(c).shard(ana)
        copies, unreadable = store_of(c).vectors.item_copies(ana)
        assert unreadable == 0
        assert set(copies) == set(shard.graph.memory_ids(ana))  # graph and vectors agree


def test_a_writer_killed_mid_commit_is_rolled_forward_by_the_next(
    tmp_path: Path, chroma_server: str, postgres_url: str, ana: str
) -> None:
    killed = _child(
        """
        from memtrellis.store.vectors import VectorIndex
        with open_memory() as m:
            m.add("first, complete")
            def die(*args, **kwargs):  # after the log append, before the vectors and ok
                os.kill(os.getpid(), signal.SIGKILL)
            VectorIndex.upsert = die
            m.add("second, cut off mid-commit")
        """,
        str(tmp_path / "a"),
        chroma_server,
        postgres_url,
        ana,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with _open(tmp_path / "b", chroma_server, postgres_url, ana) as b:
        texts = sorted(i.text for i in b.list())
        assert texts == ["first, complete", "second, cut off mid-commit"]
        assert len(b.recovery_report.rolled_forward) == 1
        hits = b.recall("second cut off").items
        assert hits[0].memory.text == "second, cut off mid-commit"
        assert hits[0].explanation.dense_score is not None  # its vector was written
        assert b.health().pending_index_writes == 0


def test_postgres_url_needs_a_chroma_server(tmp_path: Path, postgres_url: str) -> None:
    with pytest.raises(InvalidInputError, match="chroma_url"):
        Memory(tmp_path / "x", embedder=HashingEmbedder(), postgres_url=postgres_url)
    with pytest.raises(InvalidInputError, match="postgres_url must be a str"):
        Memory(tmp_path / "x", embedder=HashingEmbedder(), postgres_url=5)  # type: ignore[arg-type]


def test_one_embedder_for_every_machine(
    tmp_path: Path, chroma_server: str, postgres_url: str
) -> None:
    from memtrellis import EmbeddingMismatchError

    _open(tmp_path / "a", chroma_server, postgres_url, "x").close()
    with pytest.raises(EmbeddingMismatchError):
        Memory(
            tmp_path / "b",
            embedder=HashingEmbedder(dimension=32),
            chroma_url=chroma_server,
            postgres_url=postgres_url,
        )


def test_memtrellis_serve_works_unchanged_in_this_mode(
    tmp_path: Path, chroma_server: str, postgres_url: str, ana: str
) -> None:
    import shutil
    import socket
    import time

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    exe = shutil.which("memtrellis", path=str(Path(sys.executable).parent))
    assert exe is not None
    server = subprocess.Popen(
        [
            exe,
            "--path",
            str(tmp_path / "server"),
            "--embedder",
            "hashing",
            "--chroma-url",
            chroma_server,
            "--postgres-url",
            postgres_url,
            "serve",
            "--no-auth",
            "--port",
            str(port),
        ],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "memtrellis serve did not start within 60 s"
            time.sleep(0.2)
        body = {"text": MIA, "entity_id": ana}
        response = httpx.post(f"{url}/v1/memories", json=body, timeout=30)
        assert response.status_code == 201, response.text
        # Another machine (its own directory, no server) recalls what the service stored.
        with Memory(
            tmp_path / "other",
            entity_id=ana,
            embedder=HashingEmbedder(dimension=64),
            chroma_url=chroma_server,
            postgres_url=postgres_url,
        ) as other:
            assert [h.memory.text for h in other.recall("Mia school").items] == [MIA]
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout:
            server.stdout.close()
