"""How the service answers an error: every exception a route raises becomes the one JSON
shape, ``{"error": <type>, "message": <text>, "details": [...]}``
([`ErrorResponse`][memtrellis.service.schemas.ErrorResponse]), never a stack trace.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from memtrellis.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    MemtrellisError,
    StoreClosedError,
    StoreLockedError,
)
from memtrellis.service.errors import ServiceError
from memtrellis.service.schemas import ErrorResponse

__all__ = ["install_error_handlers"]

log = logging.getLogger("memtrellis.service")


def _error(status: int, error: str, message: str, details: list[Any] | None = None) -> Response:
    payload = ErrorResponse(error=error, message=message, details=details or [])
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(payload.model_dump(mode="json"), status_code=status, headers=headers)


_STATUS_NAMES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}
_UNREADABLE_JSON = (
    "the body is not JSON the service can read: it must be UTF-8 JSON, less deeply "
    "nested, with numbers of at most 4300 digits"
)
_NOT_AN_OBJECT = "the body must be a JSON object, sent with Content-Type: application/json"
_NO_OBJECT = {(("body",), "model_attributes_type"), (("body",), "missing")}


def install_error_handlers(app: FastAPI) -> None:
    """Answer every exception a route raises with the one JSON error shape: a service
    error with its own status, a memtrellis error by its kind, a request that does not
    match the schema with 422, anything else with 500 (logged, never shown).

    Examples:
        >>> app = FastAPI()
        >>> install_error_handlers(app)
        >>> ServiceError in app.exception_handlers, Exception in app.exception_handlers
        (True, True)
    """

    async def service_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        return _error(exc.status, exc.error_type, exc.message)

    async def not_found(_: Request, exc: Exception) -> Response:
        return _error(404, "not_found", str(exc))

    async def invalid(_: Request, exc: Exception) -> Response:
        return _error(400, "invalid_input", str(exc))

    async def unavailable(_: Request, exc: Exception) -> Response:
        return _error(503, "unavailable", str(exc))

    async def validation(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        message = "the request does not match the schema"
        if any((tuple(e.get("loc", ())), e.get("type")) in _NO_OBJECT for e in exc.errors()):
            message = _NOT_AN_OBJECT  # e.g. text/plain, a form, a JSON list, nothing
        details = [
            {
                "loc": [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
                "msg": str(e.get("msg", "")),
                "type": str(e.get("type", "")),
            }
            for e in exc.errors()
        ]
        return _error(422, "validation_error", message, details)

    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400 and isinstance(exc.__cause__, (ValueError, RecursionError)):
            # FastAPI's "error parsing the body": invalid UTF-8, nesting too deep for the
            # JSON parser, an integer too long to read. Malformed JSON, like a syntax error.
            detail = {"loc": ["body"], "msg": str(exc.__cause__)[:200], "type": "json_invalid"}
            return _error(422, "validation_error", _UNREADABLE_JSON, [detail])
        error = _STATUS_NAMES.get(exc.status_code, "http_error")
        return _error(exc.status_code, error, str(exc.detail))

    async def other_memtrellis(_: Request, exc: Exception) -> Response:
        log.warning("memtrellis error in a request: %s", exc)
        return _error(500, "internal_error", "the service could not complete the request")

    async def unexpected(_: Request, exc: Exception) -> Response:
        log.error("unexpected error in a request", exc_info=exc)
        return _error(500, "internal_error", "the service could not complete the request")

    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(MemoryNotFoundError, not_found)
    app.add_exception_handler(InvalidInputError, invalid)
    app.add_exception_handler(StoreClosedError, unavailable)
    app.add_exception_handler(StoreLockedError, unavailable)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(MemtrellisError, other_memtrellis)
    app.add_exception_handler(Exception, unexpected)
