"""The one registry: what ``Memory.register`` can give memory to, and the LLM adapters.

Everything that can be registered is found here, through entry points:

Integration packages register themselves in their ``pyproject.toml``; the core never
imports them (the core's own OpenAI and Anthropic handlers are entry points too, in
`memtrellis.clients.handlers`):

* group ``memtrellis.integrations``: ``name = "package.module:callable"``, where the
  callable is ``(memory, obj, **options) -> wrapped``.
  [`memtrellis.Memory.register`][memtrellis.Memory.register] looks names up here
  (``memory.register(langchain=chat_model)``).
* group ``memtrellis.llm_adapters``: each entry point loads a callable
  ``(obj) -> LLM | None`` that returns an adapter with ``complete(messages) -> str`` for
  the objects it recognises and ``None`` for the others. `memtrellis.llm.as_llm`
  tries them when ``Memory(llm=...)`` gets something that is not already an LLM. An
  adapter named after a framework's top-level package (``llama_index``) is asked first
  for objects whose classes come from that package, even when they have a ``complete``
  method of another shape.

Examples:
    >>> from memtrellis.registry import integration_names
    >>> isinstance(integration_names(), list)
    True
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from memtrellis.errors import InvalidInputError, UnknownIntegrationError, UnsupportedClientError

__all__ = [
    "CORE_INTEGRATIONS",
    "INTEGRATIONS_GROUP",
    "LLM_ADAPTERS_GROUP",
    "integration_names",
    "llm_adapters",
    "load_integration",
    "register",
    "register_client",
    "register_objects",
    "unregister",
]

INTEGRATIONS_GROUP = "memtrellis.integrations"
LLM_ADAPTERS_GROUP = "memtrellis.llm_adapters"

log = logging.getLogger("memtrellis")


#: The core's own client handlers, as its ``pyproject.toml`` declares them. They are
#: found even when the installed metadata predates one of them (an editable install
#: made before a handler was added); an installed entry point of the same name wins.
CORE_INTEGRATIONS = {
    "openai": "memtrellis.clients.handlers:register_openai",
    "anthropic": "memtrellis.clients.handlers:register_anthropic",
    "google_genai": "memtrellis.clients.handlers:register_google_genai",
    "bedrock": "memtrellis.clients.handlers:register_bedrock",
    "ollama": "memtrellis.clients.handlers:register_ollama",
    "litellm": "memtrellis.clients.handlers:register_litellm",
}


def _entry_points(group: str) -> dict[str, EntryPoint]:
    # Sorted by name so that lookups and the order adapters are tried never depend on
    # the order packages were installed in.
    found = list(entry_points(group=group))
    if group == INTEGRATIONS_GROUP:
        names = {ep.name for ep in found}
        found += [
            EntryPoint(name, value, group)
            for name, value in CORE_INTEGRATIONS.items()
            if name not in names
        ]
    return {ep.name: ep for ep in sorted(found, key=lambda e: e.name)}


def integration_names() -> list[str]:
    """Names of the installed integrations, sorted.

    Examples:
        >>> {"openai", "anthropic"} <= set(integration_names())  # the core's own handlers
        True
    """
    return list(_entry_points(INTEGRATIONS_GROUP))


def load_integration(name: str) -> Callable[..., Any]:
    """The registration callable of the integration ``name``.

    Raises:
        UnknownIntegrationError: No installed package registers ``name``.
        InvalidInputError: The entry point does not load a callable.

    Examples:
        >>> callable(load_integration("openai"))
        True
        >>> from memtrellis import UnknownIntegrationError
        >>> try:
        ...     load_integration("no-such-framework")
        ... except UnknownIntegrationError:
        ...     print("not installed")
        not installed
    """
    found = _entry_points(INTEGRATIONS_GROUP)
    if name not in found:
        raise UnknownIntegrationError(name, sorted(found))
    target = found[name].load()
    if not callable(target):
        raise InvalidInputError(f"integration {name!r} does not load a callable: {target!r}")
    return target  # type: ignore[no-any-return]


def register(memory: Any, name: str, obj: Any, **options: Any) -> Any:
    """Wrap ``obj`` with the integration ``name`` around ``memory``.

    Examples:
        >>> from memtrellis.registry import register
        >>> register(None, "no-such-framework", object())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.UnknownIntegrationError: no memtrellis integration named ...
    """
    return load_integration(name)(memory, obj, **options)


def register_client(memory: Any, client: Any, **options: Any) -> Any:
    """Register an object given positionally: the matcher that recognises it names the
    integration (``openai``, ``anthropic``) that wraps it.

    Raises:
        UnsupportedClientError: No matcher recognises ``client`` (the message lists the
            supported types and the installed integrations).

    Examples:
        >>> register_client(None, object())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.UnsupportedClientError: memtrellis cannot register a builtins...
    """
    from memtrellis.clients.matchers import match_client, supported_clients

    found = match_client(client)
    if found is None:
        kind = f"{type(client).__module__}.{type(client).__qualname__}"
        raise UnsupportedClientError(kind, supported_clients(), integration_names())
    return register(memory, found.matcher.name, client, **options)


def register_objects(
    memory: Any, client: Any, named: Mapping[str, Any], options: Mapping[str, Any]
) -> Any:
    """``Memory.register``: a client given positionally, or ``name=object`` pairs.

    Returns the registered client, the one wrapped object, or several by name.

    Examples:
        >>> register_objects(None, None, {}, {})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: register() takes a client, or integration=object...
    """
    if client is not None:
        if named:
            raise InvalidInputError("register() takes a client or name=object, not both")
        return register_client(memory, client, **options)
    if not named:
        raise InvalidInputError(
            "register() takes a client, or integration=object, e.g. langchain=llm"
        )
    wrapped = {name: register(memory, name, obj, **options) for name, obj in named.items()}
    return next(iter(wrapped.values())) if len(wrapped) == 1 else wrapped


def unregister(memory: Any, client: Any) -> bool:
    """Restore a client patched for ``memory``; False when it is not registered with it.

    Examples:
        >>> unregister(None, object())
        False
    """
    from memtrellis.clients.patch import uninstall

    return uninstall(client, memory)


def llm_adapters(
    only: Collection[str] | None = None, *, skip: Collection[str] = ()
) -> list[Callable[[Any], Any]]:
    """The installed LLM adapter callables, by entry-point name; broken ones are logged.

    Args:
        only: Load only the adapters of these names (``None``: all of them).
        skip: Leave out the adapters of these names.

    Examples:
        >>> adapters = llm_adapters(skip={"langchain", "llama_index"})
        >>> all(callable(adapter) for adapter in adapters)
        True
    """
    adapters: list[Callable[[Any], Any]] = []
    for name, ep in _entry_points(LLM_ADAPTERS_GROUP).items():
        if (only is not None and name not in only) or name in skip:
            continue
        try:
            adapters.append(ep.load())
        except Exception as exc:  # a broken plug-in must not stop the others
            log.warning("cannot load the memtrellis llm adapter %r: %s", name, exc)
    return adapters
