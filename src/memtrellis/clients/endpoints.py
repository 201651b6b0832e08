"""Which provider an SDK client really talks to, from the address it was given.

``openai.OpenAI(base_url=...)`` is the door to many servers that speak the OpenAI API:
DeepSeek, xAI, Groq, Mistral, OpenRouter, Together, Fireworks, a local Ollama (``/v1``),
vLLM or llama.cpp server, LM Studio. A captured turn records the provider by the host of
the client's ``base_url`` (known hosted APIs by name; local servers by the default port
each listens on, since their hosts say nothing), else ``"openai-compatible"``; and the
endpoint as scheme, host and port only: never a path, a query or credentials, which can
carry keys.

Examples:
    >>> endpoint_provider("openai", "https://api.deepseek.com/v1")
    ('deepseek', 'https://api.deepseek.com')
    >>> endpoint_provider("openai", "http://localhost:11434/v1/")
    ('ollama', 'http://localhost:11434')
    >>> endpoint_provider("openai", "https://user:secret@llm.example.org:8443/v1?key=k")
    ('openai-compatible', 'https://llm.example.org:8443')
    >>> endpoint_provider("anthropic", "https://api.anthropic.com")
    ('anthropic', 'https://api.anthropic.com')
    >>> endpoint_provider("anthropic", "https://bedrock-runtime.us-west-2.amazonaws.com")
    ('bedrock', 'https://bedrock-runtime.us-west-2.amazonaws.com')
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["client_endpoint", "endpoint_provider"]

#: Hosted APIs that speak the OpenAI protocol, by the end of their host name.
HOSTED = {
    "api.openai.com": "openai",
    "openai.azure.com": "azure-openai",
    "api.deepseek.com": "deepseek",
    "api.x.ai": "xai",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral",
    "openrouter.ai": "openrouter",
    "api.together.xyz": "together",
    "api.fireworks.ai": "fireworks",
    "api.perplexity.ai": "perplexity",
    "generativelanguage.googleapis.com": "google",
    "api.anthropic.com": "anthropic",
}
#: Cloud model services, by the start and end of their regional host names
#: (``bedrock-runtime.us-west-2.amazonaws.com``, ``us-east5-aiplatform.googleapis.com``):
#: the Anthropic SDK's Bedrock and Vertex clients.
CLOUDS = (
    ("bedrock", ".amazonaws.com", "bedrock"),
    ("", "aiplatform.googleapis.com", "vertex"),
)
#: Local servers, by the port each listens on unless told otherwise.
LOCAL_PORTS = {11434: "ollama", 8000: "vllm", 8080: "llama.cpp", 1234: "lmstudio"}
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal"}


def endpoint_provider(sdk: str, base_url: str | None) -> tuple[str, str | None]:
    """``(provider, endpoint)`` of a client of ``sdk`` whose base URL is ``base_url``."""
    if not base_url:
        return sdk, None
    try:
        parts = urlsplit(str(base_url))
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:  # an unparseable address: record nothing of it
        return sdk, None
    if not parts.scheme or not host:
        return sdk, None
    shown = f"[{host}]" if ":" in host else host
    endpoint = f"{parts.scheme}://{shown}" + (f":{port}" if port is not None else "")
    for suffix, provider in HOSTED.items():
        if host == suffix or host.endswith("." + suffix):
            return provider, endpoint
    for prefix, suffix, provider in CLOUDS:
        if host.startswith(prefix) and host.endswith(suffix):
            return provider, endpoint
    if host in _LOCAL_HOSTS and port in LOCAL_PORTS:
        return LOCAL_PORTS[port], endpoint
    return f"{sdk}-compatible", endpoint


def client_endpoint(sdk: str, client: Any) -> tuple[str, str | None]:
    """``(provider, endpoint)`` of an SDK client object (its ``base_url``; read, never
    called through)."""
    try:
        base_url = getattr(client, "base_url", None)
    except Exception:  # a property that fails: attribute nothing
        base_url = None
    return endpoint_provider(sdk, None if base_url is None else str(base_url))
