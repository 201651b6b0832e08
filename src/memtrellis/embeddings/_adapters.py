"""Duck-typed adapters behind
[`memtrellis.embeddings.as_embedder`][memtrellis.embeddings.as_embedder].

Nothing here imports a framework: LangChain, LlamaIndex and Chroma objects are recognised
by the methods they have.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from memtrellis.errors import EmbeddingMismatchError, InvalidInputError

_MODEL_ATTRS = ("model_name", "model", "model_id")
_DIMENSION_ATTRS = ("dimension", "dimensions", "embed_dim", "embedding_dimension")
_PROBE_TEXT = "dimension probe"

ACCEPTED = (
    "an embedder name (memtrellis.embeddings.catalog.EMBEDDERS), an Embedder (model_id, "
    "dimension, embed_documents, embed_query), a LangChain "
    "Embeddings (embed_documents, embed_query), a LlamaIndex BaseEmbedding "
    "(get_text_embedding_batch, get_query_embedding) or a Chroma embedding function "
    "(callable on a list of texts)"
)


class AdaptedEmbedder:
    """An [`Embedder`][memtrellis.embeddings.Embedder] over two callables: many texts -> vectors,
    one text -> vector.

    When the dimension is not given, reading `dimension` before any vector was seen
    embeds a probe text. Note that ``isinstance(x, Embedder)`` reads it on Python < 3.12.

    Examples:
        >>> e = AdaptedEmbedder("demo", lambda ts: [[1.0, 0.0] for _ in ts], lambda t: [0.0, 1.0])
        >>> e.embed_documents(["a"]), e.dimension
        ([[1.0, 0.0]], 2)
    """

    def __init__(
        self,
        model_id: str,
        embed_many: Callable[[list[str]], Any],
        embed_one: Callable[[str], Any],
        dimension: int | None = None,
    ) -> None:
        self._model_id = model_id
        self._embed_many = embed_many
        self._embed_one = embed_one
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The id given or derived from the wrapped object."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The vector length; embeds a short probe text once if not yet known."""
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = len(_to_floats(self._embed_one(_PROBE_TEXT)))
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; an empty sequence returns ``[]`` without calling the model."""
        batch = check_texts(texts)
        if not batch:
            return []
        vectors = [_to_floats(v) for v in self._embed_many(batch)]
        if len(vectors) != len(batch):
            raise EmbeddingMismatchError(
                f"{self._model_id} returned {len(vectors)} vectors for {len(batch)} texts"
            )
        for vector in vectors:
            self._check_length(vector)
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed one search text."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        return self._check_length(_to_floats(self._embed_one(text)))

    def _check_length(self, vector: list[float]) -> list[float]:
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = len(vector)
        if len(vector) != self._dimension:
            raise EmbeddingMismatchError(
                f"{self._model_id} returned a vector of length {len(vector)}, "
                f"expected {self._dimension}"
            )
        return vector

    def __repr__(self) -> str:
        return f"AdaptedEmbedder(model_id={self._model_id!r})"


def adapt(obj: object, *, model_id: str | None, dimension: int | None) -> Any:
    """See [`memtrellis.embeddings.as_embedder`][memtrellis.embeddings.as_embedder] (an
    ``Embedder``; typed ``Any`` so that this module needs nothing of ``base``)."""
    if isinstance(obj, str):
        from memtrellis.embeddings.catalog import EMBEDDERS, named_embedder

        if obj not in EMBEDDERS:
            known = ", ".join(repr(n) for n in EMBEDDERS)
            raise InvalidInputError(
                f"unknown embedder name {obj!r}; known: {known}; or pass {ACCEPTED}"
            )
        obj = named_embedder(obj)
    if isinstance(obj, type):
        raise InvalidInputError(
            f"as_embedder got the class {obj.__name__}, pass an instance of it; "
            f"accepted: {ACCEPTED}"
        )
    hook = getattr(obj, "__memtrellis_embedder__", None)
    if callable(hook):
        obj = hook()
    if _is_embedder(obj):
        if model_id is None and dimension is None:
            return obj
        native: Any = obj
        return AdaptedEmbedder(
            model_id or native.model_id,
            native.embed_documents,
            native.embed_query,
            dimension if dimension is not None else native.dimension,
        )
    mid = model_id or _derive_model_id(obj)
    dim = dimension if dimension is not None else _declared_dimension(obj)
    target: Any = obj
    if _has_methods(obj, "get_text_embedding_batch", "get_query_embedding"):
        return AdaptedEmbedder(
            mid, target.get_text_embedding_batch, target.get_query_embedding, dim
        )
    if _has_methods(obj, "embed_documents", "embed_query"):
        return AdaptedEmbedder(mid, target.embed_documents, target.embed_query, dim)
    if callable(obj):
        if _has_methods(obj, "embed_query"):

            def one(text: str) -> Any:
                return _first(target.embed_query(input=[text]))

        else:

            def one(text: str) -> Any:
                return _first(target([text]))

        return AdaptedEmbedder(mid, target, one, dim)
    raise InvalidInputError(f"cannot use {type(obj).__name__} as an embedder; pass {ACCEPTED}")


def _is_embedder(obj: object) -> bool:
    # getattr_static: never evaluate a lazy ``dimension`` property just to look at it.
    for name in ("model_id", "dimension", "embed_documents", "embed_query"):
        try:
            inspect.getattr_static(obj, name)
        except AttributeError:
            return False
    return callable(getattr(obj, "embed_documents", None))


def _has_methods(obj: object, *names: str) -> bool:
    return all(callable(getattr(obj, name, None)) for name in names)


def _derive_model_id(obj: object) -> str:
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return f"{obj.__module__}.{obj.__qualname__}"
    owner = type(obj).__name__
    for attr in _MODEL_ATTRS:
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return f"{owner}:{value}"
    name = getattr(obj, "name", None)
    if callable(name):
        with warnings.catch_warnings():
            # Chroma's base EmbeddingFunction.name() warns and returns NotImplemented.
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                value = name()
            except Exception:
                value = None
        if isinstance(value, str) and value:
            return f"{owner}:{value}"
    return owner


def _declared_dimension(obj: object) -> int | None:
    for attr in _DIMENSION_ATTRS:
        value = getattr(obj, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, or InvalidInputError for a bare str or a non-str item."""
    if isinstance(texts, str):
        raise InvalidInputError("texts must be a sequence of str, not a single str")
    batch = list(texts)
    for text in batch:
        if not isinstance(text, str):
            raise InvalidInputError(f"every text must be a str, got {type(text).__name__}")
    return batch


def _first(vectors: Any) -> Any:
    for vector in vectors:
        return vector
    raise EmbeddingMismatchError("the embedding function returned no vector for one text")


def _to_floats(vector: Any) -> list[float]:
    tolist = getattr(vector, "tolist", None)
    values = tolist() if callable(tolist) else vector
    try:
        return [float(x) for x in values]
    except TypeError as exc:
        raise EmbeddingMismatchError(
            f"expected a flat vector of numbers, got {type(vector).__name__}"
        ) from exc
