"""The PostgreSQL mode of ``scale.py``: scratch servers, and the delay from a commit in one
process to its visibility in another.

``--postgres`` runs the benchmark against a PostgreSQL server of its own (the ``pgserver``
wheel, in a temporary directory) and a ``chroma run`` server on a free loopback port (its
data in a temporary directory), both stopped and removed at the end: :func:`scratch_servers`.

**Commit to visibility** (:func:`visibility_child`, :func:`watch_child`): two OS processes,
each with a directory of its own (two "machines" on one clock), open the same store through
the servers. Process A adds one message at a time to the served entity (``mode="fast"``) and
notes the wall-clock time when ``add()`` returned; it then hands the new memory's id to
process B, which calls ``get`` on it (the per-shard version check every read runs) every
``poll_ms`` until it is found, and notes the time it was. The delay is B's time minus A's;
A waits for B before the next write, so each write is seen alone.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _locomo import percentile
from _scale_build import SCRIPT, entity_name, open_memory
from _synth import UserStream

SERVED = 0
READY = "WATCH-READY"
SEEN = "WATCH-SEEN "


def free_port() -> int:
    """A TCP port nobody listens on at the moment, on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chroma_command() -> str:
    """The ``chroma`` CLI installed beside this Python (or on the PATH)."""
    found = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if found is None:
        sys.exit("the `chroma` command (from the chromadb package) is not installed")
    return found


@contextmanager
def chroma_server(data: Path, timeout: float = 90.0) -> Iterator[str]:
    """A ``chroma run`` server on a free loopback port, its data under ``data``; its URL."""
    port = free_port()
    log_path = data / "chroma.log"
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    command = [chroma_command(), "run", "--path", str(data / "db")]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    sys.exit(f"chroma run exited: {log_path.read_text()[-2000:]}")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit(f"chroma run did not listen within {timeout:.0f} s")
                    time.sleep(0.2)
            # As docs/operations.md asks of a server's operator: index its write log.
            from memtrellis.store.vectors import index_chroma_log

            index_chroma_log(data / "db")
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def scratch_servers() -> Iterator[tuple[str, str]]:
    """A scratch PostgreSQL database and Chroma server, removed at the end.

    Yields ``(postgres_url, chroma_url)``.
    """
    from memtrellis.store._pgscratch import ScratchServer

    data = Path(tempfile.mkdtemp(prefix="mt-scale-chroma-"))
    try:
        print("starting a scratch PostgreSQL (pgserver) and `chroma run`", flush=True)
        postgres = ScratchServer()
        try:
            url = postgres.new_database()
            with chroma_server(data) as chroma_url:
                yield url, chroma_url
        finally:
            postgres.close()
    finally:
        shutil.rmtree(data, ignore_errors=True)


def probes(spec: dict[str, Any]) -> list[Any]:
    """The served entity's messages written by the visibility row (after the measured ones)."""
    namespace = spec["namespace"]
    served = entity_name(SERVED, namespace)
    stream = UserStream(served.removeprefix(namespace), seed=spec["seed"])
    skip = spec["per_entity"] + spec.get("warmup", 0) + spec["adds"]
    return list(stream.take(skip + spec["writes"])[skip:])


def visibility_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Process A: one write at a time, each timed until process B sees it."""
    served = entity_name(SERVED, spec["namespace"])
    reader_spec = {**spec, "path": spec["reader_path"]}
    command = [sys.executable, str(SCRIPT), "--child", "watch", json.dumps(reader_spec)]
    reader = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert reader.stdin is not None and reader.stdout is not None
    memory = open_memory(spec["path"], spec)
    delays, polls, added = [], [], []
    try:
        memory.recall("warm up", entity_id=served)  # the shard loaded before timing
        if reader.stdout.readline().strip() != READY:
            sys.exit("the watching process did not start")
        for message in probes(spec):
            items = memory.add(message.as_dict(), entity_id=served, mode="fast")
            returned = time.time()
            if not items:
                continue
            added.extend(item.id for item in items)
            reader.stdin.write(items[-1].id + "\n")
            reader.stdin.flush()
            line = reader.stdout.readline()
            if not line.startswith(SEEN):
                sys.exit(f"the watching process stopped: {line!r}")
            seen, count = line.removeprefix(SEEN).split()
            delays.append((float(seen) - returned) * 1000)
            polls.append(int(count))
    finally:
        reader.stdin.close()
        try:
            reader.wait(timeout=60)
        except subprocess.TimeoutExpired:
            reader.kill()
        try:
            if spec["restore"]:  # leave a cached store as it was built (not timed)
                for memory_id in added:
                    memory.forget(memory_id, entity_id=served)
        finally:
            memory.close()
    return {
        "writes": len(delays),
        "visible_p50_ms": round(percentile(delays, 0.5), 2),
        "visible_p99_ms": round(percentile(delays, 0.99), 2),
        "visible_max_ms": round(max(delays), 2) if delays else None,
        "polls_p50": percentile([float(p) for p in polls], 0.5),
        "poll_ms": spec["poll_ms"],
    }


def watch_child(spec: dict[str, Any]) -> None:
    """Process B: for each memory id on stdin, ``get`` it until found; print when it was."""
    from memtrellis.errors import MemoryNotFoundError

    served = entity_name(SERVED, spec["namespace"])
    pause = spec["poll_ms"] / 1000
    memory = open_memory(spec["path"], spec)
    try:
        memory.recall("warm up", entity_id=served)
        print(READY, flush=True)
        for line in sys.stdin:
            memory_id, count, deadline = line.strip(), 1, time.monotonic() + 60
            while True:
                try:
                    memory.get(memory_id, entity_id=served)
                    break
                except MemoryNotFoundError:
                    if time.monotonic() > deadline:
                        print(f"WATCH-LOST {memory_id} not seen within 60 s", flush=True)
                        return
                    count += 1
                    time.sleep(pause)
            print(f"{SEEN}{time.time():.6f} {count}", flush=True)
    finally:
        memory.close()


def settle(postgres_url: str) -> None:
    """Let PostgreSQL settle after a bulk build, as a database would before serving: the
    bulk load's autovacuum, analyze and checkpoint would otherwise run during the measured
    calls, on the same two cores, and more of them the bigger the build."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
