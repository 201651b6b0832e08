"""The embedder protocol every vector in memtrellis goes through, and adapters onto it.

Any object with ``model_id``, ``dimension``, ``embed_documents`` and ``embed_query`` is an
[`Embedder`][memtrellis.embeddings.Embedder]. [`as_embedder`][memtrellis.embeddings.as_embedder]
adapts the embedders users already have (a Chroma embedding function, a LangChain ``Embeddings``, a
LlamaIndex ``BaseEmbedding``) by duck typing, so the core never imports those frameworks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast, runtime_checkable

__all__ = ["Embedder", "as_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into vectors of a fixed dimension.

    ``model_id`` names the model and is written to the store's manifest: a store refuses
    to open with an embedder of another ``model_id`` or ``dimension``.

    Examples:
        >>> from memtrellis.embeddings import Embedder
        >>> from memtrellis.testing import HashingEmbedder
        >>> isinstance(HashingEmbedder(), Embedder)
        True
    """

    @property
    def model_id(self) -> str:
        """A stable name of the model (and its variant) that produced the vectors."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to be stored."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed a text to search with."""
        ...


def as_embedder(
    obj: object, *, model_id: str | None = None, dimension: int | None = None
) -> Embedder:
    """Adapt ``obj`` to [`Embedder`][memtrellis.embeddings.Embedder] by duck typing.

    Accepted, in this order:

    0. A name from [`EMBEDDERS`][memtrellis.embeddings.catalog.EMBEDDERS] (``"minilm"``,
       ``"minilm-l3"``, ``"static"``): that offline embedder.
    1. An [`Embedder`][memtrellis.embeddings.Embedder] (returned unchanged), or an object whose
       ``__memtrellis_embedder__()`` returns one (as
       `MiniLMEmbeddingFunction` does).
    2. A LlamaIndex ``BaseEmbedding``: ``get_text_embedding_batch`` and
       ``get_query_embedding``.
    3. A LangChain ``Embeddings``: ``embed_documents`` and ``embed_query``.
    4. A Chroma embedding function: callable on a list of texts, optionally with
       ``embed_query(input=[...])`` and ``name()``.

    Vectors come back as ``list[float]`` whatever the wrapped object returns (numpy
    arrays included). Without ``dimension`` the adapter reads it from a ``dimension``,
    ``dimensions``, ``embed_dim`` or ``embedding_dimension`` attribute, else learns it
    from the first vectors it sees (embedding a short probe text if asked first).

    Args:
        obj: The embedder to adapt.
        model_id: Overrides the derived id (class name plus the object's ``model_name``,
            ``model``, ``model_id`` attribute or Chroma ``name()``).
        dimension: The vector length, when known.

    Raises:
        InvalidInputError: ``obj`` matches none of the shapes above.

    Examples:
        >>> from memtrellis.embeddings import as_embedder
        >>> class Fake:  # LangChain-like
        ...     model = "fake-1"
        ...     def embed_documents(self, texts): return [[1.0, 0.0] for _ in texts]
        ...     def embed_query(self, text): return [1.0, 0.0]
        >>> e = as_embedder(Fake())
        >>> e.model_id, e.dimension, e.embed_query("hi")
        ('Fake:fake-1', 2, [1.0, 0.0])
    """
    from memtrellis.embeddings._adapters import adapt

    return cast(Embedder, adapt(obj, model_id=model_id, dimension=dimension))
