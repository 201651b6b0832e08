"""ASGI middleware of the service: a request-body limit and request metrics.

Both are plain ASGI (no per-request task or buffering beyond the body limit itself), so
they cost little on the recall path.
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memtrellis.service.metrics import ServiceMetrics

__all__ = ["BodyLimitMiddleware", "MetricsMiddleware", "send_error"]


async def send_error(send: Send, status: int, error: str, message: str) -> None:
    """Answer with the service's JSON error shape, straight from ASGI."""
    body = json.dumps({"error": error, "message": message, "details": []}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """Refuses request bodies over ``max_bytes`` with 413, before any route reads them.

    The body is read up to the limit and handed on whole, so a client that lies in
    ``Content-Length`` or streams without one is stopped all the same.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await send_error(send, 400, "bad_request", "Content-Length is not a number")
                return
            if int(declared) > self.max_bytes:
                await self._too_large(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        await send_error(
            send,
            413,
            "payload_too_large",
            f"the request body is larger than {self.max_bytes} bytes",
        )


class MetricsMiddleware:
    """Counts every request by method, route template and status, and times it."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            route: Any = scope.get("route")
            # Route templates, not raw paths: one series per endpoint, whatever the ids.
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.observe(scope["method"], template, status, time.perf_counter() - started)
