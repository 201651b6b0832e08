"""The extraction core: from captured turns and documents to memories with provenance.

Stages, each its own module: :mod:`~memtrellis.extraction.normalize` (input shapes →
turns and documents), :mod:`~memtrellis.extraction.language`,
:mod:`~memtrellis.extraction.windows` (scenes and token windows with aligned sources),
:mod:`~memtrellis.extraction.fine` (LLM replies → items, with fallback),
:mod:`~memtrellis.extraction.fast` (no LLM), :mod:`~memtrellis.extraction.quality`
(rewrite and judge) and :mod:`~memtrellis.extraction.pipeline` (the reader entry point).
"""

from memtrellis.extraction.fine import FALLBACK_TAG
from memtrellis.extraction.model import Document, Language, Mode, Normalized, Turn, Window
from memtrellis.extraction.pipeline import ExtractionConfig, ExtractionResult, Extractor

__all__ = [
    "FALLBACK_TAG",
    "Document",
    "ExtractionConfig",
    "ExtractionResult",
    "Extractor",
    "Language",
    "Mode",
    "Normalized",
    "Turn",
    "Window",
]
