"""Windows: slices of a conversation or a document small enough for one extraction call.

A conversation is first cut into coarse *scenes* of at most ``max_messages`` messages,
consecutive scenes sharing ``message_overlap`` messages. Each scene is then packed into
token windows: rendered lines (`render_turn`) are added while the window stays
within ``max_tokens`` (o200k_base), and the next window starts with trailing lines of
the previous one worth up to ``overlap_tokens``. A message longer than a window is split
on sentence or whitespace boundaries into pieces, each a window of its own.

Sources grow in step with the text: ``Window.sources`` are exactly the messages (or
pieces of one) whose text is in ``Window.text``, in order. Each line is encoded once and
each window counted once; 2,000 messages take well under a second.

Examples:
    >>> from datetime import datetime, timezone
    >>> from memtrellis.extraction.model import Turn
    >>> at = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    >>> turns = [Turn(0, i, "user", f"Note number {i}.", f"m{i}", at) for i in range(12)]
    >>> [len(scene) for scene in scenes(turns)]
    [10, 4]
    >>> [w.sources[0].message_id for w in chat_windows(turns)]
    ['m0', 'm8']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timezone

from memtrellis.errors import InvalidInputError
from memtrellis.extraction._split import check_budget, chunk_spans, pack
from memtrellis.extraction.language import cjk_counts, detect_language, language_of
from memtrellis.extraction.model import Document, Turn, Window
from memtrellis.tokens import count_tokens
from memtrellis.types import SourceKind, SourceRef

__all__ = [
    "BURST_GAP",
    "BURST_MAX_TOKENS",
    "bursts",
    "chat_windows",
    "document_windows",
    "render_turn",
    "scenes",
]

#: Longest pause, in seconds, between two messages of one burst.
BURST_GAP = 300.0
#: Most tokens (o200k_base) of the messages' text in one burst.
BURST_MAX_TOKENS = 160


def _header(turn: Turn) -> str:
    when = turn.timestamp
    when = when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when
    stamp = when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
    who = f"{turn.speaker} ({turn.role})" if turn.speaker else turn.role
    return f"[{turn.message_id}] {stamp} {who}: "


def render_turn(turn: Turn) -> str:
    """The line the LLM sees for ``turn``; the bracketed id lets it cite the message.

    The time is shown in UTC. The content is kept verbatim (it may span several lines).

    Examples:
        >>> from datetime import datetime, timezone
        >>> at = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
        >>> render_turn(Turn(0, 0, "user", "I moved to Lyon", "m1", at, speaker="Alice"))
        '[m1] 2026-03-01 10:00 Alice (user): I moved to Lyon'
        >>> render_turn(Turn(0, 1, "assistant", "Noted.", "m2", at))
        '[m2] 2026-03-01 10:00 assistant: Noted.'
    """
    return _header(turn) + turn.content


def _scene_bounds(count: int, max_messages: int, overlap: int) -> list[tuple[int, int]]:
    if max_messages < 1:
        raise InvalidInputError(f"max_messages must be >= 1, got {max_messages}")
    if not 0 <= overlap < max_messages:
        raise InvalidInputError(
            f"the message overlap must be >= 0 and < max_messages ({max_messages}), got {overlap}"
        )
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < count:
        end = min(start + max_messages, count)
        bounds.append((start, end))
        if end == count:
            break
        start = end - overlap
    return bounds


def scenes(turns: Sequence[Turn], *, max_messages: int = 10, overlap: int = 2) -> list[list[Turn]]:
    """Cut one conversation into scenes of at most ``max_messages`` turns.

    Consecutive scenes share ``overlap`` turns; the last scene may be shorter. No scene
    lies entirely inside the previous one.

    Raises:
        InvalidInputError: ``max_messages < 1`` or not ``0 <= overlap < max_messages``.

    Examples:
        >>> [[t for t in scene] for scene in scenes("abcdefg", max_messages=4, overlap=1)]
        [['a', 'b', 'c', 'd'], ['d', 'e', 'f', 'g']]
    """
    return [list(turns[lo:hi]) for lo, hi in _scene_bounds(len(turns), max_messages, overlap)]


def _same_voice(a: Turn, b: Turn, undated: bool) -> bool:
    return (
        a.role == b.role
        and a.speaker == b.speaker
        and a.conversation == b.conversation
        and (undated or (a.timed and b.timed))
    )


def bursts(
    turns: Sequence[Turn],
    *,
    max_gap: float = BURST_GAP,
    max_tokens: int = BURST_MAX_TOKENS,
    undated: bool = False,
) -> list[list[Turn]]:
    """Cut turns into bursts: consecutive messages of one speaker, said close together.

    People type one thought as several short messages ("omg", "I got the job!!", "start
    monday"); alone, each is a poor memory. A burst grows while the next turn has the
    same role and speaker, comes at most ``max_gap`` seconds after the one before it
    (a clock that goes backwards ends a burst too), and keeps the burst's text within
    ``max_tokens``. A turn of another speaker, a long pause or a long message always
    ends it; a message longer than ``max_tokens`` is a burst of its own. ``max_gap=0``
    still merges messages of one moment (a chat log dated by session). Messages whose
    time the caller did not give (``Turn.timed`` false) are bursts of their own: nothing
    says they were said close together; ``undated=True`` (one captured turn: sent before
    one reply) lets them form bursts too.

    Raises:
        InvalidInputError: ``max_gap < 0`` or ``max_tokens < 1``.

    Examples:
        >>> from datetime import datetime, timedelta, timezone
        >>> at = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
        >>> def say(i, who, text, minutes=0):
        ...     return Turn(0, i, "user", text, f"m{i}", at + timedelta(minutes=minutes), who)
        >>> chat = [say(0, "Ana", "omg"), say(1, "Ana", "I got the job!!"),
        ...         say(2, "Bo", "congrats"), say(3, "Ana", "start monday", minutes=1),
        ...         say(4, "Ana", "also: moving", minutes=30)]
        >>> [[t.message_id for t in burst] for burst in bursts(chat)]
        [['m0', 'm1'], ['m2'], ['m3'], ['m4']]
    """
    if max_gap < 0 or max_tokens < 1:
        raise InvalidInputError(
            f"a burst needs max_gap >= 0 and max_tokens >= 1, got {max_gap} and {max_tokens}"
        )
    out: list[list[Turn]] = []
    used = 0
    for turn in turns:
        tokens = count_tokens(turn.content)
        if out:
            last = out[-1][-1]
            pause = (turn.timestamp - last.timestamp).total_seconds()
            if (
                _same_voice(last, turn, undated)
                and 0 <= pause <= max_gap
                and used + tokens <= max_tokens
            ):
                out[-1].append(turn)
                used += tokens
                continue
        out.append([turn])
        used = tokens
    return out


@dataclass(frozen=True)
class _Line:
    text: str  # rendered, header included
    tokens: int
    content: str  # the message text (or a piece of it) that the source holds
    source: SourceRef
    han: int  # cjk_counts(content), counted once however many windows share the line
    letters: int


@dataclass(frozen=True)
class _Group:
    lines: tuple[_Line, ...]
    tokens: int  # exact count of the joined lines


def _lines(turn: Turn, max_tokens: int, overlap_tokens: int) -> list[_Line]:
    """One line for ``turn``, or one per piece when it does not fit in a window."""
    line = render_turn(turn)
    tokens = count_tokens(line)
    if tokens <= max_tokens:
        return [_Line(line, tokens, turn.content, turn.source(), *cjk_counts(turn.content))]
    header = _header(turn)
    if count_tokens(header) >= max_tokens:
        raise InvalidInputError(
            f"max_tokens={max_tokens} cannot hold the header of message {turn.message_id!r}; "
            "raise max_tokens"
        )
    pieces: list[_Line] = []
    spans = chunk_spans(
        turn.content, max_tokens=max_tokens, overlap_tokens=overlap_tokens, prefix=header
    )
    for start, end, piece_tokens in spans:
        piece = turn.content[start:end]
        counts = cjk_counts(piece)
        pieces.append(_Line(header + piece, piece_tokens, piece, turn.source(piece), *counts))
    return pieces


def chat_windows(
    turns: Sequence[Turn],
    *,
    max_tokens: int = 1024,
    overlap_tokens: int = 200,
    max_messages: int = 10,
    message_overlap: int = 2,
) -> list[Window]:
    """Cut one conversation into token windows of rendered turns.

    Args:
        turns: The turns of one conversation, in order.
        max_tokens: Most tokens (o200k_base) in a window's text.
        overlap_tokens: Tokens of trailing lines a window may repeat from the previous
            window of its scene.
        max_messages: Most messages in a scene.
        message_overlap: Messages shared by consecutive scenes.

    Returns:
        Windows of kind ``CHAT`` in conversation order. A window that would add nothing
        to the window before it (its sources all in that window) is left out.

    Raises:
        InvalidInputError: A bound is out of range (``overlap_tokens >= max_tokens``...).
    """
    check_budget(max_tokens, overlap_tokens)
    bounds = _scene_bounds(len(turns), max_messages, message_overlap)
    cache: dict[int, list[_Line]] = {}
    groups: list[_Group] = []
    split_done: set[int] = set()
    for lo, hi in bounds:
        segment: list[_Line] = []
        for position in range(lo, hi):
            lines = cache.get(position)
            if lines is None:
                lines = cache[position] = _lines(turns[position], max_tokens, overlap_tokens)
            if len(lines) == 1:
                segment.append(lines[0])
                continue
            _add(groups, _pack_lines(segment, max_tokens, overlap_tokens))
            segment = []
            if position not in split_done:  # scenes overlap; its pieces go out once
                split_done.add(position)
                _add(groups, [_Group(lines=(line,), tokens=line.tokens) for line in lines])
        _add(groups, _pack_lines(segment, max_tokens, overlap_tokens))
    return [_window(group) for group in groups]


def _pack_lines(lines: list[_Line], max_tokens: int, overlap_tokens: int) -> list[_Group]:
    if not lines:
        return []
    chunks = pack(
        [line.tokens for line in lines],
        max_tokens=max_tokens,
        overlap_tokens=overlap_tokens,
        measure=lambda a, b: count_tokens(_joined(lines[a:b])),
    )
    return [_Group(tuple(lines[c.first : c.last]), c.tokens) for c in chunks]


def _joined(lines: Sequence[_Line]) -> str:
    return "\n".join(line.text for line in lines)


def _add(groups: list[_Group], new: list[_Group]) -> None:
    """Append groups, leaving out one whose lines all are in the group before it."""
    for group in new:
        if groups and {id(x) for x in group.lines} <= {id(x) for x in groups[-1].lines}:
            continue
        groups.append(group)


def _window(group: _Group) -> Window:
    return Window(
        text=_joined(group.lines),
        sources=tuple(line.source for line in group.lines),
        kind=SourceKind.CHAT,
        tokens=group.tokens,
        language=language_of(
            sum(line.han for line in group.lines), sum(line.letters for line in group.lines)
        ),
    )


def document_windows(
    doc: Document, *, max_tokens: int = 1024, overlap_tokens: int = 200
) -> list[Window]:
    """Chunk a document by paragraph, then sentence, then tokens; one window per chunk.

    Chunks end at paragraph breaks when that keeps them at least half full, repeat
    trailing sentences of the previous chunk worth up to ``overlap_tokens``, and cut a
    sentence longer than ``max_tokens`` at whitespace or token boundaries. Sentences
    end at ``.!?`` followed by whitespace, at ``。！？``, and at line breaks.

    Returns:
        One window per chunk, its only source ``doc.source(chunk, index)``; ``kind`` is
        ``doc.kind``. A document without text gives no windows.

    Raises:
        InvalidInputError: ``max_tokens < 1`` or not ``0 <= overlap_tokens < max_tokens``.

    Examples:
        >>> from datetime import datetime, timezone
        >>> at = datetime.now(timezone.utc)
        >>> doc = Document("notes.md", "Alice likes tea.\\n\\n她住在里昂。", at)
        >>> windows = document_windows(doc, max_tokens=8, overlap_tokens=0)
        >>> [(w.text, w.language.value, w.sources[0].index) for w in windows]
        [('Alice likes tea.', 'en', 0), ('她住在里昂。', 'zh', 1)]
    """
    windows: list[Window] = []
    spans = chunk_spans(doc.text, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    for index, (start, end, tokens) in enumerate(spans):
        chunk = doc.text[start:end]
        windows.append(
            Window(
                text=chunk,
                sources=(doc.source(chunk, index),),
                kind=doc.kind,
                tokens=tokens,
                language=detect_language(chunk),
            )
        )
    return windows
