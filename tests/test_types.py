"""Validation of the core data model."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

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


def test_is_valid_at_is_recalls_validity_rule(tmp_path: Path) -> None:
    """``is_valid_at`` ignored supersession and, lacking ``valid_from``, held a memory valid
    before it was stored, while recall left both out: one rule now decides for both."""
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder

    utc = timezone.utc
    stored = datetime(2026, 1, 1, tzinfo=utc)
    scope = Scope(entity_id="ana")

    def item(name: str, **fields: Any) -> MemoryItem:
        return MemoryItem(id=name, text=f"qqmark {name}", scope=scope, created_at=stored, **fields)

    items = [
        item("plain"),
        item("later", valid_from=datetime(2026, 3, 1, tzinfo=utc)),
        item("ends", valid_until=datetime(2026, 2, 1, tzinfo=utc)),
        item("replaced", superseded_by="plain"),
        item("replaced-later", superseded_by="plain", valid_until=datetime(2026, 2, 1, tzinfo=utc)),
    ]
    times = [datetime(2025, 12, 1, tzinfo=utc), datetime(2026, 1, 15, tzinfo=utc)]
    times += [datetime(2026, 2, 1, tzinfo=utc), datetime(2026, 4, 1, tzinfo=utc)]
    with Memory(tmp_path / "store", entity_id="ana", embedder=HashingEmbedder()) as memory:
        for one in items:
            memory.store(one, lifecycle=False)
        for when in times:
            result = memory.recall("qqmark", k=10, as_of=when)
            shown = {hit.memory.id for hit in result.items}
            assert shown == {one.id for one in items if one.is_valid_at(when)}, when
            reasons = {s.id: s.reason for s in result.skipped}
            assert reasons == {
                one.id: one.invalid_reason(when) for one in items if not one.is_valid_at(when)
            }, when
    # before: item("replaced").is_valid_at(...) was True and item("plain") valid in 2025
    assert not items[3].is_valid_at(times[1])
    assert not items[0].is_valid_at(times[0])
