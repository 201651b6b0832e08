"""Client handlers: ``memory.register(client)``, ``register(openai=...)``, and so on.

A client given positionally is recognised by `memtrellis.clients.matchers`, and its
matcher's name is then looked up in the ``memtrellis.integrations`` entry-point group
like any named integration: the core's own OpenAI and Anthropic handlers are entry
points of the ``memtrellis`` distribution (`register_openai`,
`register_anthropic`), so a third-party package adds a provider the same way.

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

from typing import TYPE_CHECKING, Any

from memtrellis.clients.anthropic import ANTHROPIC_APIS
from memtrellis.clients.calls import Api, Settings
from memtrellis.clients.matchers import match_client, supported_clients
from memtrellis.clients.openai import OPENAI_APIS
from memtrellis.clients.patch import install
from memtrellis.context import DEFAULT_TOKEN_BUDGET
from memtrellis.errors import InvalidInputError, UnsupportedClientError
from memtrellis.registry import integration_names
from memtrellis.registry import register as register_integration

if TYPE_CHECKING:
    from memtrellis.memory import Memory

__all__ = ["register_anthropic", "register_client", "register_openai", "settings_for"]

_APIS: dict[str, tuple[Api, ...]] = {"openai": OPENAI_APIS, "anthropic": ANTHROPIC_APIS}


def unsupported(obj: Any) -> UnsupportedClientError:
    """The error for an object no client handler takes."""
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    return UnsupportedClientError(kind, supported_clients(), integration_names())


def register_client(memory: Memory, client: Any, **options: Any) -> Any:
    """Register a client given positionally: its matcher names the integration to use.

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
    found = match_client(client)
    if found is None:
        raise unsupported(client)
    return register_integration(memory, found.matcher.name, client, **options)


def settings_for(
    memory: Memory,
    *,
    entity_id: str | None = None,
    process_id: str | None = None,
    session_id: str | None = None,
    k: int = 8,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    capture_mode: str | None = None,
    strict: bool = False,
) -> Settings:
    """Checked settings of one registration (the options of ``Memory.register``)."""
    scope = memory._make_scope(
        "default" if entity_id is None else entity_id, process_id, session_id
    )
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InvalidInputError("k must be an integer from 1 to 1000")
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0:
        raise InvalidInputError("token_budget must be a non-negative integer")
    if capture_mode not in (None, "fast", "fine"):
        raise InvalidInputError("capture_mode must be 'fast', 'fine' or None")
    given = {"entity_id": entity_id, "process_id": process_id, "session_id": session_id}
    return Settings(
        memory=memory,
        scope={name: getattr(scope, name) for name, value in given.items() if value is not None},
        k=k,
        token_budget=token_budget,
        capture_mode=capture_mode,
        strict=bool(strict),
    )


def _install(name: str, memory: Memory, client: Any, options: dict[str, Any]) -> Any:
    found = match_client(client)
    if found is None or found.matcher.name != name:
        raise unsupported(client)
    install(client, _APIS[name], is_async=found.is_async, settings=settings_for(memory, **options))
    memory._registered(client)
    return client


def register_openai(memory: Memory, obj: Any, **options: Any) -> Any:
    """Entry point ``openai``: patch an ``OpenAI``/``AsyncOpenAI`` client in place."""
    return _install("openai", memory, obj, options)


def register_anthropic(memory: Memory, obj: Any, **options: Any) -> Any:
    """Entry point ``anthropic``: patch an ``Anthropic``/``AsyncAnthropic`` client in place."""
    return _install("anthropic", memory, obj, options)
