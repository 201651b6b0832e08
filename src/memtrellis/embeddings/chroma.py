"""The default embedder as a Chroma embedding function, for using it with Chroma directly.

Importing this module imports chromadb (about half a second), so
``memtrellis.embeddings`` only loads it when ``MiniLMEmbeddingFunction`` is first used.
The class registers itself with Chroma under `MiniLMEmbeddingFunction.NAME`, so a
collection created with it can be reopened without passing it again (once this module
has been imported).
"""

from __future__ import annotations

from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space

from memtrellis.embeddings.minilm import MODEL_ID, MiniLMEmbedder, default_embedder
from memtrellis.errors import InvalidInputError

__all__ = ["MiniLMEmbeddingFunction"]

_DEFAULT_MAX_LENGTH = 256


class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """A Chroma ``EmbeddingFunction`` running the offline all-MiniLM-L6-v2 int8 model.

    Args:
        embedder: The [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder] to run; default: the
            shared [`default_embedder`][memtrellis.embeddings.default_embedder] (or a new one when
            ``max_length`` differs from 256).
        max_length: Tokens kept per text; part of the persisted config.

    Examples:
        >>> import chromadb
        >>> from memtrellis.embeddings import MiniLMEmbeddingFunction
        >>> from memtrellis._offline import chroma_settings
        >>> client = chromadb.EphemeralClient(settings=chroma_settings())
        >>> col = client.create_collection("notes", embedding_function=MiniLMEmbeddingFunction())
        >>> col.add(ids=["1", "2"], documents=["I like tea", "The train leaves at nine"])
        >>> col.query(query_texts=["favourite drink"], n_results=1)["ids"]
        [['1']]
    """

    NAME = "memtrellis_minilm_l6_v2_int8"

    def __init__(
        self, embedder: MiniLMEmbedder | None = None, *, max_length: int | None = None
    ) -> None:
        if embedder is None:
            length = _DEFAULT_MAX_LENGTH if max_length is None else max_length
            embedder = (
                default_embedder()
                if length == _DEFAULT_MAX_LENGTH
                else MiniLMEmbedder(max_length=length)
            )
        elif max_length is not None and max_length != embedder.max_length:
            raise InvalidInputError("max_length conflicts with the given embedder's max_length")
        self._embedder = embedder

    @property
    def embedder(self) -> MiniLMEmbedder:
        """The wrapped [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder]."""
        return self._embedder

    def __call__(self, input: Documents) -> Embeddings:
        """Embed ``input`` into unit float32 vectors of length 384."""
        return list(self._embedder.encode(input))

    def embed_query(self, input: Documents) -> Embeddings:
        """Same as ``__call__``: the model embeds queries and documents alike."""
        return self.__call__(input)

    def __memtrellis_embedder__(self) -> MiniLMEmbedder:
        """Lets [`as_embedder`][memtrellis.embeddings.as_embedder] unwrap to the native embedder."""
        return self._embedder

    @staticmethod
    def name() -> str:
        """The name Chroma stores in the collection config."""
        return MiniLMEmbeddingFunction.NAME

    def default_space(self) -> Space:
        """Cosine: the vectors are unit length."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """All of Chroma's spaces behave well on unit vectors."""
        return ["cosine", "ip", "l2"]

    def get_config(self) -> dict[str, Any]:
        """JSON config Chroma persists with the collection."""
        return {"model_id": MODEL_ID, "max_length": self._embedder.max_length}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        """Rebuild from `get_config` output (Chroma calls this on reopen)."""
        MiniLMEmbeddingFunction.validate_config(config)
        return MiniLMEmbeddingFunction(max_length=int(config.get("max_length", 256)))

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        """Refuse a config written for another model."""
        model_id = config.get("model_id", MODEL_ID)
        if model_id != MODEL_ID:
            raise InvalidInputError(f"config is for model {model_id!r}, not {MODEL_ID!r}")

    def validate_config_update(
        self, old_config: dict[str, Any], new_config: dict[str, Any]
    ) -> None:
        """Changing the model or max_length would mix incompatible vectors: refuse."""
        for key in ("model_id", "max_length"):
            if key in new_config and new_config[key] != old_config.get(key):
                raise InvalidInputError(f"cannot change {key} of an existing collection")


def _register() -> None:
    try:
        from chromadb.utils.embedding_functions import register_embedding_function
    except ImportError:  # an older chromadb without the registry
        return
    register_embedding_function(MiniLMEmbeddingFunction)  # type: ignore[no-untyped-call]


_register()
