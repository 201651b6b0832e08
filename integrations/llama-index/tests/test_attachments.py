"""An image or document block a user sends through LlamaIndex is kept as a source of the
turn (MemtrellisLLM and the memory block's transcript), searchable by its title."""

from __future__ import annotations

import hashlib

from fakes import scripted_llm
from llama_index.core.base.llms.types import DocumentBlock, ImageBlock, TextBlock
from llama_index.core.llms import ChatMessage
from memtrellis import Memory

from llama_index.memory.memtrellis import MemtrellisLLM
from llama_index.memory.memtrellis._transcript import conversation

PDF = b"%PDF-1.4 a lease of two pages" * 10


def test_a_document_block_is_captured_with_its_title_and_bytes_hashed(memory: Memory) -> None:
    inner, _ = scripted_llm("The lease runs until March 2027.")
    llm = MemtrellisLLM(llm=inner, memory=memory, mode="fast")
    lease = DocumentBlock(
        data=PDF, title="Lease for Rua Augusta 12", document_mimetype="application/pdf"
    )
    llm.chat([ChatMessage(role="user", blocks=[TextBlock(text="When does it end?"), lease])])
    assert memory.flush(timeout=60)

    asked = next(i for i in memory.list() if i.sources[0].role == "user")
    assert asked.text == "When does it end?\n[file: Lease for Rua Augusta 12]"
    [document] = asked.sources[0].attachments
    assert (document.kind, document.mime_type, document.size, document.data) == (
        "file", "application/pdf", len(PDF), None,
    )  # fmt: skip
    assert document.sha256 == hashlib.sha256(PDF).hexdigest()
    assert memory.recall("lease Augusta", k=1).items[0].memory.id == asked.id


def test_the_transcript_keeps_an_image_only_message() -> None:
    photo = ImageBlock(url="https://x.test/cat.png", image_mimetype="image/png")
    said = conversation([ChatMessage(role="user", blocks=[photo])])
    assert said == [
        {
            "role": "user",
            "content": "",
            "attachments": [
                {"type": "image", "url": "https://x.test/cat.png", "mime_type": "image/png"}
            ],
        }
    ]
