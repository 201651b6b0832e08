"""Recall throughput and latency of the HTTP service at 16 concurrent clients (loopback).

    pip install -e ".[dev]"                          # the service extra and httpx
    python benchmarks/service.py                     # 2,000 memories, 16 clients
    python benchmarks/service.py --memories 500 --requests 500 --embedder hashing

Starts ``memtrellis serve`` in a subprocess on a free 127.0.0.1 port over a fresh store
(the default embedder, all-MiniLM-L6-v2 int8 ONNX, unless ``--embedder hashing``), with
one API key. Stores ``--memories`` synthetic chat messages of one user (``_synth.py``)
through ``POST /v1/memories`` one session per request, then ``--clients`` httpx clients
send ``POST /v1/recall`` (k=10, questions phrased from stored facts) as fast as answers
come, until ``--requests`` recalls are done or ``--max-seconds`` have passed. Reports
recalls per second, p50, p90 and p99 latency (client side, request to full response) and
errors; writes ``benchmarks/results/service.json``. Bounded in count and time; no
address but loopback. Clients and server share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from _synth import UserStream

from memtrellis.service.auth import KeyRing, default_keys_path

RESULTS = Path(__file__).resolve().parent / "results" / "service.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(store: Path, embedder: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "memtrellis", "--path", str(store), "--embedder", embedder]
    proc = subprocess.Popen(
        [*command, "serve", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("server did not start within 120 s") from None
            time.sleep(0.2)


def seed(client: httpx.Client, memories: int) -> tuple[list[str], float]:
    """Store the messages one session per request; returns the questions and the time."""
    messages = UserStream("bench-user", seed=11).take(memories)
    started = time.perf_counter()
    for _, group in itertools.groupby(messages, key=lambda m: m.session):
        session = list(group)
        body = {
            "messages": [
                {
                    "role": m.role,
                    "content": m.text,
                    "id": m.id,
                    "timestamp": m.timestamp.isoformat(),
                }
                for m in session
            ],
            "entities": list(session[0].entities),
            "mode": "fast",
        }
        response = client.post("/v1/memories", json=body)
        response.raise_for_status()
    questions = [m.question for m in messages if m.question]
    return questions, time.perf_counter() - started


async def load(
    url: str, key: str, questions: list[str], clients: int, requests: int, max_seconds: float
) -> tuple[list[float], int, float]:
    """``clients`` workers recalling until ``requests`` are done or time is up."""
    latencies: list[float] = []
    errors = 0
    counter = itertools.count()
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    deadline = time.perf_counter() + max_seconds
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as http:

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                n = next(counter)
                if n >= requests:
                    return
                body = {"query": questions[n % len(questions)], "k": 10}
                sent = time.perf_counter()
                response = await http.post("/v1/recall", json=body)
                took = time.perf_counter() - sent
                if response.status_code == 200 and response.json()["items"]:
                    latencies.append(took * 1000.0)
                else:
                    errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        wall = time.perf_counter() - started
    return latencies, errors, wall


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=3000, help="Most recalls to send.")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="Longest load phase.")
    parser.add_argument("--warmup", type=int, default=32)
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="memtrellis-service-bench-") as tmp:
        store = Path(tmp) / "store"
        _, key = KeyRing(default_keys_path(store)).add(entity_ids=["bench-user"], label="bench")
        proc, url = start_server(store, args.embedder)
        try:
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120
            ) as client:
                questions, seed_s = seed(client, args.memories)
                for question in questions[: args.warmup]:
                    client.post("/v1/recall", json={"query": question, "k": 10}).raise_for_status()
                total = client.get("/v1/memories", params={"limit": 1}).status_code
                assert total == 200
            latencies, errors, wall = asyncio.run(
                load(url, key, questions, args.clients, args.requests, args.max_seconds)
            )
        finally:
            proc.terminate()
            proc.wait(120)

    if not latencies:
        raise SystemExit(f"no successful recall ({errors} errors)")
    figures: dict[str, Any] = {
        "benchmark": "HTTP service recall at concurrent clients (benchmarks/service.py)",
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        },
        "embedder": args.embedder,
        "memories": args.memories,
        "seed_seconds": round(seed_s, 2),
        "clients": args.clients,
        "recalls": len(latencies),
        "errors": errors,
        "wall_seconds": round(wall, 2),
        "recalls_per_second": round(len(latencies) / wall, 1),
        "latency_ms": {
            "p50": round(statistics.median(latencies), 2),
            "p90": round(percentile(latencies, 0.90), 2),
            "p99": round(percentile(latencies, 0.99), 2),
            "max": round(max(latencies), 2),
        },
    }
    print(json.dumps(figures, indent=2))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
