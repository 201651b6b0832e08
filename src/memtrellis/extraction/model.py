"""What flows between the extraction stages: turns, documents, windows and drafts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from memtrellis.attachments import Attachment
from memtrellis.types import SourceKind, SourceRef

__all__ = ["Document", "Language", "Mode", "Normalized", "Turn", "Window"]


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

    def source(self, content: str | None = None) -> SourceRef:
        """This turn as provenance (``content`` overrides the excerpt for split turns)."""
        return SourceRef(
            kind=SourceKind.CHAT,
            message_id=self.message_id,
            role=self.role,
            speaker=self.speaker,
            content=self.content if content is None else content,
            timestamp=self.timestamp,
            index=self.index,
            attachments=self.attachments,
        )


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
