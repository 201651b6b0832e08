"""Token-bounded chunking shared by chat and document windows (private).

Text is cut into *units*: sentences within paragraphs, and token-sized pieces of any
sentence too long for the budget. Units are spans into the original text, so a chunk is
always a verbatim slice of it. `pack` then groups consecutive units into chunks
within a token budget, each chunk starting with trailing units of the previous one.

Token counts are estimated from per-unit counts (each unit encoded once) plus one token
per gap, and every chunk is then counted exactly once; in the rare case the exact count
exceeds the budget (the tokeniser merged across a gap), the chunk loses units from its end.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import NamedTuple

from memtrellis.errors import InvalidInputError
from memtrellis.tokens import count_tokens, get_encoding

__all__ = ["Chunk", "Unit", "check_budget", "chunk_spans", "pack", "sentence_units", "split_span"]

# Paragraphs are separated by a blank line.
_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A sentence ends at . ! ? (followed by whitespace) or at Chinese 。！？ (followed by
# anything), each with closing quotes or brackets; a line break also ends one, so that
# list items and headings of Markdown stay apart. Matches start at the beginning of a
# punctuation run (lookbehind) so that a long run of dots is scanned once, not once per dot.
_SENTENCE_END = re.compile(
    r"(?<![.!?…])[.!?…]+[\"'”’)\]]*(?=\s|$)|[。！？]+[\"'”’」』）)\]]*|\n",
)


class Unit(NamedTuple):
    """A span ``text[start:end]`` (never empty, no surrounding whitespace)."""

    start: int
    end: int
    paragraph: int  # units of one paragraph share the number


def check_budget(max_tokens: int, overlap_tokens: int) -> None:
    """Raise InvalidInputError unless ``0 <= overlap_tokens < max_tokens``."""
    if max_tokens < 1:
        raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens}")
    if not 0 <= overlap_tokens < max_tokens:
        raise InvalidInputError(
            f"overlap_tokens must be >= 0 and < max_tokens ({max_tokens}), got {overlap_tokens}"
        )


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_units(text: str) -> list[Unit]:
    """Sentence spans of ``text``, numbered by paragraph.

    Examples:
        >>> text = "Tea. Coffee!\\n\\n我喜欢茶。也喜欢咖啡"
        >>> [text[u.start:u.end] for u in sentence_units(text)]
        ['Tea.', 'Coffee!', '我喜欢茶。', '也喜欢咖啡']
        >>> [u.paragraph for u in sentence_units(text)]
        [0, 0, 1, 1]
    """
    units: list[Unit] = []
    bounds = [(m.start(), m.end()) for m in _PARAGRAPH.finditer(text)]
    bounds.append((len(text), len(text)))
    pos = 0
    for number, (para_end, next_start) in enumerate(bounds):
        begin = pos
        for match in _SENTENCE_END.finditer(text, pos, para_end):
            start, end = _trimmed(text, begin, match.end())
            if start < end:
                units.append(Unit(start, end, number))
            begin = match.end()
        start, end = _trimmed(text, begin, para_end)
        if start < end:
            units.append(Unit(start, end, number))
        pos = next_start
    return units


def split_span(
    text: str, start: int, end: int, fits: Callable[[int, int], bool], budget: int
) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into spans that each satisfy ``fits`` (about ``budget`` tokens).

    Cuts fall on token boundaries, moved back to the last whitespace in the second half
    of a piece when there is one. The text is encoded once; offsets map tokens to
    characters.

    Raises:
        InvalidInputError: Not even one token fits (the budget is too small).
    """
    enc = get_encoding()
    sub = text[start:end]
    tokens = enc.encode_ordinary(sub)
    _, offsets = enc.decode_with_offsets(tokens)
    count = len(tokens)
    spans: list[tuple[int, int]] = []
    tok = 0
    while tok < count:
        piece_start = start + offsets[tok]
        step = max(1, budget)
        while True:
            cut_tok = min(tok + step, count)
            cut = start + (offsets[cut_tok] if cut_tok < count else len(sub))
            if cut_tok < count:
                space = _last_space(text, piece_start + (cut - piece_start) // 2, cut)
                cut = space if space is not None else cut
            lo, hi = _trimmed(text, piece_start, cut)
            if lo >= hi or fits(lo, hi):
                break
            if step == 1:
                raise InvalidInputError(
                    "max_tokens is too small to hold even one token of this text "
                    "after the message header; raise max_tokens"
                )
            step = max(1, step - max(1, step // 8))
        if lo < hi:
            spans.append((lo, hi))
        next_tok = bisect_left(offsets, cut - start)
        tok = next_tok if next_tok > tok else tok + 1
    return spans


def _last_space(text: str, lo: int, hi: int) -> int | None:
    for index in range(hi - 1, lo, -1):
        if text[index].isspace():
            return index
    return None


class Chunk(NamedTuple):
    """Units ``[first, last)`` of a packing and the exact token count of their text."""

    first: int
    last: int
    tokens: int


def pack(
    costs: Sequence[int],
    *,
    max_tokens: int,
    overlap_tokens: int,
    measure: Callable[[int, int], int],
    base: int = 0,
    prefer: Callable[[int], bool] | None = None,
) -> list[Chunk]:
    """Group consecutive units into chunks of at most ``max_tokens``, with overlap.

    Args:
        costs: Token count of each unit on its own; each must fit in a chunk alone.
        max_tokens: Budget of one chunk as ``measure`` counts it.
        overlap_tokens: A chunk starts with trailing units of the previous chunk whose
            estimated cost is at most this (never all of it, so every chunk adds a unit).
        measure: Exact token count of the chunk made of units ``[first, last)``.
        base: Tokens every chunk spends before its units (a header).
        prefer: Whether a chunk may preferably end before unit ``k`` (a paragraph
            start); a chunk backs off to such a boundary if it stays at least half full.

    Examples:
        >>> pack([3, 3, 3], max_tokens=7, overlap_tokens=4, measure=lambda a, b: 4 * (b - a) - 1)
        [Chunk(first=0, last=2, tokens=7), Chunk(first=1, last=3, tokens=7)]
    """
    chunks: list[Chunk] = []
    count = len(costs)
    start = fresh = 0
    while start < count:
        total = base
        end = start
        totals: list[int] = []
        while end < count:
            add = costs[end] + (1 if end > start else 0)
            if total + add > max_tokens and end > fresh:
                break
            total += add
            totals.append(total)
            end += 1
        if end < count and prefer is not None and not prefer(end):
            for boundary in range(end - 1, fresh, -1):
                if prefer(boundary) and totals[boundary - start - 1] >= max_tokens // 2:
                    end = boundary
                    break
        exact = measure(start, end)
        while exact > max_tokens and end - 1 > max(start, fresh):
            end -= 1
            exact = measure(start, end)
        while exact > max_tokens and start < fresh:
            start += 1
            exact = measure(start, end)
        chunks.append(Chunk(start, end, exact))
        if end >= count:
            break
        start = _overlap_start(costs, start, end, overlap_tokens, max_tokens - base)
        fresh = end
    return chunks


def _overlap_start(
    costs: Sequence[int], start: int, end: int, overlap_tokens: int, room: int
) -> int:
    """First unit of the next chunk: trailing units within ``overlap_tokens``.

    The overlap leaves room for the next unit (``costs[end]``) and never takes the
    whole previous chunk.
    """
    new_start = end
    spent = 0
    while new_start - 1 > start:
        cost = costs[new_start - 1] + 1
        if spent + cost > overlap_tokens:
            break
        spent += cost
        new_start -= 1
    while new_start < end and spent + costs[end] > room:
        spent -= costs[new_start] + 1
        new_start += 1
    return new_start


def chunk_spans(
    text: str, *, max_tokens: int, overlap_tokens: int, prefix: str = ""
) -> list[tuple[int, int, int]]:
    """Chunk ``text`` by paragraph, sentence, then tokens: ``(start, end, tokens)`` spans.

    ``tokens`` counts ``prefix + text[start:end]`` exactly and is at most ``max_tokens``.

    Examples:
        >>> text = "One. Two.\\n\\nThree."
        >>> [text[s:e] for s, e, _ in chunk_spans(text, max_tokens=5, overlap_tokens=0)]
        ['One. Two.', 'Three.']
    """
    check_budget(max_tokens, overlap_tokens)
    base = count_tokens(prefix) if prefix else 0

    def exact(lo: int, hi: int) -> int:
        return count_tokens(prefix + text[lo:hi])

    def fits(lo: int, hi: int) -> bool:
        return exact(lo, hi) <= max_tokens

    units: list[Unit] = []
    costs: list[int] = []
    for unit in sentence_units(text):
        cost = count_tokens(text[unit.start : unit.end])
        if base + cost + 1 <= max_tokens or fits(unit.start, unit.end):
            units.append(unit)
            costs.append(cost)
            continue
        budget = max(1, max_tokens - base - 1)
        for lo, hi in split_span(text, unit.start, unit.end, fits, budget):
            units.append(Unit(lo, hi, unit.paragraph))
            costs.append(count_tokens(text[lo:hi]))
    if not units:
        return []
    chunks = pack(
        costs,
        max_tokens=max_tokens,
        overlap_tokens=overlap_tokens,
        base=base,
        measure=lambda a, b: exact(units[a].start, units[b - 1].end),
        prefer=lambda k: units[k].paragraph != units[k - 1].paragraph,
    )
    return [(units[c.first].start, units[c.last - 1].end, c.tokens) for c in chunks]
