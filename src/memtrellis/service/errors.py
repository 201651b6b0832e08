"""Typed errors of the service and the one JSON shape every error response takes.

Every error a client sees is ``{"error": <type>, "message": <text>, "details": [...]}``
with a 4xx status (503 when the store is closing); never a stack trace.

Examples:
    >>> err = NotAuthenticatedError()
    >>> err.status, err.error_type
    (401, 'unauthorized')
"""

from __future__ import annotations

from memtrellis.errors import MemtrellisError

__all__ = [
    "ForbiddenScopeError",
    "NotAuthenticatedError",
    "PayloadTooLargeError",
    "QueryParameterError",
    "ServiceError",
]


class ServiceError(MemtrellisError):
    """An error the service answers with its own status and error type.

    Args:
        message: What went wrong, in words a client developer can act on.
    """

    status: int = 400
    error_type: str = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotAuthenticatedError(ServiceError):
    """No API key, or one the service does not know (401)."""

    status = 401
    error_type = "unauthorized"

    def __init__(self, message: str = "a valid API key is required: Authorization: Bearer <key>"):
        super().__init__(message)


class ForbiddenScopeError(ServiceError):
    """The key is valid but may not act on the entity, process or endpoint named (403).

    Raised before anything is looked up, so it never says whether a memory exists.
    """

    status = 403
    error_type = "forbidden"


class QueryParameterError(ServiceError):
    """An unknown query parameter, or several values for one that takes one (422)."""

    status = 422
    error_type = "validation_error"


class PayloadTooLargeError(ServiceError):
    """The request body is larger than the service accepts (413)."""

    status = 413
    error_type = "payload_too_large"
