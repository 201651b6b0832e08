"""Validation of the core data model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from memtrellis import MemoryItem, RecallResult, Scope, SourceRef


def test_confidence_must_be_within_unit_interval() -> None:
    for bad in (-0.01, 1.01):
        with pytest.raises(ValidationError, match="confidence"):
            MemoryItem(text="x", scope=Scope(entity_id="a"), confidence=bad)


def test_valid_until_before_valid_from_is_rejected() -> None:
    start = datetime(2026, 1, 2, tzinfo=timezone.utc)
    with pytest.raises(ValidationError, match=r"valid_until .* is before valid_from"):
        MemoryItem(
            text="x",
            scope=Scope(entity_id="a"),
            valid_from=start,
            valid_until=start - timedelta(seconds=1),
        )


def test_empty_text_and_scope_are_rejected() -> None:
    with pytest.raises(ValidationError, match="text must not be empty"):
        MemoryItem(text=" \n", scope=Scope(entity_id="a"))
    with pytest.raises(ValidationError, match="entity_id must not be empty"):
        Scope(entity_id="")
    with pytest.raises(ValidationError, match="control characters"):
        Scope(entity_id="a\nb")


def test_naive_times_become_utc_and_windows_are_checked() -> None:
    item = MemoryItem(
        text="x",
        scope=Scope(entity_id="a"),
        valid_from=datetime(2026, 1, 1),
        valid_until=datetime(2026, 2, 1),
    )
    assert item.valid_from is not None and item.valid_from.tzinfo is timezone.utc
    assert item.is_valid_at(datetime(2026, 1, 15, tzinfo=timezone.utc))
    assert not item.is_valid_at(datetime(2026, 2, 1, tzinfo=timezone.utc))


def test_lone_surrogates_and_nul_are_cleaned() -> None:
    item = MemoryItem(text="ok\ud800\x00!", scope=Scope(entity_id="a"))
    item.text.encode("utf-8")
    assert "\x00" not in item.text


def test_source_excerpt_is_bounded_and_json_round_trips() -> None:
    src = SourceRef(kind="chat", content="x" * 10_000, timestamp="2026-01-01T00:00:00Z")
    assert len(src.content) == 2000
    item = MemoryItem(text="y", scope=Scope(entity_id="a"), sources=[src])
    assert MemoryItem.model_validate_json(item.model_dump_json()) == item


def test_recall_result_memories_helper() -> None:
    assert RecallResult(query="q", scope=Scope(entity_id="a")).memories == []
