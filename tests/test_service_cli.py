"""`memtrellis keys` and `memtrellis serve`: keys printed once and stored hashed, the loopback
rule for --no-auth, and a served process that drains its capture queue when stopped."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memtrellis import Memory
from memtrellis.cli import app
from memtrellis.cli._service import is_loopback
from memtrellis.testing import HashingEmbedder
from service_helpers import auth, free_port

SCRIPT = str(Path(sys.executable).with_name("memtrellis"))


def cli(store: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--path", str(store), "--embedder", "hashing", *args])
    return result.exit_code, result.stdout, result.stderr


def test_keys_are_printed_once_and_stored_hashed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out, err = cli(store, "keys", "add", "--entity-id", "alice", "--process-id", "bot")
    assert code == 0, err
    key = out.strip()
    assert key.startswith("mtk_") and "shown only now" in err
    stored = (store / "service-keys.json").read_text()
    assert key not in stored and key.split("_", 2)[2] not in stored  # the secret may hold "_"
    [record] = json.loads(stored)["keys"]
    assert record["entity_ids"] == ["alice"] and record["process_id"] == "bot"
    assert oct((store / "service-keys.json").stat().st_mode & 0o777) == "0o600"

    code, out, _ = cli(store, "--json", "keys", "list")
    [listed] = json.loads(out)
    assert listed["key_id"] == record["key_id"] and "sha256" not in listed and key not in out

    assert cli(store, "keys", "revoke", record["key_id"])[0] == 0
    assert json.loads(cli(store, "--json", "keys", "list")[1]) == []
    code, _, err = cli(store, "keys", "revoke", record["key_id"])
    assert code == 2 and "no key with id" in err


def test_a_key_needs_an_entity_or_monitor(tmp_path: Path) -> None:
    code, _, err = cli(tmp_path / "store", "keys", "add")
    assert code == 2 and "--entity-id" in err
    code, out, _ = cli(tmp_path / "store", "--json", "keys", "add", "--monitor")
    assert code == 0 and json.loads(out)["monitor"] is True


def test_no_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    code, _, err = cli(tmp_path / "store", "serve", "--no-auth", "--host", "0.0.0.0")
    assert code == 2 and "loopback" in err
    assert not (tmp_path / "store").exists()  # refused before the store was opened


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _wait_for_port(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            assert time.monotonic() < deadline, "memtrellis serve did not start"
            time.sleep(0.1)


@contextmanager
def serving(
    store: Path, *args: str, entity: str = "default"
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`memtrellis serve` in a subprocess on a free loopback port; killed if still running."""
    port = free_port()
    command = [SCRIPT, "--path", str(store), "--embedder", "hashing", "--entity", entity]
    proc = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--log-level", "warning", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        _wait_for_port(proc, port)
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def test_serve_drains_the_capture_queue_on_shutdown(tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out, err = cli(store, "keys", "add", "--entity-id", "alice")
    assert code == 0, err
    key = out.strip()
    with serving(store) as (proc, url):
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/v1/memories").status_code == 401
            for n in range(40):
                body = {"text": f"Captured note number {n}", "background": True}
                assert http.post("/v1/memories", json=body, headers=auth(key)).status_code == 202
        proc.send_signal(signal.SIGINT)
        # uvicorn shuts down gracefully, then re-raises the signal: 130 is Ctrl-C's exit code
        assert proc.wait(120) in (0, 130), proc.stderr.read().decode() if proc.stderr else ""
    assert list((store / "spool").glob("*.jsonl")) == []  # every captured turn was stored
    with Memory(store, embedder=HashingEmbedder()) as memory:
        texts = {m.text for m in memory.list(entity_id="alice", limit=100)}
    assert texts == {f"Captured note number {n}" for n in range(40)}


def test_serve_without_auth_on_loopback(tmp_path: Path) -> None:
    with serving(tmp_path / "store", "--no-auth", entity="solo") as (proc, url):
        with httpx.Client(base_url=url, timeout=30) as http:
            stored = http.post("/v1/memories", json={"text": "No keys here"}).json()["memories"]
            assert stored[0]["scope"]["entity_id"] == "solo"
            assert http.get("/health").json()["total_memories"] == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) in (0, -signal.SIGTERM)


def test_serve_refuses_a_corrupt_keys_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "service-keys.json").write_text("{not json")
    code, _, err = cli(store, "serve")
    assert code == 2 and "cannot read the keys file" in err
