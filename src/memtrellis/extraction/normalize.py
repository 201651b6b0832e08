"""Entry validation and normalisation: whatever ``Memory.add`` is given, as turns and documents.

Accepted input (anything else raises [`InvalidInputError`][memtrellis.errors.InvalidInputError]):

* plain text: a [`Document`][memtrellis.extraction.Document] of kind ``TEXT``;
* a `pathlib.Path` (any ``os.PathLike``): a document file, see
  `read_document`;
* a [`Document`][memtrellis.extraction.Document];
* one message dict, or a list of them (one conversation), or a list of such lists
  (several conversations);
* a list mixing texts, paths, documents and message dicts: the messages form one
  conversation, the rest become documents.

A message dict has ``role`` and ``content`` (a string, or a list of multimodal parts whose
text parts are kept and whose image, file and audio parts become attachments of the turn,
each named in its text: see `memtrellis.attachments`), an optional ``attachments`` list
of such parts, the tool calls an assistant made (``tool_calls``; then ``content`` may be
empty or absent) or the call a ``tool`` message answers (``tool_call_id``, ``name``), see
`memtrellis.tool_calls`, ``"context": true`` for a message shown only as provenance (an
earlier capture stored it: it is a source, never a memory of its own),
and optionally ``id``/``message_id``, ``timestamp`` (ISO 8601,
epoch seconds or milliseconds, or a ``datetime``; naive means UTC) and
``speaker``/``name``. A dict without the ``role`` or the ``content`` key is an error.
Roles are case-insensitive; ``human``, ``ai``, ``developer`` and ``function`` are read as
user, assistant, system and tool. Messages with another role (or a role that is not a
string) or without text or attachments (``None``, blank) are skipped, logged, counted.

Examples:
    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    >>> out = normalize(
    ...     [{"role": "user", "content": "I moved to Lyon", "id": "m1"},
    ...      {"role": "narrator", "content": "(music)"}], now=now)
    >>> turn = out.conversations[0][0]
    >>> turn.message_id, turn.timestamp == now, out.skipped
    ('m1', True, 1)
"""

from __future__ import annotations

import logging
import math
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from memtrellis.attachments import attachments_of, content_text, mention
from memtrellis.errors import InvalidInputError
from memtrellis.extraction.documents import read_document
from memtrellis.extraction.model import Document, Normalized, Turn
from memtrellis.tool_calls import ToolUse, call_line, calls_of, only_tool_results, result_of
from memtrellis.types import SourceKind, _clean_text, utcnow

__all__ = ["ROLES", "check_labels", "extractable", "new_id", "normalize"]

log = logging.getLogger("memtrellis.extraction")

#: The roles a turn can have; other roles are skipped.
ROLES = frozenset({"user", "assistant", "system", "tool"})
_ALIASES = {"human": "user", "ai": "assistant", "developer": "system", "function": "tool"}
_ACCEPTED = (
    "memtrellis accepts text, a pathlib.Path to a document, a Document, a message dict "
    "({'role': ..., 'content': ...}), a list of messages (one conversation), a list of "
    "such lists (several conversations), or a list mixing texts, paths and messages"
)
# Epoch values this large are milliseconds (as seconds they would be after the year 5000).
_EPOCH_MS = 1e11


def new_id(prefix: str = "msg") -> str:
    """A fresh id: ``prefix`` + ``-`` + 16 hex digits of a random UUID (64 random bits).

    Examples:
        >>> len(new_id()), new_id().startswith("msg-"), new_id() != new_id()
        (20, True, True)
    """
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


def extractable(turn: Turn, *, extract_tools: bool) -> bool:
    """Whether ``turn`` should produce memories (tool output only when asked).

    Tool turns are still kept in windows: they are context and can be cited as sources.
    System messages are kept the same way and never extracted: a wrapped model sends
    the same system prompt on every call, and it is instructions, not something the
    user said. A context turn (``"context": true``: stored by an earlier capture) is
    only provenance.

    Examples:
        >>> from datetime import datetime, timezone
        >>> tool = Turn(0, 0, "tool", "42 °C", "m1", datetime.now(timezone.utc))
        >>> extractable(tool, extract_tools=False), extractable(tool, extract_tools=True)
        (False, True)
    """
    if turn.role == "system" or turn.context:
        return False
    return extract_tools or turn.role != "tool"


def normalize(
    data: Any,
    *,
    now: datetime | None = None,
    extract_tools: bool = False,
    attachment_bytes: int = 0,
) -> Normalized:
    """Validate ``data`` and turn it into conversations of turns and documents.

    Args:
        data: See the module docstring for the accepted shapes.
        now: The capture time, given to messages without a timestamp and to plain text
            (default: now, UTC; naive is taken as UTC).
        extract_tools: Recorded on the result; see `extractable`.
        attachment_bytes: Inline bytes of an image or file part up to this size are
            kept in its source (`memtrellis.attachments`); 0 keeps none.

    Returns:
        The turns of each conversation (in input order, conversations that lost every
        message to skipping left out), the documents, and the number of skipped messages.

    Raises:
        InvalidInputError: ``data`` is None, empty or of a type not listed above, a
            conversation is empty, a message dict lacks the ``role`` or ``content`` key, a
            timestamp cannot be read, or a document cannot be read.
    """
    moment = _to_utc(now) if now is not None else utcnow()
    reader = _Reader(moment, attachment_bytes)
    if isinstance(data, (str, os.PathLike, Document)):
        reader.document(data, "the input")
    elif isinstance(data, Mapping):
        reader.conversation([data], 0, "the input")
    elif _is_list(data):
        reader.items(list(data))
    else:
        raise InvalidInputError(f"cannot remember {_kind(data)}; {_ACCEPTED}")
    return Normalized(
        conversations=reader.conversations,
        documents=reader.documents,
        skipped=reader.skipped,
        extract_tools=extract_tools,
    )


def check_labels(
    tags: Any, entities: Any, metadata: Any
) -> tuple[list[str], list[str], dict[str, Any] | None]:
    """``tags``, ``entities`` and ``metadata`` as a call gave them, checked before any work.

    Tags and entities are lists (or tuples, sets) of strings; a bare string is refused
    rather than read as a list of letters. Metadata is a mapping with string keys that
    can be written as JSON (the index stores it so).

    Raises:
        InvalidInputError: Any of the three has another shape.

    Examples:
        >>> check_labels(("work",), [], {"source": "email"})
        (['work'], [], {'source': 'email'})
        >>> check_labels("work", [], None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: tags must be a list of strings, not a str
    """
    lists: list[list[str]] = []
    for name, values in (("tags", tags), ("entities", entities)):
        if not isinstance(values, (Sequence, set, frozenset)) or isinstance(
            values, (str, bytes, bytearray)
        ):
            raise InvalidInputError(f"{name} must be a list of strings, not {_kind(values)}")
        wrong = [v for v in values if not isinstance(v, str)]
        if wrong:
            raise InvalidInputError(f"{name} must be a list of strings, not of {_kind(wrong[0])}")
        lists.append(list(values))
    if metadata is None:
        return lists[0], lists[1], None
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidInputError(
            f"metadata must be a mapping with string keys, not {_kind(metadata)}"
        )
    try:
        to_json(dict(metadata))  # what the index will store
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"metadata must be JSON with valid unicode text: {exc}") from None
    return lists[0], lists[1], dict(metadata)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, (bytes, bytearray)):
        return "bytes (decode them to str first)"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


class _Reader:
    def __init__(self, now: datetime, keep_bytes: int = 0) -> None:
        self.now = now
        self.keep_bytes = keep_bytes
        self.conversations: list[list[Turn]] = []
        self.documents: list[Document] = []
        self.skipped = 0
        self.numbered = 0  # conversations seen, kept or not

    def items(self, items: list[Any]) -> None:
        if not items:
            raise InvalidInputError(f"nothing to remember: the list is empty; {_ACCEPTED}")
        nested = [_is_list(item) for item in items]
        if any(nested) and any(isinstance(item, Mapping) for item in items):
            raise InvalidInputError(
                "a list cannot hold both message dicts and lists of messages; pass one "
                "conversation (a list of dicts) or several (a list of lists)"
            )
        loose: list[Mapping[str, Any]] = []
        for position, (item, is_list) in enumerate(zip(items, nested, strict=True)):
            where = f"item {position} of the input"
            if is_list:
                self.conversation(list(item), self.numbered, f"conversation {self.numbered}")
            elif isinstance(item, Mapping):
                loose.append(item)
            else:
                self.document(item, where)
        if loose:
            self.conversation(loose, self.numbered, "the conversation")

    def document(self, item: Any, where: str) -> None:
        if isinstance(item, str):
            text = _clean(item)
            if not text:
                raise InvalidInputError(f"{where} is empty text; there is nothing to remember")
            self.documents.append(Document(new_id("text"), text, self.now, SourceKind.TEXT))
        elif isinstance(item, os.PathLike):
            self.documents.append(read_document(Path(os.fsdecode(item)), now=self.now))
        elif isinstance(item, Document):
            if not item.text.strip():
                raise InvalidInputError(f"{where} is a Document without text")
            text = _clean_text(item.text.replace("\r\n", "\n").replace("\r", "\n"))
            self.documents.append(replace(item, text=text, timestamp=_to_utc(item.timestamp)))
        else:
            raise InvalidInputError(f"{where} is {_kind(item)}; {_ACCEPTED}")

    def conversation(self, messages: list[Any], number: int, where: str) -> None:
        self.numbered += 1
        if not messages:
            raise InvalidInputError(f"{where} is an empty list of messages")
        turns: list[Turn] = []
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):
                raise InvalidInputError(
                    f"message {index} of {where} is {_kind(message)}; a conversation is a "
                    "list of message dicts ({'role': ..., 'content': ...})"
                )
            turn = self.turn(message, number, index, f"message {index} of {where}")
            if turn is not None:
                turns.append(turn)
        if turns:
            self.conversations.append(_answered(turns))

    def turn(self, message: Mapping[str, Any], number: int, index: int, where: str) -> Turn | None:
        listed = message.get("tool_calls")
        calls = tuple(calls_of({"tool_calls": listed})) if isinstance(listed, list) else ()
        needed = ("role",) if calls else ("role", "content")
        missing = [key for key in needed if key not in message]
        if missing:
            raise InvalidInputError(
                f"{where} is a dict without {' or '.join(repr(k) for k in missing)} (keys: "
                f"{sorted(map(str, message))[:8]}); a message looks like "
                "{'role': 'user', 'content': 'text'}"
            )
        raw_role = message.get("role")
        role = _role(raw_role)
        if role is None:
            log.warning("skipped %s: role %r is not one of %s", where, raw_role, sorted(ROLES))
            self.skipped += 1
            return None
        content = message.get("content")
        text = _clean(content_text(content))
        calls = (*calls, *calls_of({"content": content}))  # and Anthropic tool_use blocks
        if calls:  # each call is a line of the text, so it is searched like the words
            lines = [line for line in map(call_line, calls) if line not in text]
            text = "\n".join(filter(None, [text, *lines]))
        if role == "user" and only_tool_results(content):
            role = "tool"  # Anthropic sends a tool's output as a user message
        attached = (
            *attachments_of(content, keep_bytes=self.keep_bytes),
            *attachments_of(message.get("attachments"), keep_bytes=self.keep_bytes),
        )
        if attached:
            text = "\n".join([*filter(None, [text]), *map(mention, attached)])
        if not text:
            log.info("skipped %s: a %s message without text", where, role)
            self.skipped += 1
            return None
        when = _timestamp(message.get("timestamp"), where)
        return Turn(
            conversation=number,
            index=index,
            role=role,
            content=text,
            message_id=_optional_str(message, "id", "message_id") or new_id(),
            timestamp=self.now if when is None else when,
            speaker=_optional_str(message, "speaker", "name"),
            timed=when is not None,
            attachments=attached,
            tool_calls=calls if role == "assistant" else (),
            tool=result_of({**message, "role": role}) if role == "tool" else None,
            context=message.get("context") is True,
        )


def _answered(turns: list[Turn]) -> list[Turn]:
    """The conversation with each tool turn's call filled in from the assistant turn that
    made it: by the call's id, else by the tool's name, else the oldest call not answered."""
    waiting: list[ToolUse] = []
    out: list[Turn] = []
    for turn in turns:
        waiting.extend(turn.tool_calls)
        if turn.role == "tool" and turn.tool is not None and waiting:
            given = turn.tool
            found = next((c for c in waiting if given.call_id and c.call_id == given.call_id), None)
            if found is None and given.call_id is None:
                named = [c for c in waiting if c.name == given.name]
                found = named[0] if named else (waiting[0] if given.name == "tool" else None)
            if found is not None:
                waiting.remove(found)
                turn = replace(turn, tool=found.model_copy(update={"failed": given.failed}))
        out.append(turn)
    return out


def _role(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    role = value.strip().lower()
    role = _ALIASES.get(role, role)
    return role if role in ROLES else None


def _clean(text: str) -> str:
    return _clean_text(text.replace("\r\n", "\n").replace("\r", "\n")).strip()


def _optional_str(message: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = message.get(key)
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError as exc:  # 0001-01-01 at +14:00 is before the year 1 in UTC
        raise InvalidInputError(f"the time {value.isoformat()} is out of range in UTC") from exc


def _timestamp(value: Any, where: str) -> datetime | None:
    """A message's timestamp as an aware UTC datetime; None when it has none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):
        return _to_utc(value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            return _epoch(number, where)
        try:
            return _to_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError as exc:
            raise InvalidInputError(
                f"the timestamp of {where} is {value!r}, which is neither ISO 8601 "
                "(2026-03-01T10:00:00Z) nor epoch seconds"
            ) from exc
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _epoch(float(value), where)
    raise InvalidInputError(
        f"the timestamp of {where} is {_kind(value)}; use ISO 8601 text, epoch seconds "
        "or a datetime"
    )


def _epoch(value: float, where: str) -> datetime:
    if not math.isfinite(value):
        raise InvalidInputError(f"the timestamp of {where} is {value}, not a time")
    seconds = value / 1000 if abs(value) >= _EPOCH_MS else value
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidInputError(f"the timestamp of {where} ({value}) is out of range") from exc
