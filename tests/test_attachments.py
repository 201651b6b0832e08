"""Images, files and audio in a chat message are kept as sources of its turn: read from
every SDK's part shapes, searchable by caption, never stored as raw bytes unless asked
(through add and capture; real Chroma). The SDK clients: test_clients_attachments.py."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from memtrellis import ExtractionConfig, Memory
from memtrellis.attachments import (
    Attachment,
    attachments_of,
    content_text,
    is_attachment_part,
    summarised,
)
from memtrellis.errors import InvalidInputError
from memtrellis.testing import HashingEmbedder

PIXELS = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # 1,032 bytes that are not text
B64 = base64.b64encode(PIXELS).decode()
DIGEST = hashlib.sha256(PIXELS).hexdigest()
PDF = "application/pdf"


# -- reading the parts of each SDK and framework -------------------------------------------
@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (  # OpenAI chat completions, by URL
            {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg", "detail": "low"}},
            {"kind": "image", "url": "https://x.test/cat.jpg"},
        ),
        (  # OpenAI chat completions, inline
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}},
            {"kind": "image", "mime_type": "image/png", "sha256": DIGEST, "size": len(PIXELS)},
        ),
        (  # OpenAI chat completions: audio and an uploaded file
            {"type": "input_audio", "input_audio": {"data": B64, "format": "wav"}},
            {"kind": "audio", "mime_type": "audio/wav", "sha256": DIGEST},
        ),
        (
            {"type": "file", "file": {"file_id": "file-abc", "filename": "lease.pdf"}},
            {
                "kind": "file",
                "file_id": "file-abc",
                "name": "lease.pdf",
                "mime_type": "application/pdf",
            },
        ),
        (  # OpenAI Responses
            {"type": "input_image", "image_url": "https://x.test/dog.png", "detail": "auto"},
            {"kind": "image", "url": "https://x.test/dog.png"},
        ),
        (
            {"type": "input_file", "filename": "notes.txt", "file_data": B64},
            {"kind": "file", "name": "notes.txt", "sha256": DIGEST},
        ),
        (  # Anthropic: base64, URL, document with a title
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
            {"kind": "image", "mime_type": "image/png", "sha256": DIGEST, "url": None},
        ),
        (
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.gif"}},
            {"kind": "image", "url": "https://x.test/a.gif"},
        ),
        (
            {
                "type": "document",
                "source": {"type": "file", "file_id": "f1"},
                "title": "Q3 plan",
            },
            {"kind": "file", "file_id": "f1", "caption": "Q3 plan"},
        ),
        (  # LangChain standard content blocks
            {"type": "image", "base64": B64, "mime_type": "image/png", "id": "lc_1"},
            {"kind": "image", "sha256": DIGEST, "file_id": None},
        ),
        (
            {"type": "image", "url": "https://x.test/b.webp", "alt": "a beach at dusk"},
            {"kind": "image", "url": "https://x.test/b.webp", "caption": "a beach at dusk"},
        ),
        (  # Google Gen AI: a Part's inline_data, raw bytes (a typed Part dumped) or base64
            {"inline_data": {"data": PIXELS, "mime_type": "image/png", "display_name": "bike"}},
            {"kind": "image", "mime_type": "image/png", "sha256": DIGEST, "name": "bike"},
        ),
        (
            {"inlineData": {"data": B64, "mimeType": "audio/wav"}},
            {"kind": "audio", "mime_type": "audio/wav", "sha256": DIGEST, "size": len(PIXELS)},
        ),
        (  # Google Gen AI: file_data by URI (Part.from_uri)
            {"file_data": {"file_uri": "gs://bucket/lease.pdf", "mime_type": PDF}},
            {"kind": "file", "url": "gs://bucket/lease.pdf", "mime_type": PDF, "sha256": None},
        ),
        (
            {"fileData": {"fileUri": "https://x.test/files/v1", "mimeType": "video/mp4"}},
            {"kind": "video", "url": "https://x.test/files/v1"},
        ),
        (  # Bedrock Converse: bytes, an S3 location, a document's text and context
            {"image": {"format": "png", "source": {"bytes": PIXELS}}},
            {"kind": "image", "mime_type": "image/png", "sha256": DIGEST, "url": None},
        ),
        (
            {
                "document": {
                    "format": "pdf",
                    "name": "lease",
                    "context": "the signed lease of the flat",
                    "source": {"s3Location": {"uri": "s3://docs/lease.pdf", "bucketOwner": "1"}},
                }
            },
            {
                "kind": "file",
                "mime_type": PDF,
                "url": "s3://docs/lease.pdf",
                "name": "lease",
                "caption": "the signed lease of the flat",
            },
        ),
        (
            {"document": {"format": "txt", "name": "notes", "source": {"text": "buy milk"}}},
            {
                "kind": "file",
                "mime_type": "text/plain",
                "sha256": hashlib.sha256(b"buy milk").hexdigest(),
                "size": 8,
            },
        ),
        (
            {"video": {"format": "mov", "source": {"s3Location": {"uri": "s3://v/trip.mov"}}}},
            {"kind": "video", "mime_type": "video/quicktime", "url": "s3://v/trip.mov"},
        ),
        (
            {"audio": {"format": "mp3", "source": {"bytes": PIXELS}}},
            {"kind": "audio", "mime_type": "audio/mpeg", "size": len(PIXELS)},
        ),
    ],
)
def test_each_sdk_part_shape_is_read(part: dict[str, Any], expected: dict[str, Any]) -> None:
    [found] = attachments_of([{"type": "text", "text": "look"}, part])
    for key, value in expected.items():
        assert getattr(found, key) == value, key
    assert found.data is None  # bytes are never kept by default


@pytest.mark.parametrize(
    "part",
    [
        {"text": "not an attachment"},  # a Google or Bedrock text part
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}},
        {"image": {"format": "png"}},  # a Bedrock-like block without a source
        {"image": {"source": {}}, "document": {"source": {}}},  # two blocks in one: none
        {"type": "text", "text": "hi", "inline_data": {"data": "aGk="}},  # typed: by its type
    ],
)
def test_other_parts_are_no_attachments(part: dict[str, Any]) -> None:
    assert attachments_of([part]) == () and not is_attachment_part(part)


def test_raw_bytes_are_kept_only_when_asked_like_base64() -> None:
    for part in (
        {"inline_data": {"data": PIXELS, "mime_type": "image/png"}},
        {"image": {"format": "png", "source": {"bytes": PIXELS}}},
        {"type": "image", "data": PIXELS},  # an adapter's raw part (Ollama's images)
    ):
        [kept] = attachments_of([part], keep_bytes=len(PIXELS))
        assert kept.data is not None and base64.b64decode(kept.data) == PIXELS, part
        [hashed] = attachments_of([part])
        assert (hashed.data, hashed.sha256, hashed.size) == (None, DIGEST, len(PIXELS)), part


# -- the one reader of a message's text --------------------------------------------------
MIXED: list[Any] = [
    {"type": "text", "text": "Look at this:"},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}, "caption": "x"},
    "",
    {"type": "tool_result", "content": [{"type": "text", "text": "18 C"}]},
    {"inline_data": {"data": B64, "mime_type": "image/png"}},
    {"text": "and this"},
]


def test_content_text_reads_text_parts_only() -> None:
    assert content_text(MIXED) == "Look at this:\n18 C\nand this"
    assert content_text("as it is ") == "as it is "
    assert content_text(["a", " ", {"text": "b"}]) == "a\n \nb"  # as said
    assert content_text(None) == content_text(b"bytes") == content_text(42) == ""


def test_clients_extraction_and_turns_read_a_message_s_text_alike() -> None:
    from memtrellis.clients.payload import text_of
    from memtrellis.context import new_turn
    from memtrellis.extraction.normalize import normalize

    message = {"role": "user", "content": MIXED}
    [turn] = new_turn([message])
    [[normalised]] = normalize([message]).conversations
    assert text_of(MIXED) == turn["content"] == content_text(MIXED)
    # extraction's text names the attachments after the words (`mention`)
    assert normalised.content.split("\n")[:3] == content_text(MIXED).split("\n")
    assert normalised.content.endswith("[image: x]\n[image]")


def test_bytes_are_kept_only_when_asked_and_within_the_cap() -> None:
    part = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}
    [kept] = attachments_of([part], keep_bytes=len(PIXELS))
    assert kept.data is not None and base64.b64decode(kept.data) == PIXELS
    [capped] = attachments_of([part], keep_bytes=len(PIXELS) - 1)
    assert capped.data is None and capped.sha256 == DIGEST


def test_a_data_url_is_never_kept_as_a_url() -> None:
    with pytest.raises(ValueError, match="data: URL"):
        Attachment(kind="image", url=f"data:image/png;base64,{B64}")


def test_a_bad_attachment_bytes_setting_is_a_typed_error() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidInputError, match="attachment_bytes"):
            ExtractionConfig(attachment_bytes=bad)  # type: ignore[arg-type]


# -- through Memory.add and capture ------------------------------------------------------
def _photo_message(caption: str | None = "a red bicycle by the canal") -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{B64}"},
    }
    if caption:
        part["caption"] = caption
    return {
        "role": "user",
        "id": "m1",
        "content": [{"type": "text", "text": "Look what I bought today!"}, part],
    }


def _store_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file())


def test_add_keeps_the_image_as_a_source_and_its_caption_is_searchable(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder()) as memory:
        [item] = memory.add([_photo_message()])
        assert item.text == "Look what I bought today!\n[image: a red bicycle by the canal]"
        [source] = item.sources
        [image] = source.attachments
        assert (image.kind, image.mime_type, image.sha256, image.size, image.data) == (
            "image", "image/png", DIGEST, len(PIXELS), None,
        )  # fmt: skip
        hits = memory.recall("bicycle", k=3).items
        assert hits and hits[0].memory.id == item.id
        assert hits[0].memory.sources[0].attachments == (image,)  # recall shows the source
    assert B64[:200].encode() not in _store_bytes(tmp_path / "s")  # no raw bytes on disk


def test_an_image_alone_is_a_turn_of_its_own(tmp_path: Path) -> None:
    with Memory(tmp_path / "s", entity_id="ana", embedder=HashingEmbedder()) as memory:
        only = _photo_message()
        only["content"] = only["content"][1:]
        uncaptioned = {**_photo_message(caption=None), "id": "m2"}
        uncaptioned["content"] = uncaptioned["content"][1:]
        items = memory.add([only, uncaptioned], mode="fast")
        texts = sorted(t for i in items for t in i.text.split("\n"))
        assert texts == ["[image: a red bicycle by the canal]", "[image]"]
        assert sum(len(s.attachments) for i in items for s in i.sources) == 2


def test_capture_spools_no_raw_bytes_and_keeps_them_when_opted_in(tmp_path: Path) -> None:
    with Memory(tmp_path / "plain", entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.capture([_photo_message()])
        assert memory.flush(30)
        [item] = memory.list()
        assert item.sources[0].attachments[0].sha256 == DIGEST
    assert B64[:200].encode() not in _store_bytes(tmp_path / "plain")

    config = ExtractionConfig(attachment_bytes=4096)
    with Memory(
        tmp_path / "kept", entity_id="ana", embedder=HashingEmbedder(), extraction=config
    ) as memory:
        memory.capture([_photo_message()])
        assert memory.flush(30)
        [item] = memory.list()
        data = item.sources[0].attachments[0].data
        assert data is not None and base64.b64decode(data) == PIXELS


def test_summarised_reads_the_parts_an_adapter_passes_beside_the_text() -> None:
    # What a patched client or a LangChain message gives capture: text content, raw parts
    # beside it. The spool gets their summary, never the base64.
    message = {**_photo_message(), "content": "Look what I bought today!"}
    message["attachments"] = [_photo_message()["content"][1]]
    spooled = json.dumps(summarised([message]))
    assert B64[:200] not in spooled
    assert attachments_of(json.loads(spooled)[0]["attachments"]) == attachments_of(
        _photo_message()["content"]
    )


def test_summarised_moves_parts_out_of_the_content_and_reads_back_the_same() -> None:
    spooled = json.loads(json.dumps(summarised([_photo_message()])))  # as the spool has it
    assert spooled[0]["content"] == [{"type": "text", "text": "Look what I bought today!"}]
    assert attachments_of(spooled[0]["attachments"]) == attachments_of(_photo_message()["content"])
