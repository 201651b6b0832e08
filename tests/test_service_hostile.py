"""Hostile requests to the HTTP service: each gets a 4xx with a typed JSON error (or, for a
request the HTTP server cannot parse, the server's 400), nothing is stored, and
``/metrics`` counts exactly what the clients received.

Malformed framing goes over a raw socket to a real uvicorn server, configured as
``memtrellis serve`` configures it; the rest goes through starlette's ``TestClient``.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from memtrellis import Memory
from memtrellis.service.app import create_app
from memtrellis.service.auth import KeyRing
from memtrellis.testing import HashingEmbedder
from service_helpers import Running, auth, running_service

REQUESTS = re.compile(
    r'^memtrellis_http_requests_total\{method="(\w+)",route="([^"]+)",status="(\d+)"\} (\S+)$',
    re.MULTILINE,
)
DISCONNECTS = re.compile(
    r'^memtrellis_http_client_disconnects_total\{method="(\w+)",route="([^"]+)"\} (\S+)$',
    re.MULTILINE,
)


def counted(text: str) -> Counter[tuple[str, str, str]]:
    """Requests counted in a /metrics text, by (method, route, status); /metrics left out."""
    return Counter(
        {
            (method, route, status): int(float(n))
            for method, route, status, n in REQUESTS.findall(text)
            if route != "/metrics"
        }
    )


def disconnects(text: str) -> Counter[tuple[str, str]]:
    return Counter({(m, r): int(float(n)) for m, r, n in DISCONNECTS.findall(text)})


def exchange(url: str, data: bytes, *, close_early: bool = False) -> bytes:
    """Write ``data`` on a new connection and read until the server closes it (or stops
    answering); with ``close_early`` the client hangs up without waiting."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        if close_early:
            return b""
        sock.settimeout(2)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
        return received


def responses(raw: bytes) -> list[tuple[int, bytes]]:
    """The (status, body) of each response in ``raw``, in order."""
    answers = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        fields = dict(line.lower().split(b": ", 1) for line in lines[1:])
        size = int(fields[b"content-length"])
        answers.append((int(lines[0].split()[1]), rest[:size]))
        raw = rest[size:]
    return answers


def head(key: str, *lines: str) -> bytes:
    fields = ["Host: test", f"Authorization: Bearer {key}", "Content-Type: application/json"]
    return ("POST /v1/memories HTTP/1.1\r\n" + "\r\n".join([*fields, *lines]) + "\r\n\r\n").encode()


BODY = b'{"text": "Alice keeps bees on the roof"}'
LEFTOVER = "body longer than Content-Length"
MALFORMED = {
    "body longer than Content-Length": lambda key: head(key, "Content-Length: 10") + BODY,
    "body longer than Content-Length, then a line end": lambda key: (
        head(key, "Content-Length: 10") + BODY + b"\r\n\r\n"
    ),
    "JSON, then bytes past Content-Length": lambda key: (
        head(key, f"Content-Length: {len(BODY)}") + BODY + b"garbage after the body\r\n\r\n"
    ),
    "two Content-Length headers": lambda key: (
        head(key, f"Content-Length: {len(BODY)}", "Content-Length: 10") + BODY
    ),
    "Content-Length and chunked": lambda key: (
        head(key, f"Content-Length: {len(BODY)}", "Transfer-Encoding: chunked") + BODY
    ),
    "bad chunk size": lambda key: (
        head(key, "Transfer-Encoding: chunked") + b"zz\r\n" + BODY + b"\r\n0\r\n\r\n"
    ),
    "negative Content-Length": lambda key: head(key, "Content-Length: -1") + BODY,
    "NUL in the path": lambda key: (
        f"GET /v1/memories/a\x00b HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {key}\r\n\r\n"
    ).encode(),
}


@pytest.fixture(params=["auto", "h11"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    memory = Memory(tmp_path / "store", embedder=HashingEmbedder())
    with running_service(memory, tmp_path / "keys.json", http=request.param) as running:
        yield running


def scrape(service: Running, monitor: str) -> str:
    response = httpx.get(service.url + "/metrics", headers=auth(monitor), timeout=30)
    assert response.status_code == 200, response.text
    return response.text


def test_malformed_framing_is_answered_400_and_counted_as_the_client_saw_it(
    served: Running,
) -> None:
    key, monitor = served.key("alice"), served.key(monitor=True)
    seen: list[int] = []
    for name, build in MALFORMED.items():
        answers = responses(exchange(served.url, build(key)))
        if [status for status, _ in answers] == [422] and name == LEFTOVER:
            # h11 answers the cut request, then waits for the rest of a request line
            seen.append(422)
            continue
        assert answers and answers[-1][0] == 400, (name, answers)
        error = json.loads(answers[-1][1])
        assert error["error"] == "bad_request" and "Content-Length" in error["message"]
        # a whole request before the bad bytes is answered first (422: its cut body)
        assert [status for status, _ in answers[:-1]] in ([], [201], [422]), (name, answers)
        seen += [status for status, _ in answers]
    metrics = scrape(served, monitor)
    by_status = Counter[str]()
    for (_, _, status), n in counted(metrics).items():
        by_status[status] += n
    assert by_status == Counter(str(code) for code in seen)  # every answer, no 500
    # stored exactly when its client was told 201
    assert len(served.memory.list(entity_id="alice")) == seen.count(201) == 1


def test_a_body_cut_short_is_a_client_disconnect_not_a_500(served: Running) -> None:
    key, monitor = served.key("alice"), served.key(monitor=True)
    exchange(served.url, head(key, "Content-Length: 500") + BODY, close_early=True)
    for _ in range(200):  # the server notices the closed connection on its own time
        metrics = scrape(served, monitor)
        if disconnects(metrics):
            break
        time.sleep(0.05)
    assert disconnects(metrics) == Counter({("POST", "/v1/memories"): 1})
    assert counted(metrics) == Counter()  # no status: the client received none
    assert served.memory.list(entity_id="alice") == []


# -- through the app (TestClient) ----------------------------------------------------------
@pytest.fixture
def app_client(tmp_path: Path) -> Iterator[tuple[TestClient, Memory, dict[str, str]]]:
    memory = Memory(tmp_path / "store", embedder=HashingEmbedder())
    ring = KeyRing(tmp_path / "keys.json")
    keys = {
        "alice": ring.add(entity_ids=["alice"])[1],
        "bob": ring.add(entity_ids=["bob"])[1],
        "monitor": ring.add(monitor=True)[1],
    }
    app = create_app(memory, keys=ring, max_body_bytes=64 * 1024)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, memory, keys


def assert_error(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["error"] == error and body["message"]
    return body


@pytest.mark.parametrize("header", ["Authorization", "Host", "Content-Type"])
def test_a_repeated_security_header_is_refused(
    app_client: tuple[TestClient, Memory, dict[str, str]], header: str
) -> None:
    client, memory, keys = app_client
    values = {
        "Authorization": [f"Bearer {keys['alice']}", f"Bearer {keys['bob']}"],
        "Host": ["testserver", "evil.example"],
        "Content-Type": ["application/json", "text/plain"],
    }[header]
    base = {"Authorization": f"Bearer {keys['alice']}", "Content-Type": "application/json"}
    kept = [(k, v) for k, v in base.items() if k != header]
    for order in (values, values[::-1]):  # neither the first nor the last may win
        headers = [*kept, *((header, value) for value in order)]
        response = client.post("/v1/memories", content=BODY, headers=headers)
        assert header in assert_error(response, 400, "bad_request")["message"]
    assert memory.list(entity_id="alice") == [] and memory.list(entity_id="bob") == []
    metrics = client.get("/metrics", headers=auth(keys["monitor"])).text
    assert counted(metrics) == Counter({("POST", "/v1/memories", "400"): 2})


def test_unreadable_bodies_get_typed_errors_not_500(
    app_client: tuple[TestClient, Memory, dict[str, str]],
) -> None:
    client, memory, keys = app_client
    stored = client.post("/v1/memories", json={"text": "keep"}, headers=auth(keys["alice"]))
    [kept] = stored.json()["memories"]
    alice = auth(keys["alice"])
    as_json = {**alice, "Content-Type": "application/json"}
    form = {**alice, "Content-Type": "application/x-www-form-urlencoded"}
    deep = b'{"text": "x", "metadata": {"a": ' + b"[" * 20_000 + b"]" * 20_000 + b"}}"
    cases: list[tuple[str, str, bytes, dict[str, str], int, str]] = [
        ("POST", "/v1/memories", b'{"text": "\xff\xfe bad"}', as_json, 422, "UTF-8"),
        ("POST", "/v1/memories", deep, as_json, 422, "nested"),
        (
            "POST",
            "/v1/recall",
            b'{"query": "x", "k": ' + b"9" * 5000 + b"}",
            as_json,
            422,
            "digits",
        ),
        ("POST", "/v1/memories", b"{not json", as_json, 422, "schema"),
        ("POST", "/v1/memories", BODY, {**alice, "Content-Type": "text/plain"}, 422, "JSON object"),
        ("POST", "/v1/memories", b"text=hi", form, 422, "application/json"),
        ("POST", "/v1/memories", b"[1, 2]", as_json, 422, "JSON object"),
        ("POST", "/v1/memories", b"", as_json, 422, "JSON object"),
        ("POST", "/v1/memories", b'{"text": "' + b"x" * 70_000 + b'"}', as_json, 413, "bytes"),
        ("POST", "/v1/recall", b'{"query": "\\ud800"}', as_json, 422, "schema"),
        ("GET", "/v1/memories/%00", b"", alice, 404, "no memory"),
        ("DELETE", "/v1/memories/a%00b", b"", alice, 404, "no memory"),
        ("GET", "/v1/memories/%ff%fe/history", b"", alice, 404, "no memory"),
        ("PATCH", f"/v1/memories/{kept['id']}", b'{"confidence": NaN}', as_json, 422, "schema"),
        ("GET", "/v1/memories?entity_id=%00", b"", alice, 422, "schema"),
        ("GET", "/v1/memories?limit=" + "9" * 5000, b"", alice, 422, "schema"),
    ]
    errors = {404: "not_found", 413: "payload_too_large", 422: "validation_error"}
    for method, path, content, headers, status, says in cases:
        response = client.request(method, path, content=content, headers=headers)
        body = assert_error(response, status, errors[status])
        assert says in body["message"], (path, content[:40], body)
    harmless = client.get("/v1/memories?tags=%00&key=%ff", headers=auth(keys["alice"]))
    assert harmless.status_code == 200 and harmless.json()["items"] == []
    assert [m.id for m in memory.list(entity_id="alice")] == [kept["id"]]
    assert memory.get(kept["id"]).text == "keep"
    metrics = client.get("/metrics", headers=auth(keys["monitor"])).text
    statuses_counted = {status for _, _, status in counted(metrics)}
    assert statuses_counted == {"200", "201", "404", "413", "422"}  # never a 500


def test_the_service_page_configures_uvicorn_with_the_counting_protocol() -> None:
    """docs/service.md's example runs as written and gives the protocol the metrics need."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "service.md").read_text("utf-8")
    namespace: dict[str, Any] = {"__name__": "__doc_example__"}
    for block in re.findall(r"```python\n(.*?)```", page, re.DOTALL):
        exec(compile(block, "service.md", "exec"), namespace)
    protocol = namespace["config"].http
    assert protocol.__name__.startswith("Counting")
    assert protocol.metrics is namespace["app"].state.metrics
