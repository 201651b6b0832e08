"""Keep LlamaIndex's default tokenizer offline beside memtrellis.

LlamaIndex counts tokens with tiktoken's ``cl100k_base`` and reads it from its own shipped
cache only while ``TIKTOKEN_CACHE_DIR`` is unset. memtrellis points that variable at its
own cache (which holds ``o200k_base``) the first time it counts tokens, after which
``llama_index.core.memory.Memory`` would download ``cl100k_base``. Loading it once through
`memtrellis.tokens.get_encoding` puts the file into the cache the variable names
(copied from llama-index-core's shipped file), so both libraries stay offline.
"""

from __future__ import annotations

import logging
import threading

from memtrellis import TokenizerUnavailableError
from memtrellis.tokens import get_encoding

__all__ = ["ensure_offline_tokenizer"]

log = logging.getLogger("llama_index.memory.memtrellis")
_lock = threading.Lock()
_done = False


def ensure_offline_tokenizer() -> bool:
    """Make ``cl100k_base`` loadable offline from ``$TIKTOKEN_CACHE_DIR``. Idempotent.

    Returns False (and logs why) when the file cannot be provided, e.g. an unwritable
    cache directory: importing the package must not fail for that.
    """
    global _done
    with _lock:
        if not _done:
            try:
                get_encoding("cl100k_base")
            except TokenizerUnavailableError as exc:
                log.warning("LlamaIndex's tokenizer may download cl100k_base: %s", exc)
                return False
            _done = True
    return True
