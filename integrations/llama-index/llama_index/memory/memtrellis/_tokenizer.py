"""Keep LlamaIndex's default tokenizer offline beside memtrellis.

LlamaIndex counts tokens with tiktoken's ``cl100k_base`` and reads it from its own shipped
cache only while ``TIKTOKEN_CACHE_DIR`` is unset. memtrellis points that variable at its
own cache (which holds ``o200k_base``) the first time it counts tokens, after which
``llama_index.core.memory.Memory`` would download ``cl100k_base``. Loading it once through
:func:`memtrellis.tokens.get_encoding` puts the file into the cache the variable names
(copied from llama-index-core's shipped file), so both libraries stay offline.
"""

from __future__ import annotations

import threading

from memtrellis.tokens import get_encoding

__all__ = ["ensure_offline_tokenizer"]

_lock = threading.Lock()
_done = False


def ensure_offline_tokenizer() -> None:
    """Make ``cl100k_base`` loadable offline from ``$TIKTOKEN_CACHE_DIR``. Idempotent."""
    global _done
    with _lock:
        if not _done:
            get_encoding("cl100k_base")
            _done = True
