"""PDF and Word files go through markitdown (the `documents` extra, in the dev extra so
this runs): a real PDF and a real .docx, written by the test, become chunk memories whose
source is the document, and recall finds the chunk that answers."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from document_files import pdf_bytes
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

pytest.importorskip("markitdown")

FREEZE = "The deploy freeze starts every Friday at 15:00."
TRAVEL = "Travel over 500 euros needs approval from a director."


def write_pdf(path: Path, lines: list[str]) -> Path:
    """A one-page PDF with the lines as Helvetica text."""
    path.write_bytes(pdf_bytes(lines))
    return path


def write_docx(path: Path, paragraphs: list[str]) -> Path:
    """The smallest Word document Word opens: content types, one relationship, the body."""
    body = "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in paragraphs)
    with zipfile.ZipFile(path, "w") as docx:
        docx.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
            "</Types>",
        )
        docx.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Target="word/document.xml" Type="http://schemas.'
            'openxmlformats.org/officeDocument/2006/relationships/officeDocument"/>'
            "</Relationships>",
        )
        docx.writestr(
            "word/document.xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body>{body}</w:body></w:document>",
        )
    return path


@pytest.mark.parametrize("kind", ["pdf", "docx"])
def test_a_pdf_or_word_file_becomes_memories_with_its_source(kind: str, tmp_path: Path) -> None:
    lines = ["Team handbook", FREEZE, TRAVEL]
    writer = write_pdf if kind == "pdf" else write_docx
    document = writer(tmp_path / f"handbook.{kind}", lines)

    with Memory(tmp_path / "store", entity_id="team", embedder=HashingEmbedder()) as memory:
        chunks = memory.add(document)
        text = " ".join(chunk.text for chunk in chunks)
        assert FREEZE in text and TRAVEL in text
        sources = [chunk.sources[0] for chunk in chunks]
        assert {source.kind.value for source in sources} == {"doc"}
        assert {source.document for source in sources} == {str(document)}
        assert sources[0].message_id == f"{document}#0"

        top = memory.recall("When does the deploy freeze start?", k=1).items[0]
        assert FREEZE in top.memory.text
