"""Secrets: no API key, auth header or environment secret reaches the store or the logs.

One sweep through every place a secret passes: SDK clients given keys as arguments and
through the environment (real OpenAI and Anthropic SDKs on a mock transport, including a
call the provider refuses with a message quoting the key), background capture with
fine extraction, the HTTP service with API keys (good and wrong), all with DEBUG logging
to pytest's capture and to a log file. Afterwards every file under the temporary
directory (store, Chroma's SQLite and segments, log, spool, keys file) and every log
record are searched for each secret, raw and base64- and URL-encoded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest

from memtrellis import Memory
from memtrellis.service.auth import default_keys_path
from memtrellis.testing import HashingEmbedder, ScriptedLLM, find_secrets, read_tree
from sdk_fakes import ANTHROPIC_KEY, OPENAI_KEY, ScriptedModel, anthropic_client, openai_client
from service_helpers import auth, running_service

USER = [{"role": "user", "content": "What do I like to drink?"}]


def secret(name: str) -> str:
    return f"sk-{name}-{uuid.uuid4().hex}"


@pytest.fixture
def debug_log(tmp_path: Path) -> Iterator[Path]:
    """Every logger at DEBUG, written to a file as an application would."""
    path = tmp_path / "app.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()


def refusing(key_echo: str) -> httpx2.MockTransport:
    """A provider that refuses every call with an error quoting the key it was given."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        message = f"Incorrect API key provided: {key_echo}"
        return httpx2.Response(401, json={"error": {"message": message, "type": "auth"}})

    return httpx2.MockTransport(handle)


def test_no_secret_reaches_the_store_or_the_logs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    debug_log: Path,
) -> None:
    env = {
        "OPENAI_API_KEY": secret("envopenai"),
        "ANTHROPIC_API_KEY": secret("envanthropic"),
        "MEMTRELLIS_SERVICE_TOKEN": secret("envcustom"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    refused_key = secret("refused")
    wrong_service_key = "mtk_" + uuid.uuid4().hex
    store = tmp_path / "store"
    model = ScriptedModel("Green tea, as usual")
    extractor = ScriptedLLM(lambda _: '{"memories": [{"value": "Alice drinks green tea"}]}')
    caplog.set_level(logging.DEBUG)

    memory = Memory(store, entity_id="alice", embedder=HashingEmbedder(), llm=extractor)
    memory.add("Alice likes green tea")
    clients = [
        memory.register(openai_client(model), capture_mode="fast"),
        memory.register(
            openai.OpenAI(
                http_client=httpx2.Client(transport=httpx2.MockTransport(model)), max_retries=0
            )  # the key comes from the environment
        ),
        memory.register(anthropic_client(model)),
        memory.register(
            anthropic.Anthropic(
                http_client=httpx2.Client(transport=httpx2.MockTransport(model)), max_retries=0
            ),
            capture_mode="fast",
        ),
    ]
    for client in clients[:2]:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER)
        list(client.chat.completions.create(model="gpt-4o-mini", messages=USER, stream=True))
        client.responses.create(model="gpt-4.1-mini", input="What do I drink? I like tea")
    for client in clients[2:]:
        client.messages.create(model="claude-sonnet-5-5", max_tokens=16, messages=USER)
        with client.messages.stream(
            model="claude-sonnet-5-5", max_tokens=16, messages=USER
        ) as stream:
            stream.until_done()
    refused = memory.register(
        openai.OpenAI(
            api_key=refused_key,
            http_client=httpx2.Client(transport=refusing(refused_key)),
            max_retries=0,
        )
    )
    with pytest.raises(openai.AuthenticationError):
        refused.chat.completions.create(model="gpt-4o-mini", messages=USER)
    with monkeypatch.context() as patch:  # a failing capture is logged, without the key
        patch.setattr(memory, "capture", lambda *a, **k: 1 / 0)
        clients[0].chat.completions.create(model="gpt-4o-mini", messages=USER)
    assert "capture for openai.chat.completions failed" in caplog.text
    memory.capture(USER, mode="fine", metadata={"source": "test"})
    assert memory.flush(30)
    # The spool is removed on close: look at the files while the store is open too.
    while_open = read_tree(tmp_path)
    assert any(name.startswith("store/spool/") for name in while_open)

    keys_file = default_keys_path(store)
    with running_service(memory, keys_file) as service:  # closes the memory at the end
        key = service.key("alice")
        with httpx.Client(base_url=service.url, timeout=30) as http:
            stored = http.post("/v1/memories", json={"text": "Alice hikes"}, headers=auth(key))
            assert stored.status_code == 201
            recalled = http.post("/v1/recall", json={"query": "hiking"}, headers=auth(key))
            assert recalled.status_code == 200
            wrong = http.get("/v1/memories", headers=auth(wrong_service_key))
            assert wrong.status_code == 401
            assert http.get("/v1/memories", headers={"X-Api-Key": key}).status_code == 401
    service_keys = json.loads(keys_file.read_text(encoding="utf-8"))
    assert hashlib.sha256(key.encode()).hexdigest() in json.dumps(service_keys)

    sent = {
        value
        for request in model.requests
        for name, value in request.headers.items()
        if name.lower() in ("authorization", "x-api-key")
    }
    given = {OPENAI_KEY, ANTHROPIC_KEY, env["OPENAI_API_KEY"], env["ANTHROPIC_API_KEY"]}
    assert all(any(k in value for value in sent) for k in given)  # each key was used
    secrets = given | sent | set(env.values()) | {refused_key, key, wrong_service_key}

    files = {
        str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()
    }
    assert any(name.startswith("store/chroma/") for name in files)
    assert files.get("app.log")  # the log file was written
    blobs = {
        **{f"{name} (open)": blob for name, blob in while_open.items()},
        **files,
        "caplog": caplog.text.encode(),
    }
    assert b"green tea" in b"".join(files.values()).lower()  # the search can find things
    assert find_secrets(secrets, blobs) == []


@pytest.mark.parametrize(
    "wrap",
    [
        lambda s: s.encode(),
        lambda s: urllib.parse.urlencode({"key": s}).encode(),
        lambda s: json.dumps({"k": s}).encode(),
        lambda s: base64.b64encode(b"Bearer " + s.encode()),
        lambda s: base64.b64encode(b"Bearer: " + s.encode()),
        lambda s: base64.urlsafe_b64encode(b"user:" + s.encode() + b"\n"),
    ],
)
def test_the_search_finds_every_form_of_a_secret(wrap: Callable[[str], bytes]) -> None:
    value = secret("probe")
    assert find_secrets([value], {"blob": b"<<" + wrap(value) + b">>"}) == [(value, "blob")]
    assert find_secrets([secret("other")], {"blob": wrap(value)}) == []
