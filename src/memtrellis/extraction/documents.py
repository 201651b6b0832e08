"""Read a document file into a [`Document`][memtrellis.extraction.Document].

``.txt`` and ``.md`` are read as UTF-8 (a byte-order mark is dropped, undecodable bytes
become U+FFFD). PDF, Word, PowerPoint and HTML go through the optional ``markitdown``
package (the ``documents`` extra: ``pip install ".[documents]"`` in a clone,
``"memtrellis[documents]"`` once published), imported only when such a file is read.

Examples:
    >>> import tempfile
    >>> from datetime import datetime, timezone
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "notes.md"
    >>> _ = path.write_text("# Trip\\n\\nAlice flies to Lyon on Friday.", encoding="utf-8")
    >>> doc = read_document(path, now=datetime.now(timezone.utc))
    >>> doc.kind.value, doc.text.splitlines()[0], doc.doc_id == str(path)
    ('doc', '# Trip', True)
"""

from __future__ import annotations

import importlib
from datetime import datetime, timezone
from pathlib import Path

from memtrellis.errors import InvalidInputError, _install_hint
from memtrellis.extraction.model import Document
from memtrellis.types import SourceKind, _clean_text

__all__ = ["CONVERTED_SUFFIXES", "SUPPORTED_SUFFIXES", "TEXT_SUFFIXES", "read_document"]

#: Read directly as UTF-8 text.
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
#: Converted to Markdown by the optional ``markitdown`` package.
CONVERTED_SUFFIXES = frozenset({".pdf", ".docx", ".pptx", ".html", ".htm"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | CONVERTED_SUFFIXES

_EXTRA_HINT = _install_hint("documents", quote='"')


def read_document(path: Path, *, now: datetime) -> Document:
    """Read the document at ``path``; its timestamp is the file's modification time.

    A modification time later than ``now`` (clock skew, files unpacked from an archive)
    is replaced by ``now``, so that no memory claims to come from the future.

    Args:
        path: A ``.txt``, ``.md``, ``.pdf``, ``.docx``, ``.pptx`` or ``.html`` file.
        now: The capture time (timezone-aware; naive is taken as UTC).

    Returns:
        A [`Document`][memtrellis.extraction.Document] of kind ``DOC`` whose ``doc_id`` is
        ``str(path)``.

    Raises:
        InvalidInputError: The file is missing, not a regular file, unreadable, of an
            unsupported type, empty, or needs ``markitdown`` which is not installed.
    """
    try:
        stat = path.stat()
    except FileNotFoundError as exc:
        raise InvalidInputError(f"document {str(path)!r} does not exist") from exc
    except OSError as exc:
        raise InvalidInputError(f"cannot read document {str(path)!r}: {exc}") from exc
    if not path.is_file():
        raise InvalidInputError(f"document {str(path)!r} is not a regular file")
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InvalidInputError(
            f"cannot read {str(path)!r}: {suffix or 'a file without a suffix'} is not a "
            f"supported document type; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))} "
            f"(PDF, Word, PowerPoint and HTML need {_EXTRA_HINT})"
        )
    text = _read_text(path) if suffix in TEXT_SUFFIXES else _convert(path, suffix)
    text = _clean_text(text.replace("\r\n", "\n").replace("\r", "\n"))
    if not text.strip():
        raise InvalidInputError(f"document {str(path)!r} has no text to remember")
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    modified = datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc)
    return Document(doc_id=str(path), text=text, timestamp=min(modified, now), kind=SourceKind.DOC)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise InvalidInputError(f"cannot read document {str(path)!r}: {exc}") from exc


def _convert(path: Path, suffix: str) -> str:
    try:
        markitdown = importlib.import_module("markitdown")
    except ImportError as exc:
        raise InvalidInputError(
            f"reading {suffix} documents such as {str(path)!r} needs the optional "
            f"markitdown package: {_EXTRA_HINT}"
        ) from exc
    try:
        result = markitdown.MarkItDown().convert(str(path))
    except Exception as exc:  # markitdown raises many converter-specific types
        raise InvalidInputError(f"markitdown could not convert {str(path)!r}: {exc}") from exc
    text = getattr(result, "markdown", None) or getattr(result, "text_content", None)
    if not isinstance(text, str):
        raise InvalidInputError(f"markitdown returned no text for {str(path)!r}")
    return text
