"""The offline embedders by name: ``Memory(path, embedder="multilingual")``.

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

__all__ = ["EMBEDDERS", "named_embedder"]

#: name -> (module, factory name, extra that installs its model or ``None`` for the core).
EMBEDDERS: dict[str, tuple[str, str, str | None]] = {
    "minilm": ("memtrellis.embeddings.minilm", "default_embedder", None),
    "multilingual": ("memtrellis.embeddings.multilingual", "multilingual_embedder", "multilingual"),
    "multilingual-e5": ("memtrellis.embeddings.e5", "e5_embedder", "multilingual-e5"),
}


def named_embedder(name: str) -> Any:
    """The embedder registered as ``name`` (each a shared process-wide instance).

    Args:
        name: One of `EMBEDDERS`.

    Raises:
        InvalidInputError: An unknown name.

    Examples:
        >>> from memtrellis.embeddings.catalog import EMBEDDERS, named_embedder
        >>> named_embedder("multilingual").model_id
        'use-multilingual-v3-numpy'
        >>> sorted(EMBEDDERS)
        ['minilm', 'multilingual', 'multilingual-e5']
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
