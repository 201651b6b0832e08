"""recall(memory_types=..., tags=...): the searches run among the matching memories only."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest

from memtrellis import InvalidInputError, Memory
from memtrellis.testing import HashingEmbedder
from service_helpers import auth, running_service

QUERY = "what does Ana think about tea"


def _lines(count: int, text: str, memory_type: str, tags: list[str], prefix: str) -> list[str]:
    return [
        json.dumps(
            {
                "id": f"{prefix}{n}",
                "text": text.format(n=n),
                "memory_type": memory_type,
                "tags": tags,
                "scope": {"entity_id": "ana"},
            }
        )
        for n in range(count)
    ]


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    """Ana: 300 episodes that match the query word for word (more than either search's
    candidate list at k=3) and three weakly matching memories of other types and tags."""
    lines = _lines(300, "Ana said tea, tea and tea again, number {n}", "episode", ["chat"], "e")
    lines += _lines(2, "Ana prefers herbal drinks {n}", "preference", ["drinks"], "p")
    lines += _lines(1, "Ana thinks about green tea in the morning", "fact", ["drinks", "x"], "f")
    memory = Memory(tmp_path / "store", entity_id="ana", embedder=HashingEmbedder())
    assert memory.import_(io.StringIO("\n".join(lines))).imported == 303
    return memory


def test_unfiltered_recall_is_swamped_by_the_matching_episodes(memory: Memory) -> None:
    with memory:
        got = memory.recall(QUERY, k=3).memories
    assert "preference" not in {m.memory_type.value for m in got}


def test_memory_types_filter_before_the_candidate_limits(memory: Memory) -> None:
    with memory:
        got = memory.recall(QUERY, k=3, memory_types=["preference", "fact"]).memories
        only_facts = memory.recall(QUERY, k=3, memory_types=["fact"]).memories
    assert sorted(m.id for m in got) == ["f0", "p0", "p1"]
    assert [m.id for m in only_facts] == ["f0"]


def test_tags_match_any_and_combine_with_types(memory: Memory) -> None:
    with memory:
        drinks = memory.recall(QUERY, k=5, tags=["drinks", "nothing"]).memories
        both = memory.recall(QUERY, k=5, tags=["drinks"], memory_types=["preference"]).memories
        none = memory.recall(QUERY, k=5, tags=["absent"]).memories
    assert sorted(m.id for m in drinks) == ["f0", "p0", "p1"]
    assert sorted(m.id for m in both) == ["p0", "p1"]
    assert none == []


async def test_async_recall_takes_the_filters(memory: Memory) -> None:
    async with memory:
        result = await memory.arecall(QUERY, k=3, memory_types=["fact"])
    assert [m.id for m in result.memories] == ["f0"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"memory_types": "fact"}, "memory_types must be a list"),
        ({"memory_types": ["opinion"]}, "unknown memory_type"),
        ({"tags": "drinks"}, "tags must be a list"),
        ({"tags": [1]}, "tags must be strings"),
    ],
)
def test_bad_filters_are_typed_errors(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    with (
        Memory(tmp_path / "s", embedder=HashingEmbedder()) as memory,
        pytest.raises(InvalidInputError, match=message),
    ):
        memory.recall("tea", **options)  # type: ignore[arg-type]


def test_the_service_recall_takes_the_filters(memory: Memory, tmp_path: Path) -> None:
    with (
        running_service(memory, tmp_path / "keys.json") as service,
        httpx.Client(base_url=service.url, timeout=30) as client,
    ):
        key = service.key("ana")
        response = client.post(
            "/v1/recall",
            json={"query": QUERY, "k": 3, "memory_types": ["preference"], "tags": ["drinks"]},
            headers=auth(key),
        )
        bad = client.post(
            "/v1/recall", json={"query": QUERY, "memory_types": ["opinion"]}, headers=auth(key)
        )
    assert response.status_code == 200, response.text
    assert sorted(hit["memory"]["id"] for hit in response.json()["items"]) == ["p0", "p1"]
    assert bad.status_code == 422
