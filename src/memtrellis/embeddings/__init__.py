"""Embedders: the [`Embedder`][memtrellis.embeddings.Embedder] protocol, adapters, and the offline
default model.

Examples:
    >>> from memtrellis.embeddings import default_embedder
    >>> embedder = default_embedder()
    >>> embedder.model_id, embedder.dimension
    ('all-MiniLM-L6-v2-onnx-int8', 384)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memtrellis._offline import prepare_offline_env

prepare_offline_env()  # before anything can import onnxruntime

from memtrellis.embeddings.base import Embedder, as_embedder  # noqa: E402
from memtrellis.embeddings.e5 import E5Embedder, e5_embedder  # noqa: E402
from memtrellis.embeddings.minilm import MiniLMEmbedder, default_embedder  # noqa: E402
from memtrellis.embeddings.multilingual import (  # noqa: E402
    MultilingualEmbedder,
    multilingual_embedder,
)

if TYPE_CHECKING:
    from memtrellis.embeddings.chroma import MiniLMEmbeddingFunction

__all__ = [
    "E5Embedder",
    "Embedder",
    "MiniLMEmbedder",
    "MiniLMEmbeddingFunction",
    "MultilingualEmbedder",
    "as_embedder",
    "default_embedder",
    "e5_embedder",
    "multilingual_embedder",
]


def __getattr__(name: str) -> Any:
    # Lazy: the Chroma wrapper imports chromadb, which takes about half a second.
    if name == "MiniLMEmbeddingFunction":
        from memtrellis.embeddings.chroma import MiniLMEmbeddingFunction

        return MiniLMEmbeddingFunction
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
