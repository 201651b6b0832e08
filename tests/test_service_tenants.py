"""Cross-tenant access with every verb: another tenant's memory is never shown, changed,
deleted or even confirmed to exist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder
from service_helpers import Running, auth, running_service

SECRET = "Bob's safe code is 4711"


@pytest.fixture
def tenants(tmp_path: Path) -> Iterator[tuple[Running, httpx.Client, str, dict[str, Any]]]:
    memory = Memory(tmp_path / "store", embedder=HashingEmbedder())
    with running_service(memory, tmp_path / "keys.json") as service:
        alice = service.key("alice")
        bob = service.key("bob")
        with httpx.Client(base_url=service.url, timeout=30) as http:
            response = http.post("/v1/memories", json={"text": SECRET}, headers=auth(bob))
            assert response.status_code == 201
            http.post("/v1/memories", json={"text": "Alice's code is 1234"}, headers=auth(alice))
            yield service, http, alice, response.json()["memories"][0]


def _same_as_missing(response: httpx.Response, other: httpx.Response, bob_id: str) -> None:
    """The answer for Bob's id is the answer for an id that does not exist, id aside."""
    assert response.status_code == other.status_code == 404
    assert SECRET not in response.text and "bob" not in response.text.lower()
    assert response.json() == {
        **other.json(),
        "message": other.json()["message"].replace("0" * 32, bob_id),
    }


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "", None),
        ("PATCH", "", {"text": "Bob's safe code is 0000"}),
        ("DELETE", "", None),
        ("GET", "/history", None),
    ],
)
def test_another_tenants_memory_id_is_not_found(
    tenants: tuple[Running, httpx.Client, str, dict[str, Any]],
    method: str,
    suffix: str,
    body: dict[str, Any] | None,
) -> None:
    service, http, alice, bobs = tenants
    theirs = http.request(
        method, f"/v1/memories/{bobs['id']}{suffix}", json=body, headers=auth(alice)
    )
    missing = http.request(
        method, f"/v1/memories/{'0' * 32}{suffix}", json=body, headers=auth(alice)
    )
    _same_as_missing(theirs, missing, bobs["id"])
    named = http.request(
        method,
        f"/v1/memories/{bobs['id']}{suffix}",
        params={"entity_id": "bob"},
        json=body,
        headers=auth(alice),
    )
    assert named.status_code == 403 and SECRET not in named.text
    assert [m.text for m in service.memory.list(entity_id="bob")] == [SECRET]
    assert [e.action for e in service.memory.history(bobs["id"], entity_id="bob")] == ["created"]


@pytest.mark.parametrize(
    ("method", "path", "params", "body"),
    [
        ("POST", "/v1/memories", None, {"text": "planted", "entity_id": "bob"}),
        ("POST", "/v1/memories", None, {"text": "planted", "entity_id": "bob", "background": True}),
        ("POST", "/v1/recall", None, {"query": "safe code", "entity_id": "bob"}),
        ("GET", "/v1/memories", {"entity_id": "bob"}, None),
        ("DELETE", "/v1/memories", {"entity_id": "bob"}, None),
    ],
)
def test_naming_another_tenant_is_forbidden(
    tenants: tuple[Running, httpx.Client, str, dict[str, Any]],
    method: str,
    path: str,
    params: dict[str, str] | None,
    body: dict[str, Any] | None,
) -> None:
    service, http, alice, _ = tenants
    response = http.request(method, path, params=params, json=body, headers=auth(alice))
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "forbidden" and SECRET not in response.text
    assert service.memory.flush(timeout=60)
    assert [m.text for m in service.memory.list(entity_id="bob")] == [SECRET]


def test_recall_and_list_never_reach_another_tenant(
    tenants: tuple[Running, httpx.Client, str, dict[str, Any]],
) -> None:
    _, http, alice, bobs = tenants
    recalled = http.post("/v1/recall", json={"query": SECRET, "k": 50}, headers=auth(alice))
    assert recalled.status_code == 200
    result = recalled.json()
    assert [h["memory"]["text"] for h in result["items"]] == ["Alice's code is 1234"]
    del result["query"]  # the query echoes the text asked about
    assert SECRET not in json.dumps(result) and bobs["id"] not in json.dumps(result)
    listed = http.get("/v1/memories", params={"limit": 1000}, headers=auth(alice))
    assert [m["text"] for m in listed.json()["items"]] == ["Alice's code is 1234"]
