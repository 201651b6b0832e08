"""Images, files and audio sent in a chat message, kept as part of its source, and the
text of a message's parts.

A message's content may be a list of parts (OpenAI, Anthropic, LangChain and LlamaIndex
all write one): the text parts are what was said (`content_text`, the one reader of a
part's text, used by the SDK clients, extraction and the adapters' turns alike); the
others are attachments. Each is kept on the message's
[`SourceRef`][memtrellis.SourceRef] as an `Attachment`: its kind, media type, URL or
provider file id, the sha256 and size of inline bytes, its name, and its caption when the
part gives one (``caption``, ``alt``, ``alt_text``, ``title`` or ``context`` keys). The
raw bytes are never kept unless the application opts in with a size cap
(``ExtractionConfig(attachment_bytes=...)``); a ``data:`` URL counts as inline bytes,
never as a URL.

The part shapes read: OpenAI (``image_url``, ``input_image``, ``file``, ``input_file``,
``input_audio``), Anthropic (``image``, ``document``), LangChain and LlamaIndex standard
blocks (``image``, ``file``, ``audio``, ``video``), Google Gen AI parts
(``inline_data``/``file_data``, snake or camel case, their bytes raw or base64) and
Bedrock Converse blocks (``image``, ``document``, ``video``, ``audio``, from ``bytes``,
an ``s3Location`` or a document's inline text). Inline bytes may be ``bytes`` or base64
text.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "Attachment",
    "AttachmentKind",
    "attachments_of",
    "content_text",
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
                    "wav": "audio/wav", "mp3": "audio/mpeg", "csv": "text/csv",
                    "txt": "text/plain", "md": "text/markdown", "html": "text/html",
                    "doc": "application/msword", "xls": "application/vnd.ms-excel",
                    "docx": "application/vnd.openxmlformats-officedocument"
                    ".wordprocessingml.document",
                    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                    }  # fmt: skip
# Google Gen AI parts: the key of each payload, in either spelling the SDK takes.
_GOOGLE_BLOB = ("inline_data", "inlineData")
_GOOGLE_FILE = ("file_data", "fileData")
# Bedrock Converse content blocks: the block's key and the kind it carries.
_BEDROCK_KINDS: dict[str, AttachmentKind] = {
    "image": "image",
    "document": "file",
    "video": "video",
    "audio": "audio",
}
# Bedrock formats whose media type is not "<kind>/<format>".
_BEDROCK_MEDIA = {"image": {"jpg": "image/jpeg"},
                  "video": {"mov": "video/quicktime", "mkv": "video/x-matroska",
                            "three_gp": "video/3gpp", "mpg": "video/mpeg", "flv": "video/x-flv",
                            "wmv": "video/x-ms-wmv"},
                  "audio": {"mp3": "audio/mpeg", "mkv": "audio/x-matroska",
                            "mka": "audio/x-matroska", "m4a": "audio/mp4", "mpga": "audio/mpeg",
                            "x-aac": "audio/aac", "pcm": "audio/pcm"}}  # fmt: skip


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
        >>> is_attachment_part({"inline_data": {"data": b"...", "mime_type": "image/png"}})
        True
        >>> is_attachment_part({"type": "text", "text": "hi"})
        False
    """
    return isinstance(part, Attachment) or _reader_of(part) is not None


def attachments_of(parts: Any, *, keep_bytes: int = 0) -> tuple[Attachment, ...]:
    """The attachments among a message's content parts (or a list of `Attachment`).

    ``keep_bytes``: inline bytes up to this size are kept (base64) in the attachment;
    0 keeps none. Parts that are not attachments are passed over.

    Examples:
        >>> png = "data:image/png;base64," + base64.b64encode(b"not really a png").decode()
        >>> found = attachments_of([{"type": "image_url", "image_url": {"url": png}}])
        >>> found[0].mime_type, found[0].size, found[0].url, len(found[0].sha256)
        ('image/png', 16, None, 64)
        >>> blocks = [{"text": "The lease"},
        ...           {"document": {"format": "pdf", "name": "lease",
        ...                         "source": {"s3Location": {"uri": "s3://docs/lease.pdf"}}}}]
        >>> [(a.kind, a.mime_type, a.url, a.name) for a in attachments_of(blocks)]
        [('file', 'application/pdf', 's3://docs/lease.pdf', 'lease')]
    """
    if isinstance(parts, Mapping | Attachment):
        parts = [parts]
    if isinstance(parts, str | bytes) or not isinstance(parts, Iterable):
        return ()
    found: list[Attachment] = []
    for part in parts:
        if isinstance(part, Attachment):
            found.append(part)
            continue
        reader = _reader_of(part)
        if reader is not None:
            read = reader(part, keep_bytes)
            if read.url or read.file_id or read.size or read.name or read.caption:
                found.append(read)  # a part with nothing in it ("data:,") is none
        elif isinstance(part, Mapping) and "type" not in part and part.get("kind") in _KIND_NAMES:
            found.append(Attachment.model_validate(part))  # one already read (`summarised`)
    return tuple(found)


def content_text(content: Any) -> str:
    """The text of a message's content: a string as it is, else the texts of its parts
    joined by newlines.

    A part gives its text when it is a string or has a ``text`` (a dict's key or an SDK
    object's attribute); an Anthropic ``tool_result`` part gives the text of its own
    content. Attachment parts and parts without text give none; a text is kept as it was
    said, spaces included (extraction cleans it). A lone dict is read as one part.

    Examples:
        >>> content_text([{"type": "text", "text": "Hi"}, {"type": "image_url", "image_url": {}}])
        'Hi'
        >>> content_text([{"type": "tool_result", "content": [{"type": "text", "text": "18 C"}]}])
        '18 C'
        >>> content_text({"text": "one part"}), content_text(None)
        ('one part', '')
    """
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, Sequence) or isinstance(content, (bytes, bytearray)):
        return ""
    texts = (_part_text(part) for part in content)
    return "\n".join(text for text in texts if text)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if part is None or isinstance(part, (bytes, bytearray)) or is_attachment_part(part):
        return ""
    if _field(part, "type") == "tool_result":  # Anthropic: a tool's output, nested
        return content_text(_field(part, "content"))
    text = _field(part, "text")
    return text if isinstance(text, str) else ""


def _field(part: Any, name: str) -> Any:
    """``part[name]`` of a dict, ``part.name`` of an SDK object."""
    if isinstance(part, Mapping):
        return part.get(name)
    try:
        return getattr(part, name, None)
    except Exception:  # a property that fails: no such field
        return None


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


Reader = Callable[[Mapping[str, Any], int], Attachment]


def _reader_of(part: Any) -> Reader | None:
    """How to read ``part`` as an attachment: by its ``type`` (OpenAI, Anthropic,
    LangChain), as a Google Gen AI part or a Bedrock block (neither has a ``type``); None
    when it is no attachment part."""
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind is not None:
        return _read if isinstance(kind, str) and kind in _KINDS else None
    if any(isinstance(part.get(key), Mapping) for key in (*_GOOGLE_BLOB, *_GOOGLE_FILE)):
        return _read_google
    blocks = [key for key in _BEDROCK_KINDS if isinstance(part.get(key), Mapping)]
    if len(blocks) == 1 and isinstance(part[blocks[0]].get("source"), Mapping):
        return _read_bedrock
    return None


def _read(part: Mapping[str, Any], keep_bytes: int) -> Attachment:
    kind = _KINDS[part["type"]]
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
    data: str | bytes | None = first("base64", "data", "file_data")
    raw = [layer["data"] for layer in layers if _is_bytes(layer.get("data"))]
    if data is None and raw:  # raw bytes (an adapter's part, such as Ollama's images)
        data = bytes(raw[0])
    if url is not None and url[:5].lower() == "data:":
        data, url = url, None
    inline = _inline(data, keep_bytes)
    mime = mime or inline.mime
    audio_format = inner.get("format") if kind == "audio" else None
    if mime is None and isinstance(audio_format, str):
        mime = f"audio/{audio_format}"
    name = first(*_NAME_KEYS)
    return Attachment(
        kind=kind,
        mime_type=mime or _type_of_name(name),
        url=url,
        file_id=first("file_id"),
        sha256=inline.sha256,
        size=inline.size,
        name=name,
        caption=first(*_CAPTION_KEYS),
        data=inline.kept,
    )


def _read_google(part: Mapping[str, Any], keep_bytes: int) -> Attachment:
    """A Google Gen AI part: ``inline_data`` (a ``Blob``: bytes, raw or base64) or
    ``file_data`` (a ``FileData``: a ``gs://`` or Files API URI)."""
    blob, filed = _google_payload(part, _GOOGLE_BLOB), _google_payload(part, _GOOGLE_FILE)
    payload = blob or filed

    def text(snake: str, camel: str) -> str | None:
        value = payload.get(snake, payload.get(camel))
        return value if isinstance(value, str) and value.strip() else None

    data = payload.get("data") if blob else None
    inline = _inline(data if isinstance(data, str) or _is_bytes(data) else None, keep_bytes)
    mime = text("mime_type", "mimeType") or inline.mime
    name = text("display_name", "displayName")
    return Attachment(
        kind=_kind_of_type(mime),
        mime_type=mime or _type_of_name(name),
        url=None if blob else text("file_uri", "fileUri"),
        sha256=inline.sha256,
        size=inline.size,
        name=name,
        data=inline.kept,
    )


def _google_payload(part: Mapping[str, Any], keys: tuple[str, ...]) -> Mapping[str, Any]:
    found = next((part[key] for key in keys if isinstance(part.get(key), Mapping)), None)
    return found or {}


def _read_bedrock(part: Mapping[str, Any], keep_bytes: int) -> Attachment:
    """A Bedrock Converse block: ``{"image"|"document"|"video"|"audio": {"format",
    "source": {"bytes"|"s3Location"|"text"|"content"}, "name"?, "context"?}}``."""
    key = next(k for k in _BEDROCK_KINDS if isinstance(part.get(k), Mapping))
    kind, block = _BEDROCK_KINDS[key], part[key]
    source = block["source"]
    data = source.get("bytes")
    if isinstance(data, str):  # botocore sends a string's own UTF-8 bytes
        data = data.encode("utf-8", "surrogatepass")
    if data is None and kind == "file":  # a document given as text
        texts = [source.get("text")] + [_field(c, "text") for c in source.get("content") or ()]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        data = joined.encode("utf-8", "surrogatepass") if joined else None
    inline = _inline(data if _is_bytes(data) else None, keep_bytes)
    s3 = source.get("s3Location")
    uri = s3.get("uri") if isinstance(s3, Mapping) else None
    fmt = block.get("format")
    mime = None
    if isinstance(fmt, str) and fmt:
        fmt = fmt.lower()
        media = _BEDROCK_MEDIA.get(kind, {}).get(fmt, f"{kind}/{fmt}")
        mime = _EXTENSION_TYPES.get(fmt) if kind == "file" else media
    name, context = block.get("name"), block.get("context")
    return Attachment(
        kind=kind,
        mime_type=mime,
        url=uri if isinstance(uri, str) else None,
        sha256=inline.sha256,
        size=inline.size,
        name=name if isinstance(name, str) else None,
        caption=context if isinstance(context, str) else None,
        data=inline.kept,
    )


def _is_bytes(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview))


def _kind_of_type(mime: str | None) -> AttachmentKind:
    """The kind a media type names: ``image/*``, ``audio/*``, ``video/*``, else a file."""
    major = (mime or "").split("/", 1)[0].lower()
    return major if major in ("image", "audio", "video") else "file"  # type: ignore[return-value]


def _type_of_name(name: str | None) -> str | None:
    """The media type a file name's extension gives, when it is a known one."""
    if name and "." in name:
        return _EXTENSION_TYPES.get(name.rsplit(".", 1)[1].lower())
    return None


class _Inline(NamedTuple):
    """What is kept of inline bytes: their sha256 and size, the bytes themselves (base64)
    when they fit the cap, and the media type a ``data:`` URL named."""

    sha256: str | None = None
    size: int | None = None
    kept: str | None = None
    mime: str | None = None


def _inline(data: str | bytes | bytearray | memoryview | None, keep_bytes: int) -> _Inline:
    """Inline bytes as given: raw bytes, or a ``data:`` URL or base64 text (`_decode`)."""
    if data is None:
        return _Inline()
    raw, mime = _decode(data) if isinstance(data, str) else (bytes(data), None)
    kept = base64.b64encode(raw).decode("ascii") if 0 < len(raw) <= keep_bytes else None
    return _Inline(hashlib.sha256(raw).hexdigest(), len(raw), kept, mime)


def _decode(data: str) -> tuple[bytes, str | None]:
    """Inline bytes of a ``data:`` URL or a base64 string (standard or URL-safe, padded
    or not), and the URL's media type.

    A string that is not base64 is taken as it is (its UTF-8 bytes are hashed)."""
    mime = None
    header = _DATA_URL.match(data)
    if header is not None:
        mime = header.group("mime")
        body = data[header.end() :]
        if ";base64" not in (header.group("params") or "").lower():
            return body.encode("utf-8"), mime
        data = body
    try:  # either alphabet: Google's SDK and JSON write URL-safe base64
        return base64.b64decode(data + "=" * (-len(data) % 4), b"-_", validate=True), mime
    except (binascii.Error, ValueError):
        return data.encode("utf-8", "surrogatepass"), mime
