"""Images and documents a user sends through a patched OpenAI or Anthropic client are
kept as sources of the captured turn (the real SDKs over mock transports, real Chroma)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2
import openai

from memtrellis import Memory
from sdk_fakes import ANTHROPIC_KEY, CLAUDE_MODEL, OPENAI_KEY, captured, chat_completion, message
from test_attachments import B64, DIGEST, _photo_message


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
