"""Extraction stages 1-4: entry validation, normalisation, language, windows, documents."""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import types
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from document_files import pdf_bytes
from memtrellis.errors import InvalidInputError
from memtrellis.extraction._split import chunk_spans, pack, sentence_units
from memtrellis.extraction.documents import read_document
from memtrellis.extraction.language import (
    CJK_THRESHOLD,
    cjk_share,
    detect_language,
    detect_window_language,
)
from memtrellis.extraction.model import Document, Language, Normalized, Turn, Window
from memtrellis.extraction.normalize import extractable, new_id, normalize
from memtrellis.extraction.windows import chat_windows, document_windows, render_turn, scenes
from memtrellis.tokens import count_tokens
from memtrellis.types import SourceKind

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


def msg(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def turns_of(texts: list[str], roles: tuple[str, ...] = ("user", "assistant")) -> list[Turn]:
    data = [msg(roles[i % len(roles)], text, id=f"m{i}") for i, text in enumerate(texts)]
    return normalize(data, now=NOW).conversations[0]


# -- normalisation: accepted shapes ------------------------------------------------------------


def test_plain_text_becomes_a_text_document() -> None:
    out = normalize("  Alice prefers green tea.  ", now=NOW)
    assert out.conversations == [] and out.skipped == 0
    [doc] = out.documents
    assert doc.kind is SourceKind.TEXT and doc.text == "Alice prefers green tea."
    assert re.fullmatch(r"text-[0-9a-f]{16}", doc.doc_id) and doc.timestamp == NOW


def test_path_becomes_a_document_with_its_mtime(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nBob moved to Oslo.", encoding="utf-8")
    stamp = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp()
    os.utime(path, (stamp, stamp))
    [doc] = normalize(path, now=NOW).documents
    assert doc.kind is SourceKind.DOC and doc.doc_id == str(path)
    assert doc.text == "# Notes\n\nBob moved to Oslo."
    assert doc.timestamp == datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_document_passes_through_and_naive_time_is_utc() -> None:
    given_doc = Document("d1", "Some text.", datetime(2025, 5, 5, 12, 0))
    [doc] = normalize(given_doc, now=NOW).documents
    assert doc.doc_id == "d1" and doc.timestamp == datetime(2025, 5, 5, 12, 0, tzinfo=timezone.utc)


def test_one_message_dict() -> None:
    out = normalize(msg("user", "I moved to Lyon", id="m1", name="Alice"), now=NOW)
    [[turn]] = out.conversations
    assert (turn.role, turn.content, turn.message_id, turn.speaker) == (
        "user",
        "I moved to Lyon",
        "m1",
        "Alice",
    )
    assert (turn.conversation, turn.index, turn.timestamp) == (0, 0, NOW)


def test_list_of_messages_is_one_conversation() -> None:
    data = (msg("user", "hi", message_id=7), msg("assistant", "hello", speaker="Bot"))
    [conv] = normalize(data, now=NOW).conversations
    assert [(t.conversation, t.index, t.speaker) for t in conv] == [(0, 0, None), (0, 1, "Bot")]
    assert conv[0].message_id == "7" and conv[1].message_id.startswith("msg-")


def test_list_of_lists_is_several_conversations_numbered_by_input_position() -> None:
    data = [
        [msg("user", "first")],
        [msg("narrator", "dropped entirely")],
        [msg("user", "third"), msg("assistant", "reply")],
    ]
    out = normalize(data, now=NOW)
    assert out.skipped == 1
    assert [[(t.conversation, t.index, t.content) for t in c] for c in out.conversations] == [
        [(0, 0, "first")],
        [(2, 0, "third"), (2, 1, "reply")],
    ]


def test_mixed_list_messages_form_one_conversation(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("File text.", encoding="utf-8")
    doc = Document("given", "Given text.", NOW)
    data = ["Loose text.", msg("user", "one"), path, doc, msg("assistant", "two")]
    out = normalize(data, now=NOW)
    assert [d.text for d in out.documents] == ["Loose text.", "File text.", "Given text."]
    assert [d.kind for d in out.documents] == [SourceKind.TEXT, SourceKind.DOC, SourceKind.DOC]
    [conv] = out.conversations
    assert [(t.index, t.content) for t in conv] == [(0, "one"), (1, "two")]


def test_multimodal_content_keeps_text_parts() -> None:
    content = [
        {"type": "text", "text": "Look at this"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        "and this",
    ]
    tool_result = [{"type": "tool_result", "content": [{"type": "text", "text": "21 °C"}]}]
    out = normalize(
        [
            msg("user", content),
            msg("tool", tool_result),
            msg("user", {"type": "text", "text": "x"}),
        ],
        now=NOW,
    )
    turns = out.conversations[0]
    assert [t.content for t in turns] == ["Look at this\nand this\n[image]", "21 °C", "x"]
    assert [a.url for a in turns[0].attachments] == ["https://x/y.png"]  # kept as a source


def test_text_is_cleaned() -> None:
    [[turn]] = normalize(msg("user", " a\r\nb\x00c \ud800"), now=NOW).conversations
    assert turn.content == "a\nbc ?"  # as SourceRef cleans it, so excerpts match the text


def test_roles_are_case_insensitive_with_aliases() -> None:
    data = [msg("User", "a"), msg("human", "b"), msg("AI", "c"), msg("developer", "d")]
    data.append(msg("function", "e"))
    conv = normalize(data, now=NOW).conversations[0]
    assert [t.role for t in conv] == ["user", "user", "assistant", "system", "tool"]


# -- normalisation: timestamps and ids ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-02-01T09:30:00Z", datetime(2026, 2, 1, 9, 30, tzinfo=timezone.utc)),
        ("2026-02-01T11:30:00+02:00", datetime(2026, 2, 1, 9, 30, tzinfo=timezone.utc)),
        ("2026-02-01 09:30", datetime(2026, 2, 1, 9, 30, tzinfo=timezone.utc)),
        ("2026-02-01", datetime(2026, 2, 1, tzinfo=timezone.utc)),
        (1_700_000_000, datetime.fromtimestamp(1_700_000_000, timezone.utc)),
        (1_700_000_000.5, datetime.fromtimestamp(1_700_000_000.5, timezone.utc)),
        (1_700_000_000_123, datetime.fromtimestamp(1_700_000_000.123, timezone.utc)),
        ("1700000000", datetime.fromtimestamp(1_700_000_000, timezone.utc)),
        (datetime(2026, 2, 1, 9, 30), datetime(2026, 2, 1, 9, 30, tzinfo=timezone.utc)),
        (
            datetime(2026, 2, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5))),
            datetime(2026, 2, 1, 14, 30, tzinfo=timezone.utc),
        ),
        (date(2026, 2, 1), datetime(2026, 2, 1, tzinfo=timezone.utc)),
        (None, NOW),
        ("  ", NOW),
    ],
)
def test_timestamps(value: Any, expected: datetime) -> None:
    [[turn]] = normalize(msg("user", "x", timestamp=value), now=NOW).conversations
    assert turn.timestamp == expected and turn.timestamp.tzinfo is timezone.utc


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", True, float("nan"), 1e300, [1]])
def test_bad_timestamps_raise(value: Any) -> None:
    with pytest.raises(InvalidInputError, match="timestamp of message 0"):
        normalize(msg("user", "x", timestamp=value), now=NOW)


def test_missing_timestamp_defaults_to_capture_time_now() -> None:
    before = datetime.now(timezone.utc)
    [[turn]] = normalize(msg("user", "x")).conversations
    assert before <= turn.timestamp <= datetime.now(timezone.utc)


def test_naive_now_is_utc() -> None:
    [[turn]] = normalize(msg("user", "x"), now=datetime(2026, 1, 1)).conversations
    assert turn.timestamp == datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_generated_ids_are_unique_across_calls() -> None:
    data = [msg("user", f"message {i}") for i in range(200)]
    first = {t.message_id for t in normalize(data, now=NOW).conversations[0]}
    second = {t.message_id for t in normalize(data, now=NOW).conversations[0]}
    assert len(first) == len(second) == 200 and not first & second
    assert all(re.fullmatch(r"msg-[0-9a-f]{16}", i) for i in first)
    assert len({new_id() for _ in range(10_000)}) == 10_000


def test_blank_id_is_replaced() -> None:
    [[turn]] = normalize(msg("user", "x", id="  "), now=NOW).conversations
    assert turn.message_id.startswith("msg-")


# -- normalisation: skipping and tools ---------------------------------------------------------


def test_unknown_roles_and_empty_messages_are_skipped_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = [
        msg("narrator", "x"),
        msg(None, "none"),  # type: ignore[arg-type]
        msg(3, "three"),  # type: ignore[arg-type]
        msg("user", None),
        msg("assistant", "   "),
        msg("user", [{"type": "image_url", "image_url": {"url": "u"}}]),  # an image: kept
        msg("assistant", None, tool_calls=[]),
        msg("user", 5),
        msg("user", "kept"),
    ]
    with caplog.at_level(logging.INFO, logger="memtrellis.extraction"):
        out = normalize(data, now=NOW)
    assert out.skipped == 7
    assert [t.content for t in out.conversations[0]] == ["[image]", "kept"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3 and "narrator" in warnings[0].getMessage()


def test_all_skipped_gives_an_empty_result() -> None:
    out = normalize([msg("narrator", "x"), msg("user", "")], now=NOW)
    assert out == Normalized(conversations=[], documents=[], skipped=2)


def test_tool_turns_are_kept_but_not_extractable_by_default() -> None:
    out = normalize([msg("user", "weather?"), msg("tool", "21 °C")], now=NOW, extract_tools=True)
    user, tool = out.conversations[0]
    assert tool.role == "tool" and out.extract_tools
    assert extractable(user, extract_tools=False) and not extractable(tool, extract_tools=False)
    assert extractable(tool, extract_tools=True)
    assert not normalize("x", now=NOW).extract_tools


# -- normalisation: errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (None, "cannot remember None"),
        ("", "empty text"),
        ("  \n", "empty text"),
        ([], "the list is empty"),
        ([[]], "conversation 0 is an empty list"),
        ([[msg("user", "a")], []], "conversation 1 is an empty list"),
        (5, "cannot remember an int"),
        (b"bytes", "decode them to str"),
        ({1, 2}, "cannot remember a set"),
        ({"text": "hi"}, "without 'role' or 'content'"),
        ({}, "without 'role' or 'content'"),
        ({"role": "user"}, "without 'content'"),
        ([msg("user", "a"), {"content": "no role"}], "message 1 of the conversation .* 'role'"),
        ({"role": "assistant", "tool_calls": []}, "without 'content'"),
        ([msg("user", "a"), 3], "item 1 of the input is an int"),
        ([None], "item 0 of the input is None"),
        ([[msg("user", "a"), "text"]], "message 1 of conversation 0 is a str"),
        ([[[msg("user", "a")]]], "message 0 of conversation 0 is a list"),
        ([msg("user", "a"), [msg("user", "b")]], "both message dicts and lists"),
        (Document("d", "  ", NOW), "Document without text"),
        (True, "cannot remember a bool"),
    ],
)
def test_invalid_input_raises_typed_error(data: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        normalize(data, now=NOW)


def test_error_message_lists_what_is_accepted() -> None:
    with pytest.raises(InvalidInputError) as info:
        normalize(3.5, now=NOW)
    text = str(info.value)
    assert "float" in text and "message dict" in text and "pathlib.Path" in text


# -- documents ---------------------------------------------------------------------------------


def test_text_file_with_bom_and_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "a.TXT"
    path.write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9 \xff ok\r\nnext")
    doc = read_document(path, now=NOW)
    assert doc.text == "café \ufffd ok\nnext"


def test_future_mtime_is_clamped_to_now(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("x", encoding="utf-8")
    future = (NOW + timedelta(days=3)).timestamp()
    os.utime(path, (future, future))
    assert read_document(path, now=NOW).timestamp == NOW


@pytest.mark.parametrize(
    ("name", "setup", "match"),
    [
        ("missing.md", None, "does not exist"),
        ("folder.md", "dir", "not a regular file"),
        ("empty.txt", "", "has no text"),
        ("blank.md", " \n\n ", "has no text"),
        ("data.csv", "a,b", r"\.csv is not a supported document type; supported: .*\.md.*\.pdf"),
        ("README", "text", "without a suffix"),
    ],
)
def test_document_errors_name_the_path(
    tmp_path: Path, name: str, setup: str | None, match: str
) -> None:
    path = tmp_path / name
    if setup == "dir":
        path.mkdir()
    elif setup is not None:
        path.write_text(setup, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=match) as info:
        normalize(path, now=NOW)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".pdf", ".docx", ".pptx", ".html"])
def test_converted_types_without_markitdown_name_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setitem(sys.modules, "markitdown", None)  # makes `import markitdown` fail
    path = tmp_path / f"report{suffix}"
    path.write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(InvalidInputError, match=re.escape('pip install "memtrellis[documents]"')):
        read_document(path, now=NOW)


def _fake_markitdown(result: Any) -> types.ModuleType:
    module = types.ModuleType("markitdown")

    class MarkItDown:
        def convert(self, source: str) -> Any:
            if isinstance(result, Exception):
                raise result
            return types.SimpleNamespace(text_content=result.format(source=Path(source).name))

    module.MarkItDown = MarkItDown  # type: ignore[attr-defined]
    return module


def test_converted_types_go_through_markitdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "markitdown", _fake_markitdown("# {source}\r\n\r\nBody."))
    path = tmp_path / "report.docx"
    path.write_bytes(b"PK")
    doc = read_document(path, now=NOW)
    assert doc.text == "# report.docx\n\nBody." and doc.kind is SourceKind.DOC
    monkeypatch.setitem(sys.modules, "markitdown", _fake_markitdown(ValueError("broken file")))
    with pytest.raises(InvalidInputError, match=r"could not convert .*broken file"):
        read_document(path, now=NOW)


def test_real_pdf_through_markitdown(tmp_path: Path) -> None:
    pytest.importorskip("markitdown")
    path = tmp_path / "hello.pdf"
    path.write_bytes(pdf_bytes(["Carol joined the Lisbon office"]))
    assert "Lisbon office" in read_document(path, now=NOW).text


# -- language ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Lyon last spring and I love it.", Language.EN),
        ("我上个月搬到了里昂，我很喜欢那里。", Language.ZH),
        ("I met 王小明 in Beijing yesterday", Language.EN),
        ("我在用 LangChain 和 Chroma 做记忆", Language.ZH),
        (
            "[msg-3f2a9c1d0b7e4a21] 2026-03-01T10:00:00Z user: 好的 "
            "https://example.com/very/long/english/path?query=words alice@example.com "
            "550e8400-e29b-41d4-a716-446655440000 D1:3 deadbeef42",
            Language.ZH,
        ),
        ("user: ok\nassistant: 明白", Language.ZH),
        ("https://example.com/路径/里面 2026-03-01 12345 see", Language.EN),  # URL is noise
        ("", Language.EN),
        ("12345 6789 !!!", Language.EN),
    ],
)
def test_detect_language(text: str, expected: Language) -> None:
    assert detect_language(text) is expected


def test_threshold_is_inclusive() -> None:
    # 1 Han character among 4 letters is exactly the threshold.
    assert CJK_THRESHOLD == 0.25 and cjk_share("abc 好") == 0.25
    assert detect_language("abc 好") is Language.ZH and detect_language("abcd 好") is Language.EN


def test_window_language_ignores_headers() -> None:
    turns = [
        Turn(0, i, "user", "好", f"message-id-{i}", NOW, speaker="Alexandria") for i in range(3)
    ]
    assert detect_window_language(turns) is Language.ZH
    assert detect_window_language(["hello there", "你好"]) is Language.EN
    assert chat_windows(turns)[0].language is Language.ZH


def test_detection_is_linear_on_long_runs() -> None:
    start = time.perf_counter()
    detect_language("a" * 200_000 + "1" + "-b" * 50_000)
    assert time.perf_counter() - start < 2.0


# -- scenes and chat windows -------------------------------------------------------------------


def test_render_turn() -> None:
    at = datetime(2026, 3, 1, 18, 0, tzinfo=timezone(timedelta(hours=8)))
    turn = Turn(0, 0, "user", "我搬家了", "m1", at, speaker="小明")
    assert render_turn(turn) == "[m1] 2026-03-01 10:00 小明 (user): 我搬家了"
    assert render_turn(replace(turn, speaker=None, role="tool")).startswith(
        "[m1] 2026-03-01 10:00 tool: "
    )


@pytest.mark.parametrize(
    ("count", "sizes"),
    [(0, []), (1, [1]), (10, [10]), (11, [10, 3]), (18, [10, 10]), (19, [10, 10, 3])],
)
def test_scene_sizes(count: int, sizes: list[int]) -> None:
    turns = turns_of([f"t{i}" for i in range(count)]) if count else []
    result = scenes(turns)
    assert [len(s) for s in result] == sizes
    for left, right in pairwise(result):
        assert left[-2:] == right[:2]
    assert sorted({t.index for s in result for t in s}) == list(range(count))


@pytest.mark.parametrize(("max_messages", "overlap"), [(0, 0), (3, 3), (3, -1), (1, 1)])
def test_scene_arguments_are_validated(max_messages: int, overlap: int) -> None:
    with pytest.raises(InvalidInputError):
        scenes([], max_messages=max_messages, overlap=overlap)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_tokens": 0, "overlap_tokens": 0},
        {"max_tokens": 100, "overlap_tokens": 100},
        {"max_tokens": 100, "overlap_tokens": -1},
        {"max_messages": 2, "message_overlap": 2},
    ],
)
def test_window_arguments_are_validated(kwargs: dict[str, int]) -> None:
    with pytest.raises(InvalidInputError):
        chat_windows(turns_of(["a"]), **kwargs)
    if "max_tokens" in kwargs:
        with pytest.raises(InvalidInputError):
            document_windows(Document("d", "a", NOW), **kwargs)


def test_header_that_cannot_fit_raises() -> None:
    turn = Turn(0, 0, "user", "word " * 50, "x" * 200, NOW)
    with pytest.raises(InvalidInputError, match="cannot hold the header"):
        chat_windows([turn], max_tokens=20, overlap_tokens=0)


def _expected_text(window: Window, turns: dict[str, Turn]) -> str:
    lines = [
        render_turn(replace(turns[s.message_id or ""], content=s.content)) for s in window.sources
    ]
    return "\n".join(lines)


def _check_windows(windows: list[Window], turns: list[Turn], max_tokens: int) -> None:
    by_id = {t.message_id: t for t in turns}
    for window in windows:
        assert window.kind is SourceKind.CHAT
        assert window.tokens == count_tokens(window.text) <= max_tokens
        assert window.text == _expected_text(window, by_id)  # sources align with text, in order
        indexes = [s.index or 0 for s in window.sources]
        assert indexes == sorted(indexes)
        assert window.language is detect_window_language(s.content for s in window.sources)


def _check_order(windows: list[Window], turns: list[Turn], max_messages: int, overlap: int) -> None:
    """Windows come scene by scene, in order; each lies inside its scene."""
    position = {t.message_id: i for i, t in enumerate(turns)}
    bounds = [
        (lo, min(lo + max_messages, len(turns)))
        for lo in range(0, len(turns), max_messages - overlap)
    ]
    scene = 0
    previous_first = -1
    for window in windows:
        at = [position[s.message_id or ""] for s in window.sources]
        while not (bounds[scene][0] <= at[0] and at[-1] < bounds[scene][1]) or (
            at[0] < previous_first
        ):
            scene += 1  # the next scene; fails with IndexError if the order is broken
            previous_first = -1
        previous_first = at[0]


def test_scene_windows_share_two_messages() -> None:
    turns = turns_of([f"Short note {i}." for i in range(25)])
    windows = chat_windows(turns)
    assert [[s.index for s in w.sources] for w in windows] == [
        list(range(0, 10)),
        list(range(8, 18)),
        list(range(16, 25)),
    ]
    _check_windows(windows, turns, 1024)


def test_token_windows_within_a_scene_overlap_by_trailing_lines() -> None:
    turns = turns_of([f"Sentence number {i} says something about tea." for i in range(40)])
    windows = chat_windows(turns, max_tokens=120, overlap_tokens=40, max_messages=40)
    assert len(windows) > 3
    _check_windows(windows, turns, 120)
    for left, right in pairwise(windows):
        shared = [s for s in right.sources if s in left.sources]
        assert shared == list(left.sources[-len(shared) :]) and shared  # a trailing run
        shared_tokens = sum(
            count_tokens(render_turn(by)) + 1 for by in turns if by.source() in shared
        )
        assert shared_tokens <= 40
        assert len(shared) < len(left.sources)


def test_no_overlap_when_overlap_is_zero() -> None:
    turns = turns_of([f"Sentence number {i} says something about tea." for i in range(40)])
    windows = chat_windows(turns, max_tokens=120, overlap_tokens=0, max_messages=40)
    ids = [s.message_id for w in windows for s in w.sources]
    assert ids == [t.message_id for t in turns]


def test_long_message_is_split_into_windows_of_its_own() -> None:
    long_text = " ".join(f"Point {i} explains the plan in detail." for i in range(200))
    turns = turns_of(["before", long_text, "after"])
    windows = chat_windows(turns, max_tokens=200, overlap_tokens=40)
    _check_windows(windows, turns, 200)
    pieces = [w for w in windows if w.sources[0].message_id == "m1"]
    assert len(pieces) > 5 and all(len(w.sources) == 1 for w in pieces)
    header = render_turn(replace(turns[1], content=""))
    expected = chunk_spans(long_text, max_tokens=200, overlap_tokens=40, prefix=header)
    assert [w.sources[0].content for w in pieces] == [long_text[s:e] for s, e, _ in expected]
    assert pieces[0].sources[0].content.startswith("Point 0 explains")
    assert pieces[-1].sources[0].content.endswith("Point 199 explains the plan in detail.")
    for left, right in pairwise(pieces):  # consecutive pieces share trailing sentences
        left_text, right_text = left.sources[0].content, right.sources[0].content
        first_sentence = right_text[: right_text.index(".") + 1]
        assert first_sentence in left_text and not left_text.startswith(first_sentence)
    assert windows[0].sources[0].message_id == "m0" and windows[-1].sources[-1].message_id == "m2"


def test_long_message_in_scene_overlap_is_emitted_once() -> None:
    texts = [f"note {i}" for i in range(12)]
    texts[8] = " ".join(f"w{i}" for i in range(400))
    turns = turns_of(texts)
    windows = chat_windows(turns, max_tokens=100, overlap_tokens=20, max_messages=10)
    _check_windows(windows, turns, 100)
    pieces = [w.sources[0].content for w in windows if w.sources[0].message_id == "m8"]
    header = render_turn(replace(turns[8], content=""))
    spans = chunk_spans(texts[8], max_tokens=100, overlap_tokens=20, prefix=header)
    assert pieces == [texts[8][s:e] for s, e, _ in spans]  # once each, although m8 is in 2 scenes
    for left, right in pairwise(windows):
        assert not set(map(id, right.sources)) <= set(map(id, left.sources))


def test_chinese_conversation_windows_are_chinese() -> None:
    turns = turns_of(["我下周去上海出差。", "好的，我记下了。需要订酒店吗？", "要，靠近外滩的。"])
    [window] = chat_windows(turns)
    assert window.language is Language.ZH


_ALPHABET = st.sampled_from(
    list("abcdefghij ABC .!?,\n") + list("我你他是的了。！？，") + ["🙂", "é", "\u3000", "1"]
)
_MESSAGE = st.one_of(
    st.text(_ALPHABET, min_size=1, max_size=40),
    st.text(_ALPHABET, min_size=100, max_size=1500),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=60),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(_MESSAGE, min_size=1, max_size=30),
    max_tokens=st.integers(40, 300),
    overlap_ratio=st.floats(0, 0.9),
    max_messages=st.integers(1, 12),
    message_overlap=st.integers(0, 11),
    speakers=st.booleans(),
)
def test_chat_windows_properties(
    texts: list[str],
    max_tokens: int,
    overlap_ratio: float,
    max_messages: int,
    message_overlap: int,
    speakers: bool,
) -> None:
    data = [
        msg("user" if i % 3 else "assistant", text, id=f"m{i}", name="Al" if speakers else None)
        for i, text in enumerate(texts)
    ]
    normalized = normalize(data, now=NOW)
    if not normalized.conversations:
        return
    [turns] = normalized.conversations
    overlap = int(max_tokens * overlap_ratio)
    message_overlap = min(message_overlap, max_messages - 1)
    windows = chat_windows(
        turns,
        max_tokens=max_tokens,
        overlap_tokens=overlap,
        max_messages=max_messages,
        message_overlap=message_overlap,
    )
    _check_windows(windows, turns, max_tokens)
    _check_order(windows, turns, max_messages, message_overlap)
    for turn in turns:  # every message is in some window: whole, or all of its pieces
        mine = [s.content for w in windows for s in w.sources if s.message_id == turn.message_id]
        if turn.content in mine:
            continue
        header = render_turn(replace(turn, content=""))
        spans = chunk_spans(
            turn.content, max_tokens=max_tokens, overlap_tokens=overlap, prefix=header
        )
        assert len(spans) > 1 and [turn.content[s:e] for s, e, _ in spans] == list(
            dict.fromkeys(mine)
        )


# -- document windows and chunking -------------------------------------------------------------


def _check_doc_windows(windows: list[Window], doc: Document, max_tokens: int) -> None:
    position = 0
    for index, window in enumerate(windows):
        assert window.tokens == count_tokens(window.text) <= max_tokens
        assert window.kind is doc.kind and window.text.strip() == window.text
        [source] = window.sources
        assert (source.index, source.message_id) == (index, f"{doc.doc_id}#{index}")
        assert source.content == window.text[:2000] and source.timestamp == doc.timestamp
        found = doc.text.find(window.text, position)
        assert found >= 0  # a verbatim slice, in order
        position = found + 1
        assert window.language is detect_language(window.text)


def _covered(text: str, spans: list[tuple[int, int, int]]) -> bool:
    hit = [False] * len(text)
    for start, end, _ in spans:
        hit[start:end] = [True] * (end - start)
    return all(hit[i] or ch.isspace() for i, ch in enumerate(text))


def test_document_chunks_end_at_paragraphs() -> None:
    paragraphs = [
        " ".join(f"Paragraph {p} sentence {s} is here." for s in range(4)) for p in range(6)
    ]
    doc = Document("guide.md", "\n\n".join(paragraphs), NOW)
    per_paragraph = count_tokens(paragraphs[0])
    windows = document_windows(doc, max_tokens=per_paragraph * 2 + 8, overlap_tokens=0)
    _check_doc_windows(windows, doc, per_paragraph * 2 + 8)
    assert [w.text for w in windows] == ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, 6, 2)]
    assert windows[0].sources[0].document == "guide.md"


def test_document_chunks_overlap_by_trailing_sentences() -> None:
    sentences = [f"Fact number {i} concerns the garden." for i in range(60)]
    doc = Document("text-1", " ".join(sentences), NOW, kind=SourceKind.TEXT)
    windows = document_windows(doc, max_tokens=80, overlap_tokens=25)
    _check_doc_windows(windows, doc, 80)
    assert windows[0].sources[0].document is None and windows[0].kind is SourceKind.TEXT
    for left, right in pairwise(windows):
        left_sentences = sentence_units(left.text)
        tail = [left.text[u.start : u.end] for u in left_sentences]
        shared = [s for s in tail if right.text.startswith(s) or f" {s}" in right.text]
        assert shared and sum(count_tokens(s) + 1 for s in shared) <= 25
        assert right.text.startswith(shared[0]) and not right.text.startswith(tail[0])


def test_chinese_document_splits_on_chinese_sentence_ends() -> None:
    sentences = [f"第{i}条：我们明天在公园见面吧。" if i % 3 else f"真的吗{i}？" for i in range(40)]
    sentences += ["太好了！"]
    doc = Document("zh.txt", "".join(sentences), NOW)
    windows = document_windows(doc, max_tokens=60, overlap_tokens=0)
    _check_doc_windows(windows, doc, 60)
    assert all(w.text[-1] in "。！？" for w in windows)
    assert all(w.language is Language.ZH for w in windows)
    assert "".join(w.text for w in windows) == doc.text


def test_giant_sentences_are_cut_by_tokens() -> None:
    english = " ".join(f"word{i % 7}" for i in range(3000))
    chinese = "我们在讨论记忆系统的设计" * 300
    for text in (english, chinese):
        doc = Document("big.txt", text, NOW)
        windows = document_windows(doc, max_tokens=100, overlap_tokens=0)
        _check_doc_windows(windows, doc, 100)
        assert len(windows) > 5
        spans = chunk_spans(text, max_tokens=100, overlap_tokens=0)
        assert _covered(text, spans)
    assert all(not w.text.startswith(" ") for w in document_windows(Document("e", english, NOW)))


def test_empty_document_has_no_windows() -> None:
    assert document_windows(Document("d", " \n\n ", NOW)) == []


def test_pack_keeps_a_fresh_unit_and_respects_the_budget() -> None:
    chunks = pack(
        [5, 5, 5, 5], max_tokens=11, overlap_tokens=6, measure=lambda a, b: 6 * (b - a) - 1
    )
    assert [(c.first, c.last) for c in chunks] == [(0, 2), (1, 3), (2, 4)]
    # The exact count can disagree with the estimate: the chunk then gives up units.
    chunks = pack([3, 3, 3], max_tokens=9, overlap_tokens=0, measure=lambda a, b: 5 * (b - a))
    assert [(c.first, c.last, c.tokens) for c in chunks] == [(0, 1, 5), (1, 2, 5), (2, 3, 5)]


_DOC_ALPHABET = st.sampled_from(list("abcdefg hij .!?\n\n") + list("我你他是的。！？") + ["🙂"])


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(_DOC_ALPHABET, min_size=1, max_size=3000),
    max_tokens=st.integers(8, 200),
    overlap_ratio=st.floats(0, 0.9),
)
def test_document_chunking_properties(text: str, max_tokens: int, overlap_ratio: float) -> None:
    overlap = int(max_tokens * overlap_ratio)
    spans = chunk_spans(text, max_tokens=max_tokens, overlap_tokens=overlap)
    assert _covered(text, spans)
    starts = [s for s, _, _ in spans]
    ends = [e for _, e, _ in spans]
    assert starts == sorted(set(starts)) and ends == sorted(set(ends))
    for start, end, tokens in spans:
        assert tokens == count_tokens(text[start:end]) <= max_tokens
    doc = Document("p.md", text, NOW)
    _check_doc_windows(
        document_windows(doc, max_tokens=max_tokens, overlap_tokens=overlap), doc, max_tokens
    )


def test_two_thousand_messages_are_windowed_quickly() -> None:
    turns = turns_of([f"Message {i}: we talked about item {i % 17} and tea." for i in range(2000)])
    start = time.perf_counter()
    windows = chat_windows(turns)
    elapsed = time.perf_counter() - start
    _check_windows(windows, turns, 1024)
    assert {s.message_id for w in windows for s in w.sources} == {t.message_id for t in turns}
    assert elapsed < 10  # generous: measured ~0.1 s on the 2-core dev machine
