"""A real memtrellis service on a loopback port: uvicorn in a thread over a shared Memory."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import uvicorn

from memtrellis import Memory
from memtrellis.service.app import create_app
from memtrellis.service.auth import KeyRing
from memtrellis.service.server import server_config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Running:
    """A service running on loopback: its URL, its memory and its keys."""

    url: str
    memory: Memory
    keys: KeyRing | None

    def key(self, *entities: str, process_id: str | None = None, monitor: bool = False) -> str:
        assert self.keys is not None
        _, key = self.keys.add(entity_ids=entities, process_id=process_id, monitor=monitor)
        return key


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@contextmanager
def running_service(
    memory: Memory,
    keys_path: Path | None,
    *,
    max_body_bytes: int = 1 << 20,
    http: Literal["auto", "h11", "httptools"] = "auto",
) -> Iterator[Running]:
    """Start uvicorn on a free loopback port in a thread, configured as ``memtrellis serve``
    does (`server_config`); stop it (and close memory) after."""
    keys = KeyRing(keys_path) if keys_path is not None else None
    app = create_app(memory, keys=keys, max_body_bytes=max_body_bytes)
    port = free_port()
    config = server_config(
        app, host="127.0.0.1", port=port, http=http, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(600):  # up to 30 s for the server to bind
        if server.started:
            break
        if not thread.is_alive():
            raise RuntimeError("uvicorn exited before it started")
        threading.Event().wait(0.05)
    else:
        raise RuntimeError("uvicorn did not start")
    try:
        yield Running(url=f"http://127.0.0.1:{port}", memory=memory, keys=keys)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
