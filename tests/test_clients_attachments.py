"""Images, documents, video and audio a user sends through a patched client are kept as
sources of the captured turn: OpenAI, Anthropic, Google Gen AI, Bedrock and Ollama, each
the real SDK over a mock transport, with real Chroma; recall shows them, their captions
and names are searchable, and no raw bytes reach any file of the store or the spool."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from memtrellis import Attachment, ExtractionConfig, Memory
from memtrellis.testing import HashingEmbedder
from provider_fakes import (
    BedrockWire,
    GoogleWire,
    OllamaWire,
    bedrock_client,
    google_client,
    ollama_client,
    store_bytes,
)
from sdk_fakes import ANTHROPIC_KEY, CLAUDE_MODEL, OPENAI_KEY, captured, chat_completion, message
from test_attachments import B64, DIGEST, PDF, PIXELS, _photo_message


# -- from patched SDK clients ------------------------------------------------------------
def test_a_patched_openai_client_captures_the_image_a_user_sent(memory: Memory) -> None:
    sent: list[dict[str, Any]] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=chat_completion("What a lovely bike!"))

    http = httpx2.Client(transport=httpx2.MockTransport(handle))
    client = memory.register(openai.OpenAI(api_key=OPENAI_KEY, http_client=http))
    photo = _photo_message()
    photo.pop("id")
    client.chat.completions.create(model="gpt-4o-mini", messages=[photo])
    assert sent[0]["messages"][-1]["content"][1]["image_url"]["url"].startswith("data:image/png")

    items = captured(memory)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", "Look what I bought today!\n[image: a red bicycle by the canal]"),
        ("assistant", "What a lovely bike!"),
    ]
    [image] = items[0].sources[0].attachments
    assert (image.sha256, image.data) == (DIGEST, None)


def test_a_patched_anthropic_client_captures_a_document_by_its_title(memory: Memory) -> None:
    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=message("The plan moves launch to July."))

    http = httpx2.Client(transport=httpx2.MockTransport(handle))
    client = memory.register(anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=http))
    document = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": B64},
        "title": "Q3 launch plan",
    }
    text = {"type": "text", "text": "What does this say about the launch?"}
    client.messages.create(
        model=CLAUDE_MODEL, max_tokens=64, messages=[{"role": "user", "content": [document, text]}]
    )
    [asked, answer] = captured(memory)
    assert asked.text == "What does this say about the launch?\n[file: Q3 launch plan]"
    assert asked.sources[0].attachments[0].mime_type == "application/pdf"
    assert answer.text == "The plan moves launch to July."


# -- Google Gen AI, Bedrock and Ollama: the real SDKs over their mock transports ------------
RAW = PIXELS[8:400]  # a stretch of the raw bytes, to look for in every file of the store
CAPTION = "a red bicycle by the canal"
URLSAFE = base64.urlsafe_b64encode(PIXELS).decode().rstrip("=")  # as JSON may carry them


def _nothing_raw_on_disk(memory: Memory) -> None:
    on_disk = store_bytes(memory)  # every file of the store, the spool included
    assert B64[:200].encode() not in on_disk and RAW not in on_disk


def _found_by_caption(memory: Memory, query: str, expected: Attachment) -> None:
    """Recall finds the message by the words naming its attachment, and shows the
    attachment in the source it returns."""
    hits = [h for h in memory.recall(query, k=3).items if h.memory.sources[0].attachments]
    assert hits, query
    assert expected in hits[0].memory.sources[0].attachments


def test_a_patched_google_client_keeps_inline_and_file_parts(memory: Memory) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    wire = GoogleWire("What a lovely bike!", "The lease ends in May.")
    client = memory.register(google_client(wire))
    assert isinstance(client, genai.Client)
    photo = types.Part(
        inline_data=types.Blob(data=PIXELS, mime_type="image/png", display_name=CAPTION)
    )
    client.models.generate_content(
        model="gemini-2.5-flash",
        contents=[types.Content(role="user", parts=[types.Part(text="My new bike!"), photo])],
    )
    lease = types.Part.from_uri(file_uri="gs://docs/lease.pdf", mime_type="application/pdf")
    client.models.generate_content(
        model="gemini-2.5-flash", contents=["When does the lease end?", lease]
    )

    sent = wire.requests[0]["contents"][0]["parts"][1]["inlineData"]
    assert base64.urlsafe_b64decode(sent["data"]) == PIXELS  # sent; memory keeps a hash
    bike, reply, question, _ = captured(memory)
    assert bike.text == f"My new bike!\n[image: {CAPTION}]"
    [image] = bike.sources[0].attachments
    assert (image.kind, image.mime_type, image.sha256, image.size, image.data) == (
        "image", "image/png", DIGEST, len(PIXELS), None,
    )  # fmt: skip
    assert reply.sources[0].attachments == ()
    assert question.text == "When does the lease end?\n[file]"
    [pdf] = question.sources[0].attachments
    assert (pdf.kind, pdf.url, pdf.mime_type) == ("file", "gs://docs/lease.pdf", "application/pdf")
    _found_by_caption(memory, "red bicycle", image)
    _nothing_raw_on_disk(memory)


async def test_an_async_google_client_reads_dict_parts_in_either_spelling(memory: Memory) -> None:
    pytest.importorskip("google.genai")
    wire = GoogleWire("Lovely.")
    client = memory.register(google_client(wire))
    parts = [
        {"text": "Our holiday video"},
        {"inlineData": {"data": URLSAFE, "mimeType": "video/mp4", "displayName": "beach at dusk"}},
    ]
    await client.aio.models.generate_content(
        model="gemini-2.5-flash", contents=[{"role": "user", "parts": parts}]
    )

    asked, _ = captured(memory)
    [video] = asked.sources[0].attachments
    assert asked.text == "Our holiday video\n[video: beach at dusk]"
    assert (video.kind, video.sha256, video.data) == ("video", DIGEST, None)
    _found_by_caption(memory, "beach at dusk", video)
    _nothing_raw_on_disk(memory)


def test_a_patched_bedrock_client_keeps_image_document_and_video_blocks(memory: Memory) -> None:
    pytest.importorskip("boto3")
    wire = BedrockWire("Noted: the lease and the photo.")
    client = memory.register(bedrock_client(wire))
    content = [
        {"text": "Here is the flat and its lease."},
        {"image": {"format": "png", "source": {"bytes": PIXELS}}},
        {
            "document": {
                "format": "pdf",
                "name": "lease",
                "context": "the signed lease of the flat in Porto",
                "source": {"s3Location": {"uri": "s3://docs/lease.pdf"}},
            }
        },
        {"video": {"format": "mp4", "source": {"s3Location": {"uri": "s3://v/tour.mp4"}}}},
    ]
    client.converse(
        modelId="anthropic.claude-sonnet-5-5-v1:0", messages=[{"role": "user", "content": content}]
    )

    sent = wire.last["messages"][0]["content"]
    assert sent[1]["image"]["source"]["bytes"] == B64  # botocore sent the bytes, base64
    asked, answer = captured(memory)
    assert asked.text == (
        "Here is the flat and its lease.\n[image]\n"
        "[file: the signed lease of the flat in Porto]\n[video]"
    )
    image, lease, video = asked.sources[0].attachments
    assert (image.sha256, image.size, image.mime_type) == (DIGEST, len(PIXELS), "image/png")
    assert (lease.name, lease.url, lease.mime_type) == ("lease", "s3://docs/lease.pdf", PDF)
    assert (video.kind, video.url, video.mime_type) == ("video", "s3://v/tour.mp4", "video/mp4")
    assert answer.text == "Noted: the lease and the photo."
    _found_by_caption(memory, "signed lease Porto", lease)
    _nothing_raw_on_disk(memory)


def test_a_patched_ollama_client_keeps_images_as_bytes_paths_and_base64(
    memory: Memory, tmp_path: Path
) -> None:
    pytest.importorskip("ollama")
    wire = OllamaWire("Three photos of the same red bike.")
    client = memory.register(ollama_client(wire))
    photo = tmp_path / "red-bicycle.png"
    photo.write_bytes(PIXELS)
    client.chat(
        model="llava:7b",
        messages=[
            {"role": "user", "content": "Are these the same?", "images": [PIXELS, str(photo), B64]}
        ],
    )

    assert wire.last["messages"][-1]["images"] == [B64, B64, B64]  # what the SDK sent
    asked, _ = captured(memory)
    first, second, third = asked.sources[0].attachments
    assert {first.sha256, second.sha256, third.sha256} == {DIGEST}
    assert (second.name, second.mime_type) == ("red-bicycle.png", "image/png")
    assert asked.text == "Are these the same?\n[image]\n[image: red-bicycle.png]\n[image]"
    _found_by_caption(memory, "red-bicycle.png", second)
    _nothing_raw_on_disk(memory)


async def test_an_async_ollama_client_keeps_an_sdk_image(memory: Memory) -> None:
    ollama = pytest.importorskip("ollama")
    wire = OllamaWire("A bike.")
    client = memory.register(ollama_client(wire, asynchronous=True))
    message = ollama.Message(role="user", content="What is it?", images=[ollama.Image(value=B64)])
    await client.chat(model="llava:7b", messages=[message])

    asked, _ = captured(memory)
    [image] = asked.sources[0].attachments
    assert (image.sha256, asked.text) == (DIGEST, "What is it?\n[image]")
    _nothing_raw_on_disk(memory)


def test_bytes_opted_in_are_kept_from_a_patched_client(tmp_path: Path) -> None:
    pytest.importorskip("boto3")
    config = ExtractionConfig(attachment_bytes=len(PIXELS))
    with Memory(
        tmp_path / "s", entity_id="ana", embedder=HashingEmbedder(), extraction=config
    ) as memory:
        client = memory.register(bedrock_client(BedrockWire("OK")))
        content = [{"text": "Keep it"}, {"image": {"format": "png", "source": {"bytes": PIXELS}}}]
        client.converse(modelId="m", messages=[{"role": "user", "content": content}])
        asked, _ = captured(memory)
        [image] = asked.sources[0].attachments
        assert image.data is not None and base64.b64decode(image.data) == PIXELS


def test_google_uploaded_files_and_typed_parts_are_read_from_contents() -> None:
    pytest.importorskip("google.genai")
    from google.genai import types

    from memtrellis.attachments import attachments_of
    from memtrellis.clients.google import google_conversation

    uri = "https://generativelanguage.googleapis.com/v1beta/files/abc123"
    uploaded = types.File(
        name="files/abc123", uri=uri, mime_type="application/pdf", display_name="lease.pdf"
    )
    photo = types.Part.from_bytes(data=PIXELS, mime_type="image/png")
    [message] = google_conversation({"contents": ["Summarise these", uploaded, photo]})

    assert message["content"] == "Summarise these"
    found = [(a.kind, a.url, a.name, a.sha256) for a in attachments_of(message["attachments"])]
    assert found == [("file", uri, "lease.pdf", None), ("image", None, None, DIGEST)]
