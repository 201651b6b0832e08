"""ASGI middleware of the service: request metrics, one value per security header, and
a request-body limit.

All are plain ASGI (no per-request task or buffering beyond the body limit itself), so
they cost little on the recall path.
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memtrellis.service.metrics import ServiceMetrics

__all__ = [
    "OUTCOME_KEY",
    "SINGLE_HEADERS",
    "BodyLimitMiddleware",
    "MetricsMiddleware",
    "Outcome",
    "SingleHeaderMiddleware",
    "send_error",
]

#: Where a request's [`Outcome`][memtrellis.service.middleware.Outcome] lives in its ASGI
#: scope, so the HTTP server (see `memtrellis.service.server`) can say what the client got.
OUTCOME_KEY = "memtrellis.outcome"

#: Headers a request may carry once: two ``Authorization`` headers must not let the
#: server pick one, and two framing or media-type headers make the body ambiguous.
SINGLE_HEADERS = (
    b"authorization",
    b"host",
    b"content-length",
    b"content-type",
    b"transfer-encoding",
)


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


class SingleHeaderMiddleware:
    """Refuses with 400 a request that repeats one of `SINGLE_HEADERS`, or that sends
    both ``Content-Length`` and ``Transfer-Encoding``.

    Without it the first ``Authorization`` header would win and the second be ignored, so
    what a proxy checked and what the service acts on could differ.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = [name.lower() for name, _ in scope["headers"]]
            for header in SINGLE_HEADERS:
                times = names.count(header)
                if times > 1:
                    title = header.decode().title()
                    message = f"the {title} header is sent {times} times: send it once"
                    await send_error(send, 400, "bad_request", message)
                    return
            if b"content-length" in names and b"transfer-encoding" in names:
                # Which one frames the body is where request smuggling starts.
                message = "send Content-Length or Transfer-Encoding, not both"
                await send_error(send, 400, "bad_request", message)
                return
        await self.app(scope, receive, send)


class Outcome:
    """What the client of one request received, as far as the service can tell.

    Attributes:
        status: The status the application answered with (``None``: no answer yet).
        gone: The client went away (or the server closed the connection) before the
            answer was complete, so it received no answer.
        server_status: The status the HTTP server itself answered with instead (400 for
            a body that does not match its framing), which is what the client received.
        observed: The request has been counted; later marks change nothing.

    Examples:
        >>> outcome = Outcome()
        >>> outcome.status, outcome.gone, outcome.server_status
        (None, False, None)
    """

    __slots__ = ("gone", "observed", "server_status", "status")

    def __init__(self) -> None:
        self.status: int | None = None
        self.gone = False
        self.server_status: int | None = None
        self.observed = False


class MetricsMiddleware:
    """Counts every request by method, route template and the status its client received,
    and times it.

    A request whose client received no answer (it went away first, or the server closed
    the connection on a malformed request) is counted in ``client_disconnects``, not as
    a status; one the HTTP server answered itself (a body longer or shorter than its
    framing says) is counted with the server's status.
    """

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics, router: Any = None) -> None:
        self.app = app
        self.metrics = metrics
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        outcome = scope.setdefault(OUTCOME_KEY, Outcome())

        async def watch_receive() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect" and outcome.status is None:
                outcome.gone = True
            return message

        async def record_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                outcome.status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, watch_receive, record_status)
        finally:
            outcome.observed = True
            seconds = time.perf_counter() - started
            method, template = scope["method"], self._template(scope)
            if outcome.server_status is not None:
                self.metrics.observe(method, template, outcome.server_status, seconds)
            elif outcome.gone:
                self.metrics.observe_disconnect(method, template)
            else:  # no answer and no disconnect: the server answers 500
                self.metrics.observe(method, template, outcome.status or 500, seconds)

    def _template(self, scope: Scope) -> str:
        """The route template (one series per endpoint, whatever the ids), also for a
        request refused before routing."""
        route: Any = scope.get("route")
        if route is None and self.router is not None:
            for candidate in self.router.routes:
                match, _ = candidate.matches(scope)
                if match is not Match.NONE:
                    route = candidate
                    break
        return getattr(route, "path", None) or "unmatched"
