"""What flows between the extraction stages: turns, documents, windows and drafts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from memtrellis.attachments import Attachment
from memtrellis.tool_calls import ToolUse
from memtrellis.types import MemoryItem, SourceKind, SourceRef

__all__ = [
    "Document",
    "ExtractionResult",
    "LLMRequest",
    "Language",
    "Mode",
    "Normalized",
    "Turn",
    "Window",
]


class Mode(str, Enum):
    """``fine`` asks an LLM to distil memories; ``fast`` stores each message as it is.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory, Mode
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     [item] = memory.add("Ana moved to Porto", mode=Mode.FAST)
        >>> "mode:fast" in item.tags
        True
    """

    FINE = "fine"
    FAST = "fast"


class Language(str, Enum):
    """Prompt language; both ship.

    Examples:
        >>> [language.value for language in Language]
        ['en', 'zh']
    """

    EN = "en"
    ZH = "zh"


@dataclass(frozen=True)
class Turn:
    """One chat message after normalisation (always has an id and an aware timestamp).

    Examples:
        >>> from datetime import datetime, timezone
        >>> when = datetime(2025, 9, 14, tzinfo=timezone.utc)
        >>> turn = Turn(0, 0, "user", "I moved to Porto.", "m1", when)
        >>> source = turn.source()
        >>> source.message_id, source.role, source.content
        ('m1', 'user', 'I moved to Porto.')
    """

    conversation: int  # which conversation of the input it belongs to
    index: int  # its position in that conversation
    role: str  # user | assistant | system | tool
    content: str
    message_id: str
    timestamp: datetime
    speaker: str | None = None
    #: The caller gave the time (else it is the time of the call, and says nothing of
    #: how close two messages were: such messages never form a burst).
    timed: bool = True
    #: Images, files and audio the message carried; its text names each of them.
    attachments: tuple[Attachment, ...] = ()
    #: The tool calls an assistant message made (its text holds a line for each).
    tool_calls: tuple[ToolUse, ...] = ()
    #: A tool turn's call: the call it answers, as far as the conversation tells.
    tool: ToolUse | None = None
    #: Shown for provenance only: a message an earlier capture stored (the question and
    #: tool calls before a tool's result), never a memory of its own.
    context: bool = False

    def source(self, content: str | None = None) -> SourceRef:
        """This turn as provenance (``content`` overrides the excerpt for split turns):
        a chat message, or for a tool's output a ``tool_result`` with the call it answers."""
        is_result = self.role == "tool"
        return SourceRef(
            kind=SourceKind.TOOL_RESULT if is_result else SourceKind.CHAT,
            message_id=self.message_id,
            role=self.role,
            speaker=None if is_result else self.speaker,  # a tool's name is its ToolUse's
            content=self.content if content is None else content,
            timestamp=self.timestamp,
            index=self.index,
            attachments=self.attachments,
            tool=(self.tool or ToolUse(name=self.speaker or "tool")) if is_result else None,
        )

    def call_sources(self) -> list[SourceRef]:
        """One ``tool_call`` source per call this message made.

        Examples:
            >>> from datetime import datetime, timezone
            >>> call = ToolUse(name="get_weather", call_id="c1", arguments='{"city": "Porto"}')
            >>> turn = Turn(0, 1, "assistant", "[tool call] get_weather(...)", "m2",
            ...             datetime(2026, 3, 1, tzinfo=timezone.utc), tool_calls=(call,))
            >>> [(s.kind.value, s.content, s.tool.call_id) for s in turn.call_sources()]
            [('tool_call', 'get_weather({"city": "Porto"})', 'c1')]
        """
        return [
            SourceRef(
                kind=SourceKind.TOOL_CALL,
                message_id=self.message_id,
                role=self.role,
                content=call.text(),
                timestamp=self.timestamp,
                index=self.index,
                tool=call,
            )
            for call in self.tool_calls
        ]


@dataclass(frozen=True)
class Document:
    """A document's text, read from a path (``kind`` DOC) or given as plain text (TEXT).

    Examples:
        >>> from datetime import datetime, timezone
        >>> when = datetime(2025, 9, 14, tzinfo=timezone.utc)
        >>> doc = Document("notes.md", "Ana moved to Porto.", when)
        >>> doc.source("Ana moved to Porto.", 0).kind.value
        'doc'
    """

    doc_id: str  # the path as given, or a generated id
    text: str
    timestamp: datetime
    kind: SourceKind = SourceKind.DOC

    def source(self, content: str, index: int) -> SourceRef:
        """Chunk ``index`` of this document as provenance."""
        return SourceRef(
            kind=self.kind,
            message_id=f"{self.doc_id}#{index}",
            content=content,
            timestamp=self.timestamp,
            index=index,
            document=self.doc_id if self.kind is SourceKind.DOC else None,
        )


@dataclass(frozen=True)
class Normalized:
    """The reader's input after normalisation.

    Examples:
        >>> Normalized().conversations, Normalized().skipped
        ([], 0)
    """

    conversations: list[list[Turn]] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    skipped: int = 0  # messages dropped (unknown role, no text), each logged
    extract_tools: bool = False  # whether tool turns should produce memories (see extractable)


@dataclass(frozen=True)
class Window:
    """A slice of input small enough for one extraction call.

    ``sources`` are exactly the messages (or document chunks) whose text is in ``text``,
    in order; a message split across windows appears in each, with its own excerpt.

    Examples:
        >>> from memtrellis import SourceKind, SourceRef
        >>> source = SourceRef(kind="text", content="Ana moved to Porto.")
        >>> window = Window("Ana moved to Porto.", (source,), SourceKind.TEXT, tokens=5)
        >>> window.language.value
        'en'
    """

    text: str
    sources: tuple[SourceRef, ...]
    kind: SourceKind
    tokens: int
    language: Language = Language.EN


@dataclass
class ExtractionResult:
    """What one extraction produced.

    Examples:
        >>> from memtrellis import Mode
        >>> ExtractionResult(items=[], mode=Mode.FAST).errors
        []
    """

    items: list[MemoryItem]
    mode: Mode
    skipped: int = 0
    windows: int = 0
    fallbacks: int = 0
    llm_failures: int = 0
    errors: list[str] = field(default_factory=list)
    #: Skill memories made from tool trajectories, and trajectories whose skill reply
    #: could not be used (each counted as ``garbage`` in ``Memory.health()``).
    skills: int = 0
    skills_skipped: int = 0


@dataclass(frozen=True)
class LLMRequest:
    """One LLM call a fine-mode step needs."""

    messages: list[dict[str, str]]
    schema: Mapping[str, Any] | None
    purpose: str
