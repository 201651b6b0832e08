"""The offline embedders and rerankers by name: ``Memory(path, embedder="multilingual")``,
``Memory(path, reranker="minilm-maxsim")``.

Each name maps to a factory in its own module, imported only when that name is asked
for, so an embedder whose optional package is missing costs nothing until chosen (and
then fails with the extra to install). A store records the ``model_id`` of the embedder
it was built with and refuses to open with another one, name or object alike.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from memtrellis.errors import InvalidInputError

__all__ = ["EMBEDDERS", "RERANKERS", "named_embedder", "named_reranker"]

EMBEDDERS: dict[str, tuple[str, str, str | None]] = {
    "minilm": ("memtrellis.embeddings.minilm", "default_embedder", None),
    "minilm-l3": ("memtrellis.embeddings.minilm_l3", "MiniLML3Embedder", "embed-l3"),
    "static": ("memtrellis.embeddings.static", "StaticEmbedder", "embed-static"),
    "multilingual": ("memtrellis.embeddings.multilingual", "multilingual_embedder", "multilingual"),
    "multilingual-e5": ("memtrellis.embeddings.e5", "e5_embedder", "multilingual-e5"),
}
"""Embedder names: name -> (module, factory, the extra that installs its model; ``None``
for the core install)."""


RERANKERS: dict[str, tuple[str, str]] = {
    "minilm-maxsim": ("memtrellis.embeddings.maxsim", "LateInteractionReranker"),
}
"""Built-in reranker names (``Memory(reranker=name)``): name -> (module, factory)."""


def named_embedder(name: str) -> Any:
    """The embedder registered as ``name`` (``"minilm"`` and the multilingual ones are
    shared process-wide instances).

    Args:
        name: One of `EMBEDDERS`.

    Raises:
        InvalidInputError: An unknown name.

    Examples:
        >>> from memtrellis.embeddings.catalog import EMBEDDERS, named_embedder
        >>> named_embedder("multilingual").model_id
        'use-multilingual-v3-numpy'
        >>> sorted(EMBEDDERS)
        ['minilm', 'minilm-l3', 'multilingual', 'multilingual-e5', 'static']
    """
    try:
        module, factory, _extra = EMBEDDERS[name]
    except KeyError:
        # No import of _adapters, which imports this module: the layers stay acyclic.
        known = ", ".join(repr(n) for n in EMBEDDERS)
        raise InvalidInputError(
            f"unknown embedder name {name!r}; known: {known}; or pass an Embedder, a "
            "LangChain Embeddings, a LlamaIndex BaseEmbedding or a Chroma embedding function"
        ) from None
    make: Callable[[], Any] = getattr(import_module(module), factory)
    return make()


def named_reranker(name: str) -> Any:
    """A new instance of the reranker registered as ``name``.

    Args:
        name: One of `RERANKERS`.

    Raises:
        InvalidInputError: An unknown name.

    Examples:
        >>> from memtrellis.embeddings.catalog import named_reranker
        >>> named_reranker("minilm-maxsim").name
        'minilm-maxsim'
    """
    try:
        module, factory = RERANKERS[name]
    except KeyError:
        known = ", ".join(repr(n) for n in RERANKERS)
        raise InvalidInputError(f"unknown reranker name {name!r}; known: {known}") from None
    make: Callable[[], Any] = getattr(import_module(module), factory)
    return make()
