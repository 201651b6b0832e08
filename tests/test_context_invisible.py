"""Invisible characters never reach the memory context as such (issue 19, item 10).

Zero-width characters, bidirectional controls (U+202E and the others), TAG characters
(U+E0000-E007F), fillers and runs of variation selectors are written as character
references in the rendered block, so a model reading the prompt sees that they are
there; the stored text keeps them as given, and ``html.unescape`` of a rendered line
gives it back. A zero-width joiner between two emoji (the family emoji) stays, so emoji
render whole. Real Chroma ``PersistentClient``; only the embedder is fake.
"""

from __future__ import annotations

import html
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memtrellis import Memory
from memtrellis.context import build_context, escape_line
from memtrellis.testing import HashingEmbedder

ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e"]
BIDI = ["\u200e", "\u200f", "\u061c", *map(chr, range(0x202A, 0x202F))]
BIDI += [*map(chr, range(0x2066, 0x206A))]
TAGS = ["\U000e0001", *map(chr, range(0xE0020, 0xE0080))]
FILLERS = ["\u115f", "\u1160", "\u3164", "\uffa0", "\u034f", "\ufe00", "\U000e0100"]
CLASSES = {"zero-width": ZERO_WIDTH, "bidi": BIDI, "tags": TAGS, "fillers": FILLERS}
FORBIDDEN = {c for chars in CLASSES.values() for c in chars}
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man, woman, girl: one emoji


def _visible_only(rendered: str) -> None:
    for at, char in enumerate(rendered):
        if char == "\u200d":  # allowed only inside an emoji sequence
            assert unicodedata.category(rendered[at + 1]) == "So", rendered
            continue
        assert char not in FORBIDDEN or char in "\ufe0e\ufe0f", (hex(ord(char)), rendered)
        assert unicodedata.category(char) != "Cf", (hex(ord(char)), rendered)


def test_each_class_is_escaped_in_the_context_and_kept_in_the_store(tmp_path: Path) -> None:
    texts = {
        name: "Alice pays " + "".join(chars) + f"the {name} bill to \u202eekim\u202c"
        for name, chars in CLASSES.items()
    }
    texts["family"] = f"Alice sent {FAMILY} to her sister"
    with Memory(tmp_path / "s", entity_id="alice", embedder=HashingEmbedder()) as memory:
        stored = {name: memory.add(text)[0] for name, text in texts.items()}
        said = memory.add(
            [{"role": "user", "name": "Bo\u202eb\u200b", "content": "I pay the \u2066bill\u2069"}]
        )[0]
        result = memory.recall("Alice pays the bill", k=20)
        context = build_context(result, token_budget=20_000)
        for name, item in stored.items():
            assert memory.get(item.id).text == texts[name]  # stored as given
        assert memory.get(said.id).text == "I pay the \u2066bill\u2069"
    assert context.facts + context.messages == len(texts) + 1
    _visible_only(context.text)
    assert "&#x202E;ekim&#x202C;" in context.text
    assert "&#xE0041;" in context.text
    assert FAMILY in context.text  # the emoji stays whole
    lines = [html.unescape(line) for line in context.text.splitlines()]
    for text in texts.values():
        assert any(text in line for line in lines), text  # unescaping gives it back


def test_joiners_and_selectors_outside_emoji_are_escaped() -> None:
    assert escape_line("pass\u200dword") == "pass&#x200D;word"
    assert escape_line("\u200d\U0001f469") == "&#x200D;\U0001f469"
    assert escape_line("\u2764\ufe0f") == "\u2764\ufe0f"  # one presentation selector
    assert escape_line("a\ufe0f\ufe0f\ufe0f") == "a\ufe0f&#xFE0F;&#xFE0F;"  # a run: data
    assert escape_line("\U000e0100hidden") == "&#xE0100;hidden"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_no_format_character_survives_rendering(text: str) -> None:
    rendered = escape_line(text)
    _visible_only(rendered)
    assert html.unescape(rendered) == " ".join(text.split())  # the stored text, as data
