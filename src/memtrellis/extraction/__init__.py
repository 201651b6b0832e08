"""The extraction core: from captured turns and documents to memories with provenance.

Stages, each its own module: `normalize` (input shapes →
turns and documents), `language`,
`windows` (scenes and token windows with aligned sources),
`fine` (LLM replies → items, with fallback),
`fast` (no LLM), `quality`
(rewrite and judge) and `pipeline` (the reader entry point).
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
