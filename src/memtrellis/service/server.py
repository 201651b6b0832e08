"""The service on uvicorn, with the HTTP server's own answers counted in the metrics.

uvicorn answers a request it cannot parse (a body longer or shorter than its
``Content-Length``, bad chunked framing, a NUL in the request line) with 400 and closes
the connection, before or while the application runs. The application then answers into
a closed connection, and its metrics would count that answer (or a 500) although the
client received the server's 400. The protocol made here tells the metrics what the
client really received: the server's 400, or nothing when the connection was lost
first; and answers the 400 in the service's JSON error shape.

Examples:
    >>> from memtrellis.service.app import create_app
    >>> config = server_config(create_app(None, keys=None), host="127.0.0.1", port=0)
    >>> config.http.__name__.startswith("Counting")
    True
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI

from memtrellis.service.metrics import ServiceMetrics
from memtrellis.service.middleware import OUTCOME_KEY, Outcome

__all__ = ["INVALID_REQUEST_ROUTE", "counting_protocol", "server_config"]

#: The route label of a request the server refused before it knew which one it was.
INVALID_REQUEST_ROUTE = "invalid_request"

_INVALID_BODY = json.dumps(
    {
        "error": "bad_request",
        "message": "invalid HTTP request: a malformed request line or header, or a body "
        "that does not match its Content-Length or chunked framing",
        "details": [],
    }
).encode()
_INVALID_HEADERS = [
    (b"content-type", b"application/json"),
    (b"content-length", str(len(_INVALID_BODY)).encode()),
    (b"connection", b"close"),
]


class _Counting:
    """What both protocols add: marks on the outcome of the request in flight."""

    metrics: ServiceMetrics
    cycle: Any

    def _in_flight(self) -> Outcome | None:
        """The outcome of the request whose answer is not complete yet, if any."""
        cycle = getattr(self, "cycle", None)
        if cycle is None or cycle.response_complete:
            return None
        # The application may not have started yet: the mark waits for it in the scope.
        outcome = cycle.scope.setdefault(OUTCOME_KEY, Outcome())
        return outcome if isinstance(outcome, Outcome) and not outcome.observed else None

    def _count_refusal(self) -> None:
        outcome = self._in_flight()
        if outcome is not None:
            outcome.server_status = 400  # the client gets the server's 400, not the app's
        else:
            self.metrics.observe("UNKNOWN", INVALID_REQUEST_ROUTE, 400, 0.0)

    def _mark_lost(self) -> None:
        outcome = self._in_flight()
        if outcome is not None:
            outcome.gone = True


def _httptools_protocol() -> type[asyncio.Protocol] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools is optional
        return None

    class _HttpTools(_Counting, HttpToolsProtocol):
        _refusing = False

        def send_400_response(self, msg: str) -> None:
            cycle = self.cycle
            if (
                cycle is not None
                and not cycle.more_body
                and not cycle.response_complete
                and not cycle.disconnected
            ):
                # A whole request came before the bytes that cannot be parsed: answer it
                # first (as h11 does), then refuse the rest, so its client learns what
                # happened to it rather than a 400 for a request that was carried out.
                self._refusing = True
                self.metrics.observe("UNKNOWN", INVALID_REQUEST_ROUTE, 400, 0.0)
                cycle.on_response = self._refuse
                return
            self._count_refusal()
            self._refuse()

        def _refuse(self) -> None:
            lines = [b"HTTP/1.1 400 Bad Request"]
            headers = [*self.server_state.default_headers, *_INVALID_HEADERS]
            lines += [name + b": " + value for name, value in headers]
            self.transport.write(b"\r\n".join(lines) + b"\r\n\r\n" + _INVALID_BODY)
            self.transport.close()

        def data_received(self, data: bytes) -> None:
            if not self._refusing:  # the parser has failed: nothing more is read
                super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self._mark_lost()
            super().connection_lost(exc)

    return _HttpTools


def _h11_protocol() -> type[asyncio.Protocol]:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class _H11(_Counting, H11Protocol):
        def send_400_response(self, msg: str) -> None:
            self._count_refusal()
            head = h11.Response(status_code=400, headers=_INVALID_HEADERS, reason=b"Bad Request")
            for event in (head, h11.Data(data=_INVALID_BODY), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event) or b"")
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._mark_lost()
            super().connection_lost(exc)

    return _H11


def counting_protocol(
    metrics: ServiceMetrics, http: Literal["auto", "h11", "httptools"] = "auto"
) -> type[asyncio.Protocol]:
    """A uvicorn HTTP protocol class whose own refusals and lost connections reach
    ``metrics``: ``httptools`` when installed (``auto``, as uvicorn chooses), else ``h11``.

    Examples:
        >>> counting_protocol(ServiceMetrics(health=None), "h11").__name__
        'CountingH11'
    """
    base = _httptools_protocol() if http != "h11" else None
    if base is None:
        if http == "httptools":
            raise ImportError("httptools is not installed")
        base = _h11_protocol()
    name = "CountingHttpTools" if base.__name__ == "_HttpTools" else "CountingH11"
    protocol: type[asyncio.Protocol] = type(name, (base,), {"metrics": metrics})
    return protocol


def server_config(
    app: FastAPI,
    *,
    host: str,
    port: int,
    http: Literal["auto", "h11", "httptools"] = "auto",
    **options: Any,
) -> uvicorn.Config:
    """The uvicorn configuration that serves ``app`` (made by
    ``memtrellis.service.app.create_app``) with `counting_protocol`; ``options`` go to
    ``uvicorn.Config`` as they are.

    Examples:
        >>> from memtrellis.service.app import create_app
        >>> server_config(create_app(None, keys=None), host="127.0.0.1", port=8420).port
        8420
    """
    metrics: ServiceMetrics = app.state.metrics
    protocol = counting_protocol(metrics, http)
    return uvicorn.Config(app, host=host, port=port, http=protocol, **options)
