"""The core data model: memories, where they came from, whose they are, and recall results.
`Health`, the figures of a store, is defined in `memtrellis.health` and re-exported here.

Every object here is a pydantic model that validates on construction, so a bad value is
rejected where it enters rather than where it is used.

Examples:
    >>> from memtrellis.types import MemoryItem, Scope
    >>> item = MemoryItem(text="Alice prefers tea", scope=Scope(entity_id="alice"))
    >>> item.memory_type.value, 0.0 <= item.confidence <= 1.0
    ('fact', True)
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic_core import to_json

from memtrellis._model import Model
from memtrellis.attachments import Attachment
from memtrellis.health import Health
from memtrellis.tool_calls import ToolUse

__all__ = [
    "EdgeKind",
    "Health",
    "HistoryEvent",
    "MemoryItem",
    "MemoryType",
    "PathStep",
    "RecallExplanation",
    "RecallResult",
    "RecalledMemory",
    "RelationPath",
    "Scope",
    "SkippedMemory",
    "SourceKind",
    "SourceRef",
    "one_voice",
    "utcnow",
    "voice_sources",
]

#: Longest excerpt of a source message kept on a memory; the full text lives in the memory.
SOURCE_EXCERPT_CHARS = 2000
_MAX_SCOPE_ID = 256


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (the only kind of time memtrellis stores).

    Examples:
        >>> utcnow().tzinfo
        datetime.timezone.utc
    """
    return datetime.now(timezone.utc)


def _clean_text(value: str) -> str:
    # Lone surrogates cannot be written as UTF-8 (the index and the log would refuse them)
    # and NUL truncates text in C-backed consumers; neither carries meaning.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value.replace("\x00", "")


def _aware(value: datetime | None) -> datetime | None:
    # Naive datetimes are taken as UTC so that comparisons never mix naive and aware.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


class MemoryType(str, Enum):
    """What kind of thing a memory records; drives validity defaults and rendering.

    Examples:
        >>> MemoryType("preference") is MemoryType.PREFERENCE
        True
    """

    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    DECISION = "decision"
    STATE = "state"
    PREDICTION = "prediction"
    SKILL = "skill"
    EPISODE = "episode"
    ACTION_ITEM = "action_item"


class EdgeKind(str, Enum):
    """Typed edges of the memory graph.

    Examples:
        >>> [kind.value for kind in EdgeKind][:3]
        ['mentions', 'supports', 'contradicts']
    """

    MENTIONS = "mentions"  # memory -> entity
    SUPPORTS = "supports"  # memory -> memory: adds evidence
    CONTRADICTS = "contradicts"  # memory -> memory: cannot both hold
    EXTENDS = "extends"  # memory -> memory: refines without contradicting
    SUPERSEDES = "supersedes"  # newer memory -> the older one it replaces
    FOLLOWS = "follows"  # a message's memory -> the previous message's, same conversation


class SourceKind(str, Enum):
    """Where a memory's evidence came from.

    ``tool_call`` and ``tool_result`` sources are the tools a turn used: a call the
    assistant made (name, id, arguments in `SourceRef.tool`) and a tool's output (its
    excerpt, and the call it answers). They stand beside the chat messages a memory
    rests on, never for what someone said (see `voice_sources`).

    Examples:
        >>> SourceKind.DOC.value, SourceKind.TOOL_RESULT.value
        ('doc', 'tool_result')
    """

    CHAT = "chat"
    DOC = "doc"
    TEXT = "text"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


#: The kinds of source that record a tool's use rather than what someone said.
TOOL_KINDS = frozenset({SourceKind.TOOL_CALL, SourceKind.TOOL_RESULT})


class Scope(Model):
    """Whose memory this is (``entity_id``), which app or agent (``process_id``), which session.

    Examples:
        >>> Scope(entity_id="user-42", process_id="support-bot").session_id is None
        True
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entity_id: str
    process_id: str | None = None
    session_id: str | None = None

    @field_validator("entity_id", "process_id", "session_id")
    @classmethod
    def _check_id(cls, value: str | None, info: Any) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError(f"{info.field_name} must not be empty")
        if len(value) > _MAX_SCOPE_ID:
            raise ValueError(f"{info.field_name} is longer than {_MAX_SCOPE_ID} characters")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise ValueError(f"{info.field_name} must not contain control characters")
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            raise ValueError(f"{info.field_name} must not contain lone surrogates")
        return value


class SourceRef(Model):
    """One piece of evidence behind a memory: a chat message, a document chunk or plain text.

    Immutable: provenance records what happened and is shared between copies of a memory.

    Examples:
        >>> SourceRef(kind="chat", message_id="D1:3", role="user", content="I moved").role
        'user'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SourceKind = SourceKind.TEXT
    message_id: str | None = None
    role: str | None = None
    speaker: str | None = None
    content: str = ""
    timestamp: datetime | None = None
    index: int | None = Field(default=None, ge=0)
    document: str | None = None
    #: Images, files and audio the message carried (`memtrellis.attachments`).
    attachments: tuple[Attachment, ...] = ()
    #: A ``tool_call`` source's call, or the call a ``tool_result`` answers
    #: (`memtrellis.tool_calls`).
    tool: ToolUse | None = None

    @field_validator("content")
    @classmethod
    def _excerpt(cls, value: str) -> str:
        return _clean_text(value[:SOURCE_EXCERPT_CHARS])

    @field_validator("message_id", "role", "speaker", "document")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        # Every string is written to the index and the log as UTF-8, not only the text.
        return _clean_text(value) if value is not None else None

    @field_validator("timestamp")
    @classmethod
    def _tz(cls, value: datetime | None) -> datetime | None:
        return _aware(value)


def voice_sources(sources: Sequence[SourceRef]) -> list[SourceRef]:
    """The sources that are what was said: all but those recording a tool's use
    (``tool_call``, ``tool_result``), or the tool sources themselves when a memory rests
    on nothing else (a tool's output kept as a memory).

    Examples:
        >>> said = SourceRef(kind="chat", role="assistant", content="It is 18 °C.")
        >>> tool = SourceRef(kind="tool_result", role="tool", content="18 °C")
        >>> voice_sources([said, tool]) == [said], voice_sources([tool]) == [tool]
        (True, True)
    """
    said = [s for s in sources if s.kind not in TOOL_KINDS]
    return said or list(sources)


def one_voice(sources: Sequence[SourceRef], text: str) -> SourceRef | None:
    """The first source when ``sources`` are one chat message, or several messages of
    one role and speaker whose contents joined are ``text`` (a fast-mode burst), else
    ``None``. The tools an answer rests on (`voice_sources`) are not counted.

    Examples:
        >>> a = SourceRef(kind="chat", message_id="m1", role="user", speaker="Ana", content="omg")
        >>> b = SourceRef(kind="chat", message_id="m2", role="user", speaker="Ana", content="yes")
        >>> one_voice([a, b], "omg\\nyes") is a, one_voice([a, b], "Ana is happy")
        (True, None)
    """
    said = voice_sources(sources)
    if not said or said[0].kind is SourceKind.DOC or said[0].kind is SourceKind.TEXT:
        return None
    first = said[0]
    if len(said) == 1:
        return first
    for source in said:
        if (
            source.kind is not first.kind
            or source.role != first.role
            or source.speaker != first.speaker
        ):
            return None
    joined = " ".join(" ".join(s.content for s in said).split())
    return first if joined == " ".join(text.split()) else None


class HistoryEvent(Model):
    """One step in a memory's life: created, updated, superseded, recalled in bulk is not kept.

    Examples:
        >>> from datetime import datetime, timezone
        >>> event = HistoryEvent(at=datetime(2025, 9, 14, tzinfo=timezone.utc), action="superseded")
        >>> event.action, event.detail
        ('superseded', {})
    """

    at: datetime
    action: str
    detail: dict[str, Any] = Field(default_factory=dict)


class MemoryItem(Model):
    """One structured memory with its provenance.

    Validation rejects empty text, a confidence outside [0, 1] and a ``valid_until``
    earlier than ``valid_from``.

    Examples:
        >>> MemoryItem(text="  ", scope=Scope(entity_id="a"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for MemoryItem
        ...
    """

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    text: str
    key: str | None = None
    memory_type: MemoryType = MemoryType.FACT
    tags: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    sources: list[SourceRef] = Field(default_factory=list)
    scope: Scope
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    recall_count: int = Field(default=0, ge=0)
    last_recalled_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not value or len(value) > 128 or not value.isprintable() or value.strip() != value:
            raise ValueError("id must be 1-128 printable characters without surrounding spaces")
        return value

    @field_validator("text")
    @classmethod
    def _check_text(cls, value: str) -> str:
        value = _clean_text(value)
        if not value.strip():
            raise ValueError("text must not be empty")
        return value

    @field_validator("key", "superseded_by")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        return _clean_text(value) if value is not None else None

    @field_validator("metadata")
    @classmethod
    def _check_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        # The index stores the item as JSON: metadata that cannot be written as UTF-8
        # JSON would be accepted into the graph and then fail every index write.
        try:
            to_json(value)  # what model_dump_json runs, depth limit included
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"metadata must be JSON with valid unicode text: {exc}") from None
        return value

    @field_validator("tags", "entities")
    @classmethod
    def _dedupe(cls, values: list[str]) -> list[str]:
        seen: dict[str, None] = {}
        for value in values:
            value = _clean_text(value).strip()
            if value:
                seen.setdefault(value, None)
        return list(seen)

    @field_validator("created_at", "updated_at", "valid_from", "valid_until", "last_recalled_at")
    @classmethod
    def _tz(cls, value: datetime | None) -> datetime | None:
        return _aware(value)

    @model_validator(mode="after")
    def _check_window(self) -> MemoryItem:
        if (
            self.valid_from is not None
            and self.valid_until is not None
            and self.valid_until < self.valid_from
        ):
            raise ValueError(
                f"valid_until ({self.valid_until.isoformat()}) is before "
                f"valid_from ({self.valid_from.isoformat()})"
            )
        return self

    def detached(self) -> MemoryItem:
        """A copy that shares nothing mutable with this item (sources are immutable).

        Much cheaper than ``model_copy(deep=True)``, which recall would pay per result.
        """
        return self.model_copy(
            update={
                "tags": list(self.tags),
                "entities": list(self.entities),
                "sources": list(self.sources),
                "metadata": copy.deepcopy(self.metadata) if self.metadata else {},
            }
        )

    def search_text(self) -> str:
        """The text this memory is embedded and keyword-indexed by.

        A memory that is one chat message (or a burst of one speaker's messages) is
        searched with its speaker in front ("Caroline: I went to a support group"):
        questions name people, messages rarely name their own speaker. On LoCoMo this
        lifted BM25 recall@10 by 2.5 points and dense by 5.
        """
        voice = one_voice(self.sources, self.text)
        if voice is not None and voice.speaker:
            return f"{voice.speaker}: {self.text}"
        return self.text

    def invalid_reason(
        self,
        when: datetime,
        *,
        include_expired: bool = False,
        include_superseded: bool = False,
    ) -> Literal["not yet valid", "superseded", "expired"] | None:
        """Why the memory is not valid at ``when``, or ``None`` when it is: the one rule
        that recall and `is_valid_at` share.

        A memory is valid from its ``valid_from`` (lacking one, from when it was stored)
        until its ``valid_until`` (excluded). A superseded memory with no end date
        (replaced by a refined memory) is out of date at any time; one superseded with an
        end date stays valid before it (time travel with ``as_of``).
        ``include_expired`` accepts memories outside their window (not yet valid or
        expired), ``include_superseded`` superseded ones.

        Examples:
            >>> from datetime import datetime, timezone
            >>> item = MemoryItem(text="Ana lives in Lyon", scope=Scope(entity_id="ana"),
            ...                   created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
            ...                   valid_until=datetime(2026, 3, 1, tzinfo=timezone.utc))
            >>> item.invalid_reason(datetime(2025, 12, 1, tzinfo=timezone.utc))
            'not yet valid'
            >>> item.invalid_reason(datetime(2026, 3, 1, tzinfo=timezone.utc))
            'expired'
            >>> print(item.invalid_reason(datetime(2026, 2, 1, tzinfo=timezone.utc)))
            None
        """
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        until = self.valid_until
        if until is None and self.superseded_by is None:
            # Open-ended and current, as most memories are (recall asks hundreds a query).
            if include_expired or (self.valid_from or self.created_at) <= when:
                return None
            return "not yet valid"
        ended = until is not None and until <= when
        replaced = self.superseded_by is not None and (until is None or ended)
        if include_expired:
            return "superseded" if replaced and not include_superseded else None
        if (self.valid_from or self.created_at) > when:
            return "not yet valid"
        if replaced and not include_superseded:
            return "superseded"
        if ended and self.superseded_by is None:
            return "expired"
        return None

    def is_valid_at(self, when: datetime) -> bool:
        """Whether the memory is valid at ``when``: what recall shows at ``as_of=when``
        (see `invalid_reason`).

        Examples:
            >>> from datetime import datetime, timezone
            >>> item = MemoryItem(text="Ana lives in Lyon", scope=Scope(entity_id="ana"),
            ...                   valid_from=datetime(2026, 1, 1, tzinfo=timezone.utc))
            >>> item.is_valid_at(datetime(2026, 2, 1, tzinfo=timezone.utc))
            True
            >>> item.model_copy(update={"superseded_by": "m2"}).is_valid_at(
            ...     datetime(2026, 2, 1, tzinfo=timezone.utc))
            False
        """
        return self.invalid_reason(when) is None


class PathStep(Model):
    """One node of a path: a memory (with its sources) or a subject the memories mention.

    ``edge`` is the kind of the edge to the next step (``None`` on the last step), and
    ``forward`` whether that edge points from this step to the next (``supersedes`` points
    from the newer memory to the one it replaced; ``mentions`` from a memory to a subject).

    Examples:
        >>> PathStep(kind="subject", id="Kyoto", text="Kyoto").edge is None
        True
    """

    kind: Literal["memory", "subject"]
    id: str = Field(description="the memory id, or the subject's name")
    text: str = Field(description="the memory's text, or the subject's name")
    memory: MemoryItem | None = Field(default=None, description="the memory, with sources")
    edge: str | None = None
    forward: bool | None = None


class RelationPath(Model):
    """A path from ``a`` to ``b`` and the confidence it rests on.

    Examples:
        >>> RelationPath(confidence=0.9, steps=[
        ...     PathStep(kind="subject", id="Kyoto", text="Kyoto", edge="mentions",
        ...              forward=False),
        ...     PathStep(kind="memory", id="m1", text="Kenji lives in Kyoto.")]).describe()
        'Kyoto -mentions- [Kenji lives in Kyoto.]'
    """

    steps: list[PathStep]
    confidence: float = Field(ge=0.0, le=1.0)

    @property
    def memories(self) -> list[MemoryItem]:
        """The memories the path passes through, in order."""
        return [s.memory for s in self.steps if s.memory is not None]

    def describe(self) -> str:
        """One line: ``Hana -mentions- [Hana moved to Kyoto.] -mentions- Kyoto``."""
        parts: list[str] = []
        for step in self.steps:
            parts.append(f"[{step.text}]" if step.kind == "memory" else step.text)
            if step.edge is not None:
                parts.append(f"-{step.edge}-")
        return " ".join(parts)


class RecallExplanation(Model):
    """Why a memory was recalled, score by score.

    ``dense_score`` is the cosine similarity from the vector index, ``keyword_score`` the
    BM25 score, ``fused_score`` the two combined, ``graph_path`` the strongest graph hop
    that added to it (``[seed id, "follows", this id]`` from a neighbouring message, or
    ``[seed id, "subject:<entity_id>:<name>", this id]`` for a memory reached through a
    shared subject), ``relevance`` the fused score plus what the graph lent.

    ``final_score = relevance * confidence * heat``: ``confidence`` is the effective
    confidence (stored confidence plus a capped bonus for ``supports`` edges and merged
    duplicates, times ``decay``, the time decay since the latest evidence), ``heat`` a
    small capped prior for memories recalled before. ``replaces`` lists memories this one
    superseded that matched the query too (they were left out as out of date). ``boosts``
    says why the relevance was raised by a cue of the query: ``speaker Caroline`` (a
    source's speaker is named in it) or ``time last summer (2023-06-01..2023-08-31)`` (a
    source's time is in the span it names); see `memtrellis.recall.cues`.
    ``rerank_score`` is the second stage's score when a reranker reordered this memory
    (the results are then in the reranker's order, not by ``final_score``).
    ``path`` is the whole graph path that reached this memory, when a hop did: from a
    subject the question names (``Kyoto -mentions- [Kenji lives in Kyoto.]``), from a seed
    along ``supports``/``extends`` edges or a shared subject, step by step as
    `Memory.relate` gives them (memory steps carry the id and text, not the memory).

    Examples:
        >>> why = RecallExplanation(dense_score=0.66, keyword_score=0.94, final_score=0.40)
        >>> why.graph_path, why.replaces, why.final_score
        ([], [], 0.4)
    """

    dense_score: float | None = None
    dense_rank: int | None = None
    keyword_score: float | None = None
    keyword_rank: int | None = None
    graph_path: list[str] = Field(default_factory=list)
    fused_score: float = 0.0
    relevance: float = 0.0
    confidence: float | None = None
    decay: float | None = None
    supports: int = 0
    heat: float = 1.0
    replaces: list[str] = Field(default_factory=list)
    final_score: float = 0.0
    boosts: list[str] = Field(default_factory=list)
    rerank_score: float | None = None
    path: RelationPath | None = None


class SkippedMemory(Model):
    """A memory that matched a recall but was left out, and why.

    Examples:
        >>> skipped = SkippedMemory(id="m1", reason="superseded", superseded_by="m2")
        >>> skipped.reason, skipped.superseded_by
        ('superseded', 'm2')
    """

    id: str
    reason: str  # "superseded", "expired" or "not yet valid"
    superseded_by: str | None = None


class RecalledMemory(Model):
    """A memory as recall returned it, with its score and explanation.

    Examples:
        >>> item = MemoryItem(text="Ana moved to Porto", scope=Scope(entity_id="ana"))
        >>> hit = RecalledMemory(memory=item, score=0.4, explanation=RecallExplanation())
        >>> hit.memory.text, hit.score
        ('Ana moved to Porto', 0.4)
    """

    memory: MemoryItem
    score: float
    explanation: RecallExplanation


class RecallResult(Model):
    """The answer to [`memtrellis.Memory.recall`][memtrellis.Memory.recall].

    Examples:
        >>> RecallResult(query="tea", scope=Scope(entity_id="a")).items
        []
    """

    query: str
    scope: Scope
    items: list[RecalledMemory] = Field(default_factory=list)
    tokens: int = 0
    token_budget: int | None = None
    truncated: bool = False
    latency_ms: float = 0.0
    skipped: list[SkippedMemory] = Field(default_factory=list)
    as_of: datetime | None = None

    @property
    def memories(self) -> list[MemoryItem]:
        """The recalled memories alone, best first."""
        return [entry.memory for entry in self.items]
