"""Chroma's refusals when this process's embedded view of a collection lags behind what
another process (or another thread) changed, and the one answer to them: close the
client, open it again and ask again.

An embedded Chroma keeps each collection's HNSW index in memory and brings it up to date
from the shared SQLite log lazily, on the next read or write. When that meets records it
cannot place (another process wrote or deleted them since, or is writing the index files
at that moment), Chroma refuses the call with an ``InternalError``; the same call on a
client opened afresh, which loads the index as it now is, succeeds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from memtrellis.store._chroma_damage import chroma_says

log = logging.getLogger("memtrellis.store")

_T = TypeVar("_T")

#: Calls asked again on a reopened client before the refusal is given up on.
UNSYNCED_ATTEMPTS = 3

#: How Chroma words it, by where its plan meets the gap: a read of a record whose vector
#: is not loaded ("Error finding id", "Error getting embedding"), the log applied to a
#: stale or half-written index ("Failed to apply logs to the hnsw segment writer", alone
#: on a write or after "Error sending backfill request to compactor" on a read), and
#: index files read while another process rewrites them ("Error constructing hnsw segment
#: reader: ... Error deserializing pickle file: ... EOF while parsing"). The last is also
#: what a damaged file says: it is asked again too, and only what still fails on a client
#: opened afresh is reported as damage.
_NOT_LOADED = ("Error finding id", "Error getting embedding")
_UNSYNCED = (*_NOT_LOADED, "Failed to apply logs", "Error constructing hnsw segment reader")


def not_loaded(exc: BaseException) -> bool:
    """Whether ``exc`` is Chroma refusing a read of records whose vectors this process
    has not loaded (the one refusal that concerns some records only, not the index).

    Examples:
        >>> from chromadb.errors import InternalError
        >>> not_loaded(InternalError("Error executing plan: Internal error: Error finding id"))
        True
        >>> not_loaded(InternalError("Error constructing hnsw segment reader: EOF"))
        False
    """
    return chroma_says(exc, _NOT_LOADED)


def unsynced(exc: BaseException) -> bool:
    """Whether ``exc`` is Chroma refusing a call because this process's view lags, or
    an error raised from such a refusal (the damage check's, say).

    Examples:
        >>> from chromadb.errors import InternalError
        >>> unsynced(InternalError("Error executing plan: Internal error: Error finding id"))
        True
        >>> unsynced(InternalError("Internal error: Error getting embedding"))
        True
        >>> unsynced(InternalError(
        ...     "Error in compaction: Failed to apply logs to the hnsw segment writer"))
        True
        >>> unsynced(InternalError("(code: 5) database is locked"))
        False
        >>> unsynced(ValueError("Error finding id"))  # only Chroma's own errors
        False
        >>> try:
        ...     try:
        ...         raise InternalError("Error constructing hnsw segment reader: EOF")
        ...     except InternalError as refusal:
        ...         raise RuntimeError("the index cannot be read") from refusal
        ... except RuntimeError as raised:
        ...     unsynced(raised)
        True
    """
    if chroma_says(exc, _UNSYNCED):
        return True
    return exc.__cause__ is not None and unsynced(exc.__cause__)


def again_while_unsynced(
    call: Callable[[], _T],
    *,
    reopen: Callable[[], None],
    then: Callable[[], _T] | None = None,
    what: str = "a call",
) -> _T:
    """``call()``, asked again after ``reopen()`` while Chroma refuses it as `unsynced`,
    up to `UNSYNCED_ATTEMPTS` times; then ``then()``, or without it the last refusal is
    raised. Every refusal reopens the client, the last one too, so that no call after it
    meets the client that refused. Any other error is raised at once.

    Examples:
        >>> from chromadb.errors import InternalError
        >>> refusals = [InternalError("Error finding id")]
        >>> def read():
        ...     if refusals:
        ...         raise refusals.pop()
        ...     return "read"
        >>> reopened = []
        >>> again_while_unsynced(read, reopen=lambda: reopened.append(1))
        'read'
        >>> reopened
        [1]
    """
    for attempt in range(1, UNSYNCED_ATTEMPTS + 1):
        try:
            return call()
        except Exception as exc:
            if not unsynced(exc):
                raise
            log.debug("%s met records changed under it (%s); asking again", what, exc)
            time.sleep(0.01 * attempt)
            reopen()
            if then is None and attempt == UNSYNCED_ATTEMPTS:
                raise
    assert then is not None
    return then()
