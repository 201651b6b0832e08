"""Fakes for tests: deterministic, fast, no model files, no network.

Use them in your own tests the way langchain-core's ``GenericFakeChatModel`` is used:

* :class:`HashingEmbedder`: a feature-hashing :class:`~memtrellis.embeddings.Embedder`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence

from memtrellis.errors import InvalidInputError

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


class HashingEmbedder:
    """A deterministic embedder by feature hashing; texts that share words are closer.

    Each lowercase word and each character trigram of ``#word#`` is hashed with
    blake2b (stable across processes, unlike ``hash()``) to a signed position of the
    vector, which is then L2-normalised. Not a semantic model: "tea" and "drink" are
    unrelated to it. For tests and examples only.

    Args:
        dimension: Vector length, ``>= 2``.

    Example:
        >>> from memtrellis.testing import HashingEmbedder
        >>> e = HashingEmbedder()
        >>> e.model_id, len(e.embed_query("hello"))
        ('hashing-64', 64)
        >>> e.embed_query("hello") == HashingEmbedder().embed_query("hello")
        True
    """

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 2:
            raise InvalidInputError(f"dimension must be >= 2, got {dimension}")
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        """``f"hashing-{dimension}"``."""
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        """The vector length given at construction."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed each text; see the class docstring."""
        if isinstance(texts, str):
            raise InvalidInputError("texts must be a sequence of str, not a single str")
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text into a unit vector."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        vector = [0.0] * self._dimension
        for feature, weight in _features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value & 1 else -1.0
            vector[(value >> 1) % self._dimension] += sign * weight
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:  # every feature cancelled out: fall back to a fixed unit vector
            vector[0], norm = 1.0, 1.0
        return [x / norm for x in vector]

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension})"


def _features(text: str) -> Iterator[tuple[str, float]]:
    words = _WORD.findall(text.lower())
    if not words:
        # No word characters (empty, punctuation only): hash the text itself.
        yield "t:" + text.strip(), _WORD_WEIGHT
        return
    for word in words:
        yield "w:" + word, _WORD_WEIGHT
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            yield "c:" + padded[i : i + 3], _TRIGRAM_WEIGHT
