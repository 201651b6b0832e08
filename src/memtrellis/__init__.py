"""memtrellis: long-term memory for any chat model, offline by default.

Examples:
    >>> import tempfile
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
    ...     _ = memory.add("The deploy freeze starts on Friday")
    ...     [r.memory.text for r in memory.recall("when does the freeze start?").items]
    ['The deploy freeze starts on Friday']
"""

from memtrellis._offline import prepare_offline_env

prepare_offline_env()

from memtrellis import _memory_process  # noqa: E402, F401  (Memory(engine_process=True))
from memtrellis.attachments import Attachment  # noqa: E402
from memtrellis.capture.config import CaptureConfig  # noqa: E402
from memtrellis.errors import (  # noqa: E402
    EmbedderUnavailableError,
    EmbeddingMismatchError,
    EngineProcessError,
    InvalidInputError,
    MemoryNotFoundError,
    MemtrellisError,
    StoreClosedError,
    StoreCorruptError,
    StoreLockedError,
    TokenizerUnavailableError,
    UnknownIntegrationError,
    UnsupportedClientError,
    VectorIndexUnavailableError,
)
from memtrellis.extraction import ExtractionConfig, Mode  # noqa: E402
from memtrellis.llm import LLM  # noqa: E402
from memtrellis.memory import Memory  # noqa: E402
from memtrellis.repair import repair_store  # noqa: E402
from memtrellis.tool_calls import ToolUse  # noqa: E402
from memtrellis.types import (  # noqa: E402
    EdgeKind,
    Health,
    HistoryEvent,
    MemoryItem,
    MemoryType,
    RecalledMemory,
    RecallExplanation,
    RecallResult,
    Scope,
    SourceKind,
    SourceRef,
)

__version__ = "0.1.0"

__all__ = [
    "LLM",
    "Attachment",
    "CaptureConfig",
    "EdgeKind",
    "EmbedderUnavailableError",
    "EmbeddingMismatchError",
    "EngineProcessError",
    "ExtractionConfig",
    "Health",
    "HistoryEvent",
    "InvalidInputError",
    "Memory",
    "MemoryItem",
    "MemoryNotFoundError",
    "MemoryType",
    "MemtrellisError",
    "Mode",
    "RecallExplanation",
    "RecallResult",
    "RecalledMemory",
    "Scope",
    "SourceKind",
    "SourceRef",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreLockedError",
    "TokenizerUnavailableError",
    "ToolUse",
    "UnknownIntegrationError",
    "UnsupportedClientError",
    "VectorIndexUnavailableError",
    "__version__",
    "repair_store",
]
