"""Session history for adapters (opt-in): the session's earlier turns a call lacks.

A caller that sends the model only the latest message (a stateless chat endpoint, a
serverless function) can have the session's recent turns placed in the memory-context
block, under "Recent conversation", as Memori's conversation injection does. The turns
are what memory holds of the session (``Memory.session_turns``: the messages its
memories were made from and the turns captured and not stored yet), of the call's entity
and session only; a message the request already contains is never placed again, and the
block's one token budget keeps the newest that fit.

It is off unless asked for: per registration (``memory.register(client,
session_history=6)``: up to six messages read, of which the block shows the newest
``recent_turns``; any adapter takes the option) or per call, for the calls made inside a
`session_history` block (this thread or asyncio task), which wins over the
registration (``session_history(0)`` turns it off). A call without a session id (the
registration's, a ``Memory.scope`` block's or the memory's own) gets none.

Examples:
    >>> from memtrellis.types import SourceRef
    >>> turns = [SourceRef(kind="chat", message_id="m1", role="user", content="Book Lisbon"),
    ...          SourceRef(kind="chat", message_id="m2", role="assistant", content="Which day?")]
    >>> missing_turns(turns, [{"role": "user", "content": "Friday"}], 4)
    [{'role': 'user', 'content': 'Book Lisbon'}, {'role': 'assistant', 'content': 'Which day?'}]
    >>> with session_history(1):
    ...     history_size(6)
    1
    >>> history_size(6)
    6
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from memtrellis.attachments import attachments_of, content_text, mention
from memtrellis.errors import InvalidInputError
from memtrellis.types import SourceRef

__all__ = [
    "MAX_HISTORY",
    "carried",
    "check_history",
    "history_request",
    "history_size",
    "missing_turns",
    "same_words",
    "session_history",
]

#: Most messages of a session's history one call may ask for.
MAX_HISTORY = 100
_IN_FORCE: ContextVar[int | None] = ContextVar("memtrellis_session_history", default=None)


def check_history(messages: Any) -> int:
    """``messages`` checked: an integer from 0 to `MAX_HISTORY`.

    Examples:
        >>> check_history(-1)
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: session_history must be an integer from 0 to 100
    """
    if isinstance(messages, bool) or not isinstance(messages, int):
        raise InvalidInputError(f"session_history must be an integer from 0 to {MAX_HISTORY}")
    if not 0 <= messages <= MAX_HISTORY:
        raise InvalidInputError(f"session_history must be an integer from 0 to {MAX_HISTORY}")
    return messages


@contextmanager
def session_history(messages: int) -> Iterator[None]:
    """Adapter calls inside the block place up to ``messages`` of the session's earlier
    turns (0: none), whatever their registration says; for this thread or asyncio task.

    Examples:
        >>> with session_history(4):
        ...     with session_history(0):  # the inner block wins
        ...         history_size(8)
        0
    """
    token = _IN_FORCE.set(check_history(messages))
    try:
        yield
    finally:
        _IN_FORCE.reset(token)


def history_size(registered: int) -> int:
    """The messages of session history a call places: the innermost `session_history`
    block's number, else ``registered`` (the adapter's option).

    Examples:
        >>> history_size(0)
        0
    """
    in_force = _IN_FORCE.get()
    return registered if in_force is None else in_force


def history_request(
    scope: Mapping[str, str], request: Sequence[Mapping[str, Any]], registered: int
) -> tuple[dict[str, Any], int] | None:
    """``Memory.session_turns`` arguments for a call in ``scope`` (its entity, process and
    session) and how many messages it places; None when it places none (no session, or
    `history_size` is 0). It asks for as many more as ``request`` holds, so that
    ``limit`` are left once `missing_turns` has left those out.

    Examples:
        >>> history_request({"entity_id": "ana", "session_id": "s1"}, [{}], 4)
        ({'entity_id': 'ana', 'session_id': 's1', 'limit': 5}, 4)
        >>> print(history_request({"entity_id": "ana"}, [], 4))
        None
    """
    limit = history_size(registered)
    if not limit or not scope.get("session_id"):
        return None
    return {**scope, "limit": min(limit + len(request), 1000)}, limit


def missing_turns(
    turns: Sequence[SourceRef],
    request: Sequence[Mapping[str, Any]],
    limit: int,
    sent: frozenset[str] | None = None,
) -> list[dict[str, str]]:
    """The latest ``limit`` of a session's ``turns`` (oldest first) that ``request`` (the
    call's messages, ``{"role", "content", "attachments"?}`` dicts) does not hold, as
    message dicts for the block's recent-conversation section.

    A message is the same when its words are (spacing aside), its attachments named as
    a stored message names them (``[image: ...]``). ``sent``: `carried` of ``request``,
    when the caller has it already.

    Examples:
        >>> said = SourceRef(kind="chat", message_id="m1", role="user", content="Hi  there")
        >>> missing_turns([said], [{"role": "user", "content": "Hi there"}], 4)
        []
    """
    if limit <= 0:
        return []
    sent = carried(request) if sent is None else sent
    kept = [
        {"role": str(turn.role), "content": turn.content}
        for turn in turns
        if turn.content.strip() and same_words(turn.content) not in sent
    ]
    return kept[-limit:]


def carried(request: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The words of each message of ``request`` (the call's message dicts) as a stored
    message has them (its text, a line naming each attachment), spacing aside: what
    `missing_turns` and the adapter binding compare stored text with (`same_words`).

    Examples:
        >>> carried([{"role": "user", "content": "Hi  there "}])
        frozenset({'Hi there'})
    """
    return frozenset(same_words(_as_stored(message)) for message in request)


def same_words(text: str) -> str:
    """``text`` with its spacing folded, as `carried` has a message's words.

    Examples:
        >>> same_words(" Book\\n Lisbon ")
        'Book Lisbon'
    """
    return " ".join(text.split())


def _as_stored(message: Mapping[str, Any]) -> str:
    """A request message's text as a stored message has it: its text, then a line naming
    each attachment (`memtrellis.attachments.mention`)."""
    content = message.get("content")
    found = (*attachments_of(content), *attachments_of(message.get("attachments")))
    return "\n".join([content_text(content), *map(mention, found)])
