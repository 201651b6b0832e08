"""What the offline embedders share: a model loaded lazily, once, under a lock, from files
checked against pinned sha256 sums.

[`PinnedModel`][memtrellis.embeddings.pinned.PinnedModel] is their base class: the
``model_id`` and ``dimension`` of its class, `load` (the model's files are read and
checked on first use, never at construction), and the embedding of a query as a
document. `read_pinned` and `check_pinned` refuse a model file whose sha256 is not the
pinned one, hashing each file once per process.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from memtrellis.errors import EmbedderUnavailableError, InvalidInputError

__all__ = ["PinnedModel", "check_pinned", "package_file", "read_pinned"]

M = TypeVar("M")

# (realpath, size, mtime_ns, sha256) of model files whose sha256 matched, so that several
# embedders in one process hash a file once.
_verified: set[tuple[str, int, int, str]] = set()
_verified_lock = threading.Lock()


class PinnedModel(Generic[M]):
    """An embedder over a model of type ``M`` that loads on first use (or `load`), once,
    however many threads ask at the same time.

    A subclass names its model in `MODEL_ID` and `DIMENSION`, builds it in ``_load``
    (checking its files with `read_pinned` or `check_pinned`), reaches it through
    ``_model()``, and defines ``embed_documents``. ``_lock`` is free between loads for a
    subclass whose model must be called by one thread at a time.

    Examples:
        >>> class Ones(PinnedModel[int]):
        ...     MODEL_ID, DIMENSION = "ones", 2
        ...     def _load(self) -> int:
        ...         print("loading")
        ...         return 1
        ...     def embed_documents(self, texts):
        ...         return [[float(self._model())] * 2 for _ in texts]
        >>> ones = Ones()
        >>> ones.model_id, ones.dimension
        ('ones', 2)
        >>> ones.embed_query("hi")
        loading
        [1.0, 1.0]
        >>> ones.load()  # loaded already: nothing to do
    """

    #: The id written to store manifests.
    MODEL_ID: ClassVar[str]
    #: Length of every vector.
    DIMENSION: ClassVar[int]

    def __init__(self) -> None:
        self._loaded: M | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The id written to store manifests (`MODEL_ID`)."""
        return self.MODEL_ID

    @property
    def dimension(self) -> int:
        """Length of every vector (`DIMENSION`)."""
        return self.DIMENSION

    def load(self) -> None:
        """Load the model now instead of on the first embed (idempotent).

        Raises:
            EmbedderUnavailableError: A package or a file is missing, or a model file does
                not match its pinned sha256.
        """
        self._model()

    def _model(self) -> M:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
                loaded = self._loaded
        return loaded

    def _load(self) -> M:
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts to store (subclasses define it)."""
        raise NotImplementedError

    def embed_query(self, text: str) -> list[float]:
        """Embed one search text (the model is symmetric: same as a document)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        return self.embed_documents([text])[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.MODEL_ID!r})"


def read_pinned(path: Path, sha256: str, model_id: str, package: str) -> bytes:
    """The bytes of a model file that must match ``sha256`` (hashed once per process per
    file), or EmbedderUnavailableError naming the ``package`` to reinstall.

    Examples:
        >>> import hashlib, tempfile
        >>> path = Path(tempfile.mkdtemp()) / "model.bin"
        >>> _ = path.write_bytes(b"weights")
        >>> read_pinned(path, hashlib.sha256(b"weights").hexdigest(), "m", "pkg==1")
        b'weights'
        >>> read_pinned(path, "0" * 64, "m", "pkg==1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.EmbedderUnavailableError: ... the pinned sha256 of m; reinstall `pkg==1`
    """
    try:
        key = _key(path, sha256)
        data = path.read_bytes()
    except OSError as exc:
        raise _unreadable(path, exc, package) from exc
    if not _seen(key):
        _check(hashlib.sha256(data).hexdigest(), key, path, model_id, package)
    return data


def check_pinned(path: Path, sha256: str, model_id: str, package: str) -> None:
    """Check a model file against ``sha256`` without keeping its bytes (read in blocks;
    hashed once per process per file), or raise EmbedderUnavailableError naming the
    ``package`` to reinstall.

    Examples:
        >>> import hashlib, tempfile
        >>> path = Path(tempfile.mkdtemp()) / "weights.npz"
        >>> _ = path.write_bytes(b"weights")
        >>> check_pinned(path, hashlib.sha256(b"weights").hexdigest(), "m", "pkg==1")
    """
    try:
        key = _key(path, sha256)
        if _seen(key):
            return
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise _unreadable(path, exc, package) from exc
    _check(digest.hexdigest(), key, path, model_id, package)


def _key(path: Path, sha256: str) -> tuple[str, int, int, str]:
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, sha256)


def _seen(key: tuple[str, int, int, str]) -> bool:
    with _verified_lock:
        return key in _verified


def _check(
    found: str, key: tuple[str, int, int, str], path: Path, model_id: str, package: str
) -> None:
    if found != key[3]:
        raise EmbedderUnavailableError(
            f"{path} does not match the pinned sha256 of {model_id}; reinstall `{package}`"
        )
    with _verified_lock:
        _verified.add(key)


def _unreadable(path: Path, exc: OSError, package: str) -> EmbedderUnavailableError:
    return EmbedderUnavailableError(f"cannot read the model {path}: {exc}; reinstall `{package}`")


def package_file(
    package: str, parts: Sequence[str], *, missing: str, incomplete: str, folder: bool = False
) -> Path:
    """Where the installed top-level ``package`` holds ``parts`` (a file, or a folder with
    ``folder=True``), found without running the package's ``__init__``.

    Raises:
        EmbedderUnavailableError: ``missing`` when the package is not installed,
            ``incomplete`` when it is but holds no such file.

    Examples:
        >>> package_file("memtrellis", ["py.typed"], missing="", incomplete="").name
        'py.typed'
    """
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailableError(missing)
    for location in spec.submodule_search_locations:
        candidate = Path(location).joinpath(*parts)
        if candidate.is_dir() if folder else candidate.is_file():
            return candidate
    raise EmbedderUnavailableError(incomplete)
