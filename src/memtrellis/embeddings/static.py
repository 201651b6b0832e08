"""A static (Model2Vec-style) embedder: a token-vector lookup and a mean, no transformer.

The model (a 276k-token unigram vocabulary mapped onto 10,000 int8 vectors of 64
dimensions, with a weight per token) and its Rust encoder come inside the
``tokenlearn-static-model`` wheel (install the ``embed-static`` extra); the model files
are checked against pinned sha256 sums before first use. Embedding a query takes tens of
microseconds instead of milliseconds, at a clear cost in retrieval quality
(``docs/benchmarks.md``, "Embedders and reranking").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from memtrellis.embeddings._adapters import check_texts
from memtrellis.embeddings.pinned import PinnedModel, package_file, read_pinned
from memtrellis.errors import EmbedderUnavailableError, EmbeddingMismatchError, InvalidInputError

__all__ = ["STATIC_MODEL_ID", "StaticEmbedder"]

#: The id written to store manifests.
STATIC_MODEL_ID = "tokenlearn-static-10k-64d-int8"
DIMENSION = 64
_PACKAGE = "tokenlearn-static-model==0.1.1"
#: sha256 of the model files in tokenlearn-static-model 0.1.1.
_PINNED = {
    "config.json": "0f7c77530027b922ce4a44f5ac92cb75984e916813deef520cff1f5b39eef47d",
    "model.safetensors": "6be5d2830b76c27312e7870df0f7d3c55803fbc6817dfaee0783de319d457c6c",
    "tokenizer.json": "50ae6ca68a1b0491bf13b123fdf74aad127fd7b8cf9af56ca763b9df20f29bc5",
}


class _Encoder(NamedTuple):
    """The model's directory and the Rust encoder that reads it."""

    model_dir: str
    encode: Callable[[str, list[str], int], Any]


class StaticEmbedder(PinnedModel[_Encoder]):
    """tokenlearn's static 10k/64d/int8 model: 64-dim unit vectors, offline, very fast.

    Select it with ``Memory(path, embedder="static")``; a store keeps the embedder it was
    built with.

    Args:
        max_length: Tokens kept per text.

    Raises:
        InvalidInputError: A bad ``max_length``.

    Examples:
        >>> from memtrellis.embeddings.static import StaticEmbedder
        >>> embedder = StaticEmbedder()
        >>> embedder.model_id, embedder.dimension
        ('tokenlearn-static-10k-64d-int8', 64)
        >>> len(embedder.embed_query("Where did Ines move to?"))
        64
    """

    MODEL_ID = STATIC_MODEL_ID
    DIMENSION = DIMENSION

    def __init__(self, *, max_length: int = 512) -> None:
        super().__init__()
        if not 0 < max_length <= 8192:
            raise InvalidInputError(f"max_length must be in 1..8192, got {max_length}")
        self.max_length = max_length

    def _load(self) -> _Encoder:
        model_dir = _packaged_model_dir()
        for name, digest in _PINNED.items():
            read_pinned(model_dir / name, digest, STATIC_MODEL_ID, _PACKAGE)
        try:
            from static_model._static_model import (  # type: ignore[import-untyped]
                encode_batch,
            )
        except ImportError as exc:  # pragma: no cover - a broken install
            raise EmbedderUnavailableError(
                f"the tokenlearn encoder does not load: {exc}; reinstall `{_PACKAGE}`"
            ) from exc
        return _Encoder(str(model_dir), encode_batch)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to store; each vector is a ``list[float]`` of length 64."""
        batch = check_texts(texts)
        if not batch:
            return []
        model_dir, encode = self._model()
        vectors = [[float(x) for x in v] for v in encode(model_dir, batch, self.max_length)]
        if len(vectors) != len(batch) or any(len(v) != DIMENSION for v in vectors):
            raise EmbeddingMismatchError(f"{STATIC_MODEL_ID} returned vectors of the wrong shape")
        return vectors


def _packaged_model_dir() -> Path:
    return package_file(
        "static_model",
        ["model"],
        missing="the static embedding model is missing; install `memtrellis[embed-static]` "
        f"({_PACKAGE})",
        incomplete=f"static_model is installed without its model/; reinstall `{_PACKAGE}`",
        folder=True,
    )
