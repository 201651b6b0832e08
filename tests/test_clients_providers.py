"""Which provider handles what: matchers, the core's entry points, and an installation whose
metadata predates a handler."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

import memtrellis.registry as registry
from memtrellis import Memory, UnsupportedClientError
from memtrellis.clients import match_client, supported_clients
from memtrellis.clients.payload import sdk_version
from provider_fakes import OllamaWire, ollama_client

ROOT = Path(__file__).resolve().parent.parent


def _fake_class(module: str, name: str) -> type:
    made = type(name, (), {})
    made.__module__ = module
    return made


def test_the_core_handlers_are_the_entry_points_pyproject_declares() -> None:
    text = (ROOT / "pyproject.toml").read_text("utf-8")  # tomllib is 3.11+; this runs on 3.10
    section = text.split('[project.entry-points."memtrellis.integrations"]\n', 1)[1]
    section = section.split("\n[", 1)[0]
    declared = dict(re.findall(r'^(\w+) = "([^"]+)"$', section, re.MULTILINE))

    assert declared == registry.CORE_INTEGRATIONS
    for name in declared:
        assert callable(registry.load_integration(name))


def test_handlers_are_found_when_the_installed_metadata_predates_them(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "entry_points", lambda group: [])  # an old dist-info
    wire = OllamaWire("Noted.")

    client = memory.register(ollama_client(wire))
    client.chat(model="llama3.2", messages=[{"role": "user", "content": "I like jazz."}])

    assert {"ollama", "litellm", "google_genai", "bedrock"} <= set(registry.integration_names())
    assert memory.unregister(client) is True


def test_only_google_genai_clients_are_matched_in_the_google_namespace() -> None:
    genai_client = _fake_class("google.genai.client", "Client")
    storage_client = _fake_class("google.cloud.storage.client", "Client")

    found = match_client(genai_client())
    assert found is not None and found.matcher.name == "google_genai"
    assert match_client(storage_client()) is None
    assert "google.genai.Client" in supported_clients()


def test_the_litellm_module_is_matched_and_no_other_module() -> None:
    fake = ModuleType("litellm")
    other = ModuleType("litellm_proxy")

    found = match_client(fake)
    assert found is not None and (found.matcher.name, found.is_async) == ("litellm", False)
    assert match_client(other) is None
    assert "litellm (the module)" in supported_clients()


def test_an_unknown_client_lists_every_provider(memory: Memory) -> None:
    with pytest.raises(UnsupportedClientError) as caught:
        memory.register(_fake_class("boto3.s3", "S3")())

    message = str(caught.value)
    for name in ("google.genai.Client", "botocore.BedrockRuntime", "ollama.AsyncClient"):
        assert name in message


def test_sdk_version_of_a_module_and_of_a_nested_package() -> None:
    genai = pytest.importorskip("google.genai")
    ollama = pytest.importorskip("ollama")
    from importlib.metadata import version

    assert sdk_version(genai.Client(api_key="k")) == genai.__version__  # not google's
    assert sdk_version(ollama.Client()) == version("ollama")
    assert sdk_version(sys) is None  # a module that is neither versioned nor installed
