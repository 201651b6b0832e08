"""Images, files and audio sent in a chat message, kept as part of its source.

A message's content may be a list of parts (OpenAI, Anthropic, LangChain and LlamaIndex
all write one): the text parts are what was said; the others are attachments. Each is
kept on the message's [`SourceRef`][memtrellis.SourceRef] as an `Attachment`: its kind,
media type, URL or provider file id, the sha256 and size of inline bytes, its name, and
its caption when the part gives one (``caption``, ``alt``, ``alt_text``, ``title`` or
``context`` keys). The raw bytes are never kept unless the application opts in with a
size cap (``ExtractionConfig(attachment_bytes=...)``); a ``data:`` URL counts as inline
bytes, never as a URL.

What the turn says of its attachments is written into its text as one line each
(``[image: a red bicycle]``, ``[file: lease.pdf]``, ``[image]``), so that a caption is
searched like any word of the message and the model reading recalled memories knows an
image was there.

Examples:
    >>> parts = [{"type": "text", "text": "My new bike!"},
    ...          {"type": "image_url", "image_url": {"url": "https://x.test/bike.jpg"},
    ...           "caption": "a red bicycle"}]
    >>> found = attachments_of(parts)
    >>> found[0].kind, found[0].url, found[0].caption
    ('image', 'https://x.test/bike.jpg', 'a red bicycle')
    >>> mention(found[0])
    '[image: a red bicycle]'
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "Attachment",
    "AttachmentKind",
    "attachments_of",
    "is_attachment_part",
    "mention",
    "summarised",
]

AttachmentKind = Literal["image", "file", "audio", "video"]
_KIND_NAMES = frozenset({"image", "file", "audio", "video"})

#: Longest URL, caption or name kept (characters); longer ones are cut.
MAX_FIELD_CHARS = 1_000
_URL_CHARS = 2_000

# Part types of each SDK and framework, by the kind of attachment they carry.
_KINDS: dict[str, AttachmentKind] = {
    "image": "image",  # Anthropic, LangChain
    "image_url": "image",  # OpenAI chat completions, LangChain (legacy)
    "input_image": "image",  # OpenAI Responses
    "file": "file",  # OpenAI chat completions, LangChain
    "input_file": "file",  # OpenAI Responses
    "document": "file",  # Anthropic
    "audio": "audio",  # LangChain
    "input_audio": "audio",  # OpenAI chat completions
    "video": "video",  # LangChain
}
_CAPTION_KEYS = ("caption", "alt", "alt_text", "title", "context", "description")
_NAME_KEYS = ("filename", "name", "file_name")
_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[^;,]*)*),", re.I)
_EXTENSION_TYPES = {"pdf": "application/pdf", "png": "image/png", "jpg": "image/jpeg",
                    "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
                    "wav": "audio/wav", "mp3": "audio/mpeg"}  # fmt: skip


class Attachment(BaseModel):
    """An image, file, audio or video part of a chat message, as its source keeps it.

    Examples:
        >>> Attachment(kind="image", url="https://x.test/a.png", caption="a cat").caption
        'a cat'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: AttachmentKind
    mime_type: str | None = None
    #: Where it can be fetched again (``http(s)://``, ``s3://``, ...; never ``data:``).
    url: str | None = None
    #: The provider's id of an uploaded file (OpenAI ``file-...``, Anthropic ``file_...``).
    file_id: str | None = None
    #: sha256 (hex) and size in bytes of the inline bytes the part carried.
    sha256: str | None = None
    size: int | None = Field(default=None, ge=0)
    name: str | None = None
    caption: str | None = None
    #: The inline bytes, base64, only when the application opted in and they fit its cap.
    data: str | None = None

    @field_validator("mime_type", "file_id", "name", "caption")
    @classmethod
    def _short(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = " ".join(value.split())[:MAX_FIELD_CHARS]
        return value or None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if value[:5].lower() == "data:":
            raise ValueError("a data: URL is inline bytes, not a URL (give sha256 and size)")
        return value.strip()[:_URL_CHARS] or None


def is_attachment_part(part: Any) -> bool:
    """Whether a content part is an attachment (an image, file, audio or video part).

    Examples:
        >>> is_attachment_part({"type": "image", "url": "https://x.test/a.png"})
        True
        >>> is_attachment_part({"type": "text", "text": "hi"})
        False
    """
    return isinstance(part, Attachment) or (
        isinstance(part, Mapping) and part.get("type") in _KINDS
    )


def attachments_of(parts: Any, *, keep_bytes: int = 0) -> tuple[Attachment, ...]:
    """The attachments among a message's content parts (or a list of `Attachment`).

    ``keep_bytes``: inline bytes up to this size are kept (base64) in the attachment;
    0 keeps none. Parts that are not attachments are passed over.

    Examples:
        >>> png = "data:image/png;base64," + base64.b64encode(b"not really a png").decode()
        >>> found = attachments_of([{"type": "image_url", "image_url": {"url": png}}])
        >>> found[0].mime_type, found[0].size, found[0].url, len(found[0].sha256)
        ('image/png', 16, None, 64)
    """
    if isinstance(parts, Mapping | Attachment):
        parts = [parts]
    if isinstance(parts, str | bytes) or not isinstance(parts, Iterable):
        return ()
    found: list[Attachment] = []
    for part in parts:
        if isinstance(part, Attachment):
            found.append(part)
        elif isinstance(part, Mapping) and part.get("type") in _KINDS:
            read = _read(part, _KINDS[part["type"]], keep_bytes)
            if read.url or read.file_id or read.size or read.name or read.caption:
                found.append(read)  # a part with nothing in it ("data:,") is none
        elif isinstance(part, Mapping) and "type" not in part and part.get("kind") in _KIND_NAMES:
            found.append(Attachment.model_validate(part))  # one already read (`summarised`)
    return tuple(found)


def summarised(data: Any, *, keep_bytes: int = 0) -> Any:
    """``data`` (a message dict, a conversation, or a list of them) with every attachment
    part of a message's content read into its ``attachments`` list: what capture spools
    to disk, so that inline bytes are not written where the application did not opt in.

    Examples:
        >>> message = {"role": "user", "content": [
        ...     {"type": "text", "text": "see"},
        ...     {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}}]}
        >>> out = summarised(message)
        >>> out["content"], out["attachments"][0]["size"]
        ([{'type': 'text', 'text': 'see'}], 2)
    """
    if isinstance(data, Mapping):
        content, given = data.get("content"), data.get("attachments")
        parts = [p for p in content if is_attachment_part(p)] if isinstance(content, list) else []
        if "role" not in data or not (parts or given):
            return data
        # The parts in the content, and those an adapter passed beside it (raw SDK parts:
        # a patched client's request, a LangChain message's blocks), read alike.
        found = (
            *attachments_of(parts, keep_bytes=keep_bytes),
            *attachments_of(given, keep_bytes=keep_bytes),
        )
        rest = content
        if parts and isinstance(content, list):
            rest = [p for p in content if not is_attachment_part(p)]
        dumped = [a.model_dump(mode="json", exclude_none=True) for a in found]
        return {**data, "content": rest, "attachments": dumped}
    if isinstance(data, list):
        return [summarised(item, keep_bytes=keep_bytes) for item in data]
    return data


def mention(attachment: Attachment) -> str:
    """The line a turn's text gets for an attachment: ``[image: caption]``, ``[file:
    name]`` or ``[audio]``.

    Examples:
        >>> mention(Attachment(kind="file", name="lease.pdf"))
        '[file: lease.pdf]'
    """
    label = attachment.caption or attachment.name
    return f"[{attachment.kind}: {label}]" if label else f"[{attachment.kind}]"


def _read(part: Mapping[str, Any], kind: AttachmentKind, keep_bytes: int) -> Attachment:
    # The payload sits in the part itself (LangChain, Responses) or in a nested dict named
    # after the type (OpenAI chat: image_url, file, input_audio) or "source" (Anthropic).
    nested = part.get(part.get("type", ""))
    inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else {}
    source = part.get("source")
    src: Mapping[str, Any] = source if isinstance(source, Mapping) else {}
    layers = (part, inner, src)

    def first(*keys: str) -> str | None:
        for layer in layers:
            for key in keys:
                value = layer.get(key)
                if isinstance(value, str) and value.strip():
                    return value
        return None

    mime = first("mime_type", "media_type", "image_mimetype", "document_mimetype")
    url = first("url", "image_url", "file_url")
    if url is None and isinstance(nested, str):  # OpenAI Responses: "image_url": "https:..."
        url = nested
    data = first("base64", "data", "file_data")
    if url is not None and url[:5].lower() == "data:":
        data, url = url, None
    sha256 = size = kept = None
    if data is not None:
        raw, data_mime = _decode(data)
        mime = mime or data_mime
        sha256, size = hashlib.sha256(raw).hexdigest(), len(raw)
        if 0 < size <= keep_bytes:
            kept = base64.b64encode(raw).decode("ascii")
    audio_format = inner.get("format") if kind == "audio" else None
    if mime is None and isinstance(audio_format, str):
        mime = f"audio/{audio_format}"
    name = first(*_NAME_KEYS)
    if mime is None and name and "." in name:
        mime = _EXTENSION_TYPES.get(name.rsplit(".", 1)[1].lower())
    return Attachment(
        kind=kind,
        mime_type=mime,
        url=url,
        file_id=first("file_id"),
        sha256=sha256,
        size=size,
        name=name,
        caption=first(*_CAPTION_KEYS),
        data=kept,
    )


def _decode(data: str) -> tuple[bytes, str | None]:
    """Inline bytes of a ``data:`` URL or a base64 string, and the URL's media type.

    A string that is not base64 is taken as it is (its UTF-8 bytes are hashed)."""
    mime = None
    header = _DATA_URL.match(data)
    if header is not None:
        mime = header.group("mime")
        body = data[header.end() :]
        if ";base64" not in (header.group("params") or "").lower():
            return body.encode("utf-8"), mime
        data = body
    try:
        return base64.b64decode(data, validate=True), mime
    except (binascii.Error, ValueError):
        return data.encode("utf-8", "surrogatepass"), mime
