"""An image a user sends through a LangChain chat model is kept as a source of the turn
and its caption is recalled into a later call (the wrapper on the real message classes)."""

from __future__ import annotations

import base64
import hashlib

from langchain_core.messages import HumanMessage
from memtrellis import Memory

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper

PIXELS = bytes(range(256)) * 3
B64 = base64.b64encode(PIXELS).decode()


def test_an_image_block_is_captured_and_its_caption_recalled_next_session(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["What a lovely bike!", "A red bicycle, by the canal."]))
    chat = ChatMemoryWrapper(inner, memory=memory)
    photo = HumanMessage(
        content_blocks=[
            {"type": "text", "text": "Look what I bought today!"},
            {"type": "image", "base64": B64, "mime_type": "image/png", "alt": "a red bicycle"},
        ]
    )
    chat.invoke([photo], config={"configurable": {"session_id": "s1"}})
    assert memory.flush(30)

    [asked, answered] = sorted(memory.list(), key=lambda m: m.sources[0].role != "user")
    assert asked.text == "Look what I bought today!\n[image: a red bicycle]"
    [image] = asked.sources[0].attachments
    assert (image.kind, image.sha256, image.data) == (
        "image", hashlib.sha256(PIXELS).hexdigest(), None,
    )  # fmt: skip
    assert answered.text == "What a lovely bike!"

    chat.invoke(
        [HumanMessage("Which bicycle did I buy?")], config={"configurable": {"session_id": "s2"}}
    )
    context = inner.sent()[0].content
    assert "[image: a red bicycle]" in context  # the caption reached the model
    assert B64[:100] not in context
