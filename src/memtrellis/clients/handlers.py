"""The core's client handlers: the ``openai``, ``anthropic``, ``google_genai``,
``bedrock``, ``ollama`` and ``litellm`` entry points of the registry.

``memory.register(client)`` goes through the one registry
([`memtrellis.registry`][memtrellis.registry]): the matcher that recognises a client
names its integration, and these handlers (entry points of the ``memtrellis``
distribution, like any third-party integration) patch it in place. A patched client is
restored when the memory closes (a `Memory.on_close` hook).

Examples:
    >>> import tempfile
    >>> from memtrellis import Memory, UnsupportedClientError
    >>> from memtrellis.testing import HashingEmbedder
    >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
    ...     try:
    ...         memory.register(object())
    ...     except UnsupportedClientError as error:
    ...         print(error.supported[-1])
    openai.OpenAI
"""

from __future__ import annotations

from typing import Any

from memtrellis._host import MemoryHost
from memtrellis.binding import AdapterOptions
from memtrellis.clients.anthropic import ANTHROPIC_APIS
from memtrellis.clients.bedrock import BEDROCK_APIS
from memtrellis.clients.calls import Api, Settings
from memtrellis.clients.google import GOOGLE_APIS
from memtrellis.clients.litellm import LITELLM_APIS
from memtrellis.clients.matchers import match_client, supported_clients
from memtrellis.clients.ollama import OLLAMA_APIS
from memtrellis.clients.openai import OPENAI_APIS
from memtrellis.clients.patch import install, restore_on_close
from memtrellis.errors import InvalidInputError, UnsupportedClientError
from memtrellis.registry import integration_names
from memtrellis.registry import register_client as _register_client
from memtrellis.types import Scope

__all__ = [
    "register_anthropic",
    "register_bedrock",
    "register_client",
    "register_google_genai",
    "register_litellm",
    "register_ollama",
    "register_openai",
    "settings_for",
]

#: The options of a client registration besides its scope (`AdapterOptions`' fields).
_OPTIONS = frozenset(
    ("k", "token_budget", "capture_mode", "strict", "recent_turns", "open_items",
     "context_hint", "session_history")
)  # fmt: skip

_APIS: dict[str, tuple[Api, ...]] = {
    "openai": OPENAI_APIS,
    "anthropic": ANTHROPIC_APIS,
    "google_genai": GOOGLE_APIS,
    "bedrock": BEDROCK_APIS,
    "ollama": OLLAMA_APIS,
    "litellm": LITELLM_APIS,
}


def unsupported(obj: Any) -> UnsupportedClientError:
    """The error for an object no client handler takes."""
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    return UnsupportedClientError(kind, supported_clients(), integration_names())


def register_client(memory: MemoryHost, client: Any, **options: Any) -> Any:
    """Register a client given positionally: its matcher names the integration to use
    (the registry's [`register_client`][memtrellis.registry.register_client]).

    Raises:
        UnsupportedClientError: No matcher recognises ``client``.

    Examples:
        >>> import tempfile
        >>> from types import SimpleNamespace
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> class OpenAI:  # stands in for openai.OpenAI (matched by module and class name)
        ...     def __init__(self):
        ...         self.sent = []  # what reached the "API"
        ...         def create(**request):
        ...             self.sent.append(request)
        ...             return SimpleNamespace(choices=[])
        ...         self.chat = SimpleNamespace(completions=SimpleNamespace(create=create))
        >>> OpenAI.__module__ = "openai"
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is allergic to peanuts", entity_id="alice")
        >>> client = register_client(memory, OpenAI(), entity_id="alice")
        >>> _ = client.chat.completions.create(messages=[{"role": "user", "content": "Snack?"}])
        >>> system, user = client.sent[0]["messages"]
        >>> system["role"], "allergic to peanuts" in system["content"], user["content"]
        ('system', True, 'Snack?')
        >>> memory.close()
    """
    return _register_client(memory, client, **options)


def settings_for(
    memory: MemoryHost,
    *,
    entity_id: str | None = None,
    process_id: str | None = None,
    session_id: str | None = None,
    **options: Any,
) -> Settings:
    """Checked settings of one registration (the options of ``Memory.register``: the
    scope, then those of `AdapterOptions`, checked there: ``k``, ``token_budget``,
    ``capture_mode``, ``strict``, ``recent_turns``, ``open_items``, ``context_hint``,
    ``session_history``).

    Raises:
        InvalidInputError: A value is out of range or of the wrong type, or an option is
            not one of those.
    """
    scope = _checked_scope(entity_id, process_id, session_id)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise InvalidInputError(f"unknown option(s) for an SDK client: {', '.join(unknown)}")
    if "strict" in options:
        options["strict"] = bool(options["strict"])
    given = {"entity_id": entity_id, "process_id": process_id, "session_id": session_id}
    named = {name: getattr(scope, name) for name, value in given.items() if value is not None}
    return Settings(memory=memory, options=AdapterOptions(**named, **options))


def _checked_scope(entity_id: Any, process_id: Any, session_id: Any) -> Scope:
    for name, value in (
        ("entity_id", entity_id),
        ("process_id", process_id),
        ("session_id", session_id),
    ):
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a string, not {type(value).__name__}")
    try:
        return Scope(
            entity_id="default" if entity_id is None else entity_id,
            process_id=process_id,
            session_id=session_id,
        )
    except ValueError as exc:
        raise InvalidInputError(f"invalid scope: {exc}") from exc


def _install(name: str, memory: MemoryHost, client: Any, options: dict[str, Any]) -> Any:
    found = match_client(client)
    if found is None or found.matcher.name != name:
        raise unsupported(client)
    settings = settings_for(memory, **options)
    install(client, _APIS[name], is_async=found.is_async, settings=settings)
    restore_on_close(memory, client)
    return client


def register_openai(memory: MemoryHost, obj: Any, **options: Any) -> Any:
    """Entry point ``openai``: patch an ``OpenAI``/``AsyncOpenAI`` client in place."""
    return _install("openai", memory, obj, options)


def register_anthropic(memory: MemoryHost, obj: Any, **options: Any) -> Any:
    """Entry point ``anthropic``: patch an ``Anthropic``/``AsyncAnthropic`` client (or its
    Bedrock and Vertex variants) in place."""
    return _install("anthropic", memory, obj, options)


def register_google_genai(memory: MemoryHost, obj: Any, **options: Any) -> Any:
    """Entry point ``google_genai``: patch a ``google.genai.Client`` (``models`` and
    ``aio.models``) in place."""
    return _install("google_genai", memory, obj, options)


def register_bedrock(memory: MemoryHost, obj: Any, **options: Any) -> Any:
    """Entry point ``bedrock``: patch a boto3 ``bedrock-runtime`` client in place."""
    return _install("bedrock", memory, obj, options)


def register_ollama(memory: MemoryHost, obj: Any, **options: Any) -> Any:
    """Entry point ``ollama``: patch an ``ollama.Client``/``AsyncClient`` in place."""
    return _install("ollama", memory, obj, options)


def register_litellm(memory: MemoryHost, obj: Any, **options: Any) -> Any:
    """Entry point ``litellm``: patch the ``litellm`` module's ``completion`` and
    ``acompletion`` (the module is the client; see `memtrellis.clients.litellm`)."""
    return _install("litellm", memory, obj, options)
