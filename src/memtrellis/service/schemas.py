"""Request and response bodies of the HTTP API (pydantic; they make the OpenAPI document).

Responses reuse the core models ([`MemoryItem`][memtrellis.types.MemoryItem],
[`RecallResult`][memtrellis.types.RecallResult], [`Health`][memtrellis.types.Health]), so the
service says exactly what the library says.

Examples:
    >>> AddRequest(text="Alice prefers green tea").background
    False
    >>> AddRequest()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for AddRequest
    ...
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StringConstraints,
)
from pydantic import model_validator as _model_validator

from memtrellis.context import DEFAULT_TOKEN_BUDGET, build_context
from memtrellis.extraction.model import Mode
from memtrellis.types import HistoryEvent, MemoryItem, MemoryType, RecallResult

__all__ = [
    "AddRequest",
    "AddResponse",
    "CaptureResponse",
    "ErrorDetail",
    "ErrorResponse",
    "ForgetResponse",
    "HistoryResponse",
    "ListResponse",
    "Message",
    "PatchRequest",
    "QueryBool",
    "RecallRequest",
    "RecallResponse",
    "ScopeId",
    "UtcDatetime",
]

#: A scope id: 1-256 characters, not blank, no control characters (what ``Scope`` accepts).
ScopeId = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=256,
        pattern=r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
    ),
]
#: Text that is not blank.
Text = Annotated[str, StringConstraints(min_length=1, max_length=200_000, pattern=r"\S")]
Label = Annotated[str, StringConstraints(min_length=1, max_length=200)]


def _to_utc(value: datetime) -> datetime:
    # Naive means UTC; an aware time far at the edge of the calendar can overflow when
    # moved to UTC, which is bad input, not a server error.
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError as exc:
        raise ValueError("date-time out of range") from exc


def _iso_text(value: object) -> object:
    # JSON carries a date-time as an ISO 8601 string; a bare number is not one.
    if not isinstance(value, (str, datetime)):
        raise ValueError("expected an ISO 8601 date-time string")
    return value


def _bool_text(value: object) -> object:
    # A boolean query parameter is spelt true or false; 1, yes and on are not guessed at.
    if isinstance(value, str) and value not in ("true", "false"):
        raise ValueError("expected true or false")
    return value


#: A boolean query parameter: ``true`` or ``false``.
QueryBool = Annotated[bool, BeforeValidator(_bool_text)]

#: An ISO 8601 date-time, moved to UTC (naive values are taken as UTC).
UtcDatetime = Annotated[datetime, BeforeValidator(_iso_text), AfterValidator(_to_utc)]


class _Body(BaseModel):
    # Unknown fields are refused, and numbers and booleans are taken as JSON types only
    # ("5" is not a k, 1 is not a boolean), as the OpenAPI document says.
    model_config = ConfigDict(extra="forbid")


class Message(_Body):
    """One chat message; ``id`` and ``timestamp`` become the memory's provenance."""

    role: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        description="user, assistant, system or tool (human/ai are read as user/assistant)"
    )
    content: str = Field(max_length=200_000)
    id: Label | None = Field(default=None, description="The message's id in your system.")
    timestamp: UtcDatetime | None = None
    name: Label | None = Field(default=None, description="Who spoke (speaker name).")


class AddRequest(_Body):
    """Remember ``text`` or ``messages`` (exactly one) in a scope.

    With ``background`` the turn is spooled and extracted by the capture queue: the
    answer (202) carries a capture id instead of the stored memories.
    """

    text: Text | None = None
    messages: list[Message] | None = Field(default=None, min_length=1, max_length=1000)
    entity_id: ScopeId | None = Field(
        default=None, description="Whose memory; default: the key's only entity."
    )
    process_id: ScopeId | None = None
    session_id: ScopeId | None = None
    memory_type: MemoryType | None = None
    tags: list[Label] = Field(default_factory=list, max_length=50)
    entities: list[Label] = Field(default_factory=list, max_length=50)
    metadata: dict[str, Any] | None = None
    mode: Mode | None = Field(
        default=None, description="fast (one memory per message) or fine (needs an LLM)."
    )
    background: StrictBool = False

    @_model_validator(mode="after")
    def _one_input(self) -> AddRequest:
        if (self.text is None) == (self.messages is None):
            raise ValueError("give exactly one of text and messages")
        return self

    def data(self) -> str | list[dict[str, Any]]:
        """What ``Memory.add`` takes: the text, or the messages as dicts."""
        if self.text is not None:
            return self.text
        return [m.model_dump(exclude_none=True) for m in self.messages or []]


class AddResponse(BaseModel):
    """The memories stored (a duplicate comes back as the memory it joined)."""

    memories: list[MemoryItem]


class CaptureResponse(BaseModel):
    """A turn accepted into the background capture queue."""

    capture_id: str


class RecallRequest(_Body):
    """Recall the memories most relevant to ``query``."""

    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000, pattern=r"\S")]
    k: StrictInt = Field(default=10, ge=1, le=1000)
    token_budget: StrictInt | None = Field(default=None, ge=0, le=1_000_000)
    as_of: UtcDatetime | None = Field(default=None, description="Recall as of this time.")
    entity_id: ScopeId | None = None
    process_id: ScopeId | None = None
    session_id: ScopeId | None = None
    include_superseded: StrictBool = False
    include_expired: StrictBool = False
    graph_context: StrictBool = True
    memory_types: list[MemoryType] | None = Field(
        default=None, max_length=20, description="Only memories of one of these types."
    )
    tags: list[Label] | None = Field(
        default=None, max_length=50, description="Only memories with one of these tags."
    )
    context_hint: Annotated[str, StringConstraints(max_length=10_000)] | None = Field(
        default=None,
        description="A summary of the conversation so far: among the memories that match "
        "the query, those about it come first.",
    )
    open_items: StrictBool = Field(
        default=True,
        description="Keep room in `context` for the entity's open decisions and action "
        "items, recalled or not.",
    )


class RelateRequest(_Body):
    """How ``a`` and ``b`` (names the memories mention, or memory ids) are related."""

    a: Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=r"\S")]
    b: Annotated[str, StringConstraints(min_length=1, max_length=500, pattern=r"\S")]
    entity_id: ScopeId | None = None
    process_id: ScopeId | None = None
    max_hops: StrictInt = Field(default=4, ge=1, le=6)
    limit: StrictInt = Field(default=5, ge=1, le=50)
    include_superseded: StrictBool = False
    as_of: UtcDatetime | None = Field(default=None, description="Relate as of this time.")


class RecallResponse(RecallResult):
    """The recall result plus ``context``: the memories rendered as a memory-context block."""

    context: str = Field(
        description="The recalled memories as an escaped <memory_context> block for a prompt "
        "(empty when nothing was recalled or fitted)."
    )
    context_tokens: int = Field(description="Length of context in o200k_base tokens.")

    @classmethod
    def of(
        cls,
        result: RecallResult,
        *,
        token_budget: int | None,
        open_items: Sequence[MemoryItem] = (),
    ) -> RecallResponse:
        """The answer for ``result``: its fields as they are, and its memory context.

        The block is built by [`build_context`][memtrellis.context.build_context] within
        ``token_budget`` (the recall's own, else the block's default), as of the recall's
        ``as_of``.

        Examples:
            >>> from memtrellis.types import Scope
            >>> empty = RecallResult(query="tea", scope=Scope(entity_id="a"))
            >>> RecallResponse.of(empty, token_budget=None).context
            ''
        """
        context = build_context(
            result,
            token_budget=DEFAULT_TOKEN_BUDGET if token_budget is None else token_budget,
            now=result.as_of,
            open_items=list(open_items),
        )
        # Built from a validated result: nothing to check again on the hot path.
        return cls.model_construct(
            **dict(result), context=context.text, context_tokens=context.tokens
        )


class PatchRequest(_Body):
    """Fields to change on a memory; fields left out (or null) keep their value."""

    text: Text | None = None
    key: Label | None = None
    memory_type: MemoryType | None = None
    tags: list[Label] | None = Field(default=None, max_length=50)
    entities: list[Label] | None = Field(default=None, max_length=50)
    confidence: Annotated[float, Strict()] | None = Field(default=None, ge=0.0, le=1.0)
    valid_from: UtcDatetime | None = None
    valid_until: UtcDatetime | None = None
    metadata: dict[str, Any] | None = None


class ListResponse(BaseModel):
    """One page of memories, in the order they were stored."""

    items: list[MemoryItem]
    limit: int
    offset: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last.")


class ForgetResponse(BaseModel):
    """How many memories were forgotten."""

    forgotten: int


class HistoryResponse(BaseModel):
    """What happened to a memory, oldest first."""

    memory_id: str
    events: list[HistoryEvent]


class ErrorDetail(BaseModel):
    """One problem with a request field (``loc`` is the path to it)."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    """Every error: a machine-readable type, a message, and field details when relevant."""

    error: str = Field(description="not_found, invalid_input, validation_error, ...")
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)
