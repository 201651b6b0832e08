"""memtrellis.openai_compatible over real HTTP: a scripted chat-completions server on
loopback (the model's replies are scripted; the HTTP, the JSON and the adapter are real)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_endpoint import Endpoint, Reply, chat
from memtrellis import Memory
from memtrellis.openai_compatible import EndpointError, OpenAICompatibleLLM
from memtrellis.testing import HashingEmbedder


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], Endpoint]]:
    started: list[Endpoint] = []

    def start(reply: Reply) -> Endpoint:
        started.append(Endpoint(reply))
        return started[-1]

    yield start
    for endpoint in started:
        endpoint.close()


def test_a_call_sends_the_model_messages_and_key_and_returns_the_text(
    serve: Callable[[Reply], Endpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = serve(lambda body: chat("Porto."))
    monkeypatch.setenv("MY_ENDPOINT_KEY", "sk-test-123")
    llm = OpenAICompatibleLLM(
        "tiny", base_url=endpoint.base_url, api_key_env="MY_ENDPOINT_KEY", max_tokens=32
    )
    answer = llm.complete(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where?"}]
    )
    assert answer == "Porto."
    [(headers, body)] = endpoint.requests
    assert headers["authorization"] == "Bearer sk-test-123"
    assert body == {
        "model": "tiny",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Where?"},
        ],
        "temperature": 0.0,
        "max_tokens": 32,
    }
    assert "sk-test-123" not in repr(llm)


def test_no_key_variable_sends_no_authorization(
    serve: Callable[[Reply], Endpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = serve(
        lambda body: chat([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    )
    monkeypatch.delenv("UNSET_KEY_VARIABLE", raising=False)
    llm = OpenAICompatibleLLM("m", base_url=endpoint.base_url, api_key_env="UNSET_KEY_VARIABLE")
    assert llm.complete([{"role": "user", "content": "hi"}]) == "ab"  # content parts joined
    assert "authorization" not in endpoint.requests[0][0]


@pytest.mark.parametrize(
    ("response_format", "expected"),
    [
        (None, None),
        ("json_object", {"type": "json_object"}),
        (
            "json_schema",
            {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": {"type": "object"}, "strict": False},
            },
        ),
    ],
)
def test_complete_json_asks_for_json_as_configured(
    serve: Callable[[Reply], Endpoint], response_format: Any, expected: Any
) -> None:
    endpoint = serve(lambda body: chat('{"memories": []}'))
    llm = OpenAICompatibleLLM("m", base_url=endpoint.base_url, response_format=response_format)
    assert llm.complete_json([{"role": "user", "content": "x"}], {"type": "object"}) == (
        '{"memories": []}'
    )
    assert endpoint.requests[0][1].get("response_format") == expected


def test_http_errors_and_bodies_without_a_reply_raise_endpoint_error(
    serve: Callable[[Reply], Endpoint],
) -> None:
    replies = iter([(503, {"error": "loading model"}), (200, b"<html>proxy</html>"), (200, {})])
    endpoint = serve(lambda body: next(replies))
    llm = OpenAICompatibleLLM("m", base_url=endpoint.base_url)
    with pytest.raises(EndpointError, match=r"HTTP 503.*loading model"):
        llm.complete([{"role": "user", "content": "x"}])
    with pytest.raises(EndpointError, match=r"no reply.*proxy"):
        llm.complete([{"role": "user", "content": "x"}])
    with pytest.raises(EndpointError, match="no reply"):
        llm.complete([{"role": "user", "content": "x"}])


def test_an_unreachable_server_raises_endpoint_error() -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = OpenAICompatibleLLM("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=5)
    with pytest.raises(EndpointError, match="cannot reach"):
        llm.complete([{"role": "user", "content": "x"}])


def test_a_slow_server_raises_timeout_error(serve: Callable[[Reply], Endpoint]) -> None:
    def slow(body: dict[str, Any]) -> tuple[int, Any]:
        time.sleep(1.0)
        return chat("late")

    endpoint = serve(slow)
    llm = OpenAICompatibleLLM("m", base_url=endpoint.base_url, timeout=0.2)
    with pytest.raises(TimeoutError):
        llm.complete([{"role": "user", "content": "x"}])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"base_url": "127.0.0.1:8080"},
        {"max_tokens": 0},
        {"timeout": 0},
        {"response_format": "yaml"},
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any]) -> None:
    from memtrellis import InvalidInputError

    arguments: dict[str, Any] = {"model": "m", **kwargs}
    with pytest.raises(InvalidInputError):
        OpenAICompatibleLLM(**arguments)


def test_fine_mode_extraction_through_the_endpoint(
    serve: Callable[[Reply], Endpoint], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Memory(llm=OpenAICompatibleLLM(...)) extracts through the endpoint; a malformed
    reply is repaired and one that is no JSON at all is kept as a fallback memory, counted
    and logged."""
    replies = iter(
        [
            '```json\n{"memories": [{"value": "Ana lives in Porto", "source_ids": ["m1"]}',
            "I am not able to do that.",
        ]
    )
    endpoint = serve(lambda body: chat(next(replies)))
    llm = OpenAICompatibleLLM("m", base_url=endpoint.base_url, response_format="json_schema")
    caplog.set_level("INFO", logger="memtrellis.extraction")
    with Memory(tmp_path / "store", embedder=HashingEmbedder(), llm=llm) as memory:
        repaired = memory.add([{"role": "user", "content": "I live in Porto", "id": "m1"}])
        kept = memory.add([{"role": "user", "content": "Call me at 9", "id": "m2"}])
        health = memory.health()
    assert [(m.text, m.sources[0].message_id) for m in repaired] == [("Ana lives in Porto", "m1")]
    assert len(kept) == 1 and "extraction:fallback" in kept[0].tags
    assert "Call me at 9" in kept[0].text
    assert health.extraction_fallbacks == 1
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert any(level == "INFO" and "repaired" in text for level, text in logged), logged
    assert any(level == "WARNING" and "kept whole" in text for level, text in logged), logged
    # the extraction call carried the answer model's schema
    first = endpoint.requests[0][1]
    assert first["response_format"]["type"] == "json_schema"
    assert "memories" in json.dumps(first["response_format"]["json_schema"]["schema"])
