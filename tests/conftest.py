"""Shared fixtures: temp stores on a real Chroma PersistentClient, a real Chroma server and a
real PostgreSQL server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import zygote
from memtrellis import Memory
from memtrellis._engine import channel
from memtrellis.store import vectorproc
from memtrellis.store._pgscratch import ScratchServer, shared_server
from memtrellis.testing import HashingEmbedder

_FORKED = zygote.forked_module()


@pytest.fixture(autouse=True)
def _own_children_from_the_zygote(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memtrellis's engine and vector processes fork from the tests' zygote (tests/zygote.py)
    instead of starting a fresh interpreter each (~1.2 CPU-s of imports, ~35 of them):
    the same code runs in a process of its own, from the same argv and socket. Tests
    marked ``fresh_children`` (how such a process starts and ends is what they check)
    get fresh interpreters, as do the apps that tests start as processes of their own."""
    if request.node.get_closest_marker("fresh_children") is None:
        monkeypatch.setattr(channel, "subprocess", _FORKED)
        monkeypatch.setattr(vectorproc, "subprocess", _FORKED)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def memory(store_path: Path) -> Iterator[Memory]:
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as mem:
        yield mem


@pytest.fixture
def seeded(memory: Memory) -> Memory:
    """Alice's memory holding one fact that a question about snacks recalls."""
    memory.add("Alice is allergic to peanuts")
    return memory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_executable() -> str:
    found = shutil.which("chroma", path=str(Path(sys.executable).parent))
    if found is None:
        found = shutil.which("chroma")
    if found is None:  # pragma: no cover - chromadb always installs its CLI
        pytest.fail("the `chroma` command from chromadb is not installed")
    return found


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `chroma run` server on loopback; yields its URL."""
    data = tmp_path_factory.mktemp("chroma-server")
    port = _free_port()
    log = (data / "server.log").open("wb")
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    proc = subprocess.Popen(
        [
            _chroma_executable(),
            "run",
            "--path",
            str(data / "db"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"chroma server exited: {(data / 'server.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("chroma server did not start within 60 s")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[ScratchServer]:
    """A real PostgreSQL server (the pgserver wheel) in a temp dir, removed at the end."""
    try:
        server = shared_server()
    except Exception as exc:
        pytest.fail(f"the PostgreSQL test server (pgserver) did not start: {exc!r}")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres_server: ScratchServer) -> Iterator[str]:
    """A fresh empty database on the test server; dropped after the test."""
    url = postgres_server.new_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)
