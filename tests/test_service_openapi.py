"""The published OpenAPI document: current with the app, and the live server fuzzed against it.

Every operation of ``docs/openapi.json`` is fuzzed by schemathesis (valid and invalid
inputs) against a real uvicorn server: no 5xx, every status and body as documented, and
invalid input rejected with 4xx. Examples per operation are bounded to keep CI short.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import hypothesis
import pytest
import schemathesis
from schemathesis import checks
from schemathesis.config import SchemathesisConfig
from schemathesis.schemas import BaseSchema

from memtrellis import Memory
from memtrellis.service.openapi import render
from memtrellis.testing import HashingEmbedder
from service_helpers import Running, auth, running_service

DOC = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"
# Examples per operation and phase (and the seed); raise them for a deeper local run.
EXAMPLES = int(os.environ.get("MEMTRELLIS_FUZZ_EXAMPLES", "30"))


def test_published_openapi_document_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/openapi.json is stale: python -m memtrellis.service.openapi docs/openapi.json"
    )


def test_published_descriptions_carry_no_doctests() -> None:
    """Schema docstrings carry examples for the API reference; the HTTP API's readers get
    the prose only (memtrellis.service.openapi.plain_description)."""
    document = json.loads(DOC.read_text(encoding="utf-8"))
    descriptions: list[str] = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "description" and isinstance(value, str):
                    descriptions.append(value)
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(document)
    assert len(descriptions) > 10  # the schemas' prose is still there
    leaked = [text for text in descriptions if ">>>" in text or "Examples:" in text]
    assert leaked == []


def test_every_endpoint_is_in_the_document() -> None:
    paths = json.loads(DOC.read_text(encoding="utf-8"))["paths"]
    operations = {(method.upper(), path) for path, ops in paths.items() for method in ops}
    assert operations == {
        ("POST", "/v1/memories"),
        ("GET", "/v1/memories"),
        ("DELETE", "/v1/memories"),
        ("POST", "/v1/recall"),
        ("POST", "/v1/relate"),
        ("GET", "/v1/memories/{memory_id}"),
        ("PATCH", "/v1/memories/{memory_id}"),
        ("DELETE", "/v1/memories/{memory_id}"),
        ("GET", "/v1/memories/{memory_id}/history"),
        ("GET", "/health"),
        ("GET", "/metrics"),
    }


# Valid and invalid inputs, the examples, coverage and fuzzing phases, a fixed seed (the
# same shape as a schemathesis.toml). An invalid body too large for the service is
# refused with a typed 413, which the negative-data check must accept too.
CONFIG = {
    "seed": int(os.environ.get("MEMTRELLIS_FUZZ_SEED", "20261130")),
    # the test sends a valid key itself; the fuzzer leaves auth alone
    "generation": {
        "mode": "all",
        "max-examples": EXAMPLES,
        "with-security-parameters": False,
    },
    "checks": {
        "negative_data_rejection": {"expected-statuses": [400, 401, 403, 404, 405, 413, 422]}
    },
}


@pytest.fixture(scope="module")
def document() -> BaseSchema:
    return schemathesis.openapi.from_path(DOC, config=SchemathesisConfig.from_dict(CONFIG))


@pytest.fixture
def published(request: pytest.FixtureRequest, document: BaseSchema) -> BaseSchema:
    """The published document, loaded when the fuzzing test runs. schemathesis 4.32's
    lazy schemas name each operation's subtest by rewriting the item's ``_nodeid``, an
    attribute pytest 9 no longer has: it is given back (pytest reads ``nodeid`` only)."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid
    return document


# Loaded from the fixture, the schema's tests are built when the test runs (each operation
# a subtest), not at collection: building them (the coverage phase's cases) costs ~6.5
# CPU-s, which every pytest-xdist worker paid to collect them, where one runs them.
schema = schemathesis.pytest.from_fixture("published")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, str]]:
    root = tmp_path_factory.mktemp("fuzz")
    memory = Memory(root / "store", embedder=HashingEmbedder())
    with running_service(memory, root / "keys.json") as service:
        # one key that may do everything the document offers, in one tenant
        key = service.key("tenant", monitor=True)
        memory.add("Alice prefers green tea", entity_id="tenant")
        yield service, key


def _requests_counted(service: Running, key: str) -> dict[tuple[str, str], float]:
    """The server's request counts by (method, route), from its /metrics."""
    text = httpx.get(f"{service.url}/metrics", headers=auth(key)).text
    counts: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("memtrellis_http_requests_total{"):
            labels, value = line[len("memtrellis_http_requests_total{") :].split("} ")
            fields = dict(part.split("=", 1) for part in labels.split(","))
            op = (fields["method"].strip('"'), fields["route"].strip('"'))
            counts[op] = counts.get(op, 0) + float(value)
    return counts


@pytest.fixture
def reached(live: tuple[Running, str]) -> Iterator[None]:
    """After every operation's last fuzzed example (the operations are fuzzed in turn in
    one test, against this worker's server), the server counted many requests to each."""
    service, key = live
    before = _requests_counted(service, key)
    yield
    counted = _requests_counted(service, key)
    short: dict[tuple[str, str], float] = {}
    for path, ops in json.loads(DOC.read_text(encoding="utf-8"))["paths"].items():
        for method, op in ops.items():
            # an operation with inputs gets many cases; one without (/health) a few
            least = EXAMPLES // 2 if "parameters" in op or "requestBody" in op else 1
            done = counted.get((method.upper(), path), 0) - before.get((method.upper(), path), 0)
            if done < least:
                short[(method.upper(), path)] = done
    assert short == {}


@schema.parametrize()
@hypothesis.settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(hypothesis.HealthCheck),
    derandomize=True,
    database=None,
)
def test_fuzzed_requests_get_documented_answers(
    case: schemathesis.Case, live: tuple[Running, str], reached: None
) -> None:
    service, key = live
    case.call_and_validate(
        base_url=service.url,
        headers=auth(key),
        checks=[
            checks.not_a_server_error,
            checks.status_code_conformance,
            checks.content_type_conformance,
            checks.response_schema_conformance,
            checks.response_headers_conformance,
            checks.negative_data_rejection,
        ],
    )
