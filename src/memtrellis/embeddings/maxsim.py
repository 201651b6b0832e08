"""Late-interaction reranking with the default embedder's token vectors (``"minilm-maxsim"``).

It lives beside the embedders because it runs their model; recall only sees the
[`Reranker`][memtrellis.recall.rerank.Reranker] protocol it satisfies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["LateInteractionReranker"]


class LateInteractionReranker:
    """Late interaction (MaxSim) over all-MiniLM-L6-v2's contextual token vectors.

    A candidate scores the mean, over the query's tokens, of each token's best cosine
    with one of the candidate's tokens: a question's words are matched one by one in
    context, where the sentence vector of the first stage averages them away. It needs
    no model beyond the default embedder; each call runs the model over the candidates.

    Args:
        embedder: The [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder] to read
            token vectors from; default: the shared one.

    Examples:
        >>> from memtrellis.embeddings.maxsim import LateInteractionReranker
        >>> scores = LateInteractionReranker().score(
        ...     "what does Ann drink?", ["Ann: I only drink green tea", "The bus was late"]
        ... )
        >>> scores[0] > scores[1]
        True
    """

    def __init__(self, embedder: Any = None) -> None:
        self._embedder = embedder

    @property
    def name(self) -> str:
        """``"minilm-maxsim"``."""
        return "minilm-maxsim"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """MaxSim score of each text against ``query`` (0 for a text with no tokens)."""
        if self._embedder is None:
            from memtrellis.embeddings.minilm import default_embedder

            self._embedder = default_embedder()
        vectors = self._embedder.token_vectors([query, *texts])
        question, docs = vectors[0], vectors[1:]
        if len(question) == 0:
            return [0.0] * len(docs)
        out: list[float] = []
        for doc in docs:
            out.append(float((question @ doc.T).max(axis=1).mean()) if len(doc) else 0.0)
        return out
