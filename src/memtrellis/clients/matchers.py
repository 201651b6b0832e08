"""Which SDK a client object belongs to, by the module and name of its classes.

The core never imports an SDK: a client is recognised by the classes in its type's MRO
(package and class name), so a subclass such as ``AzureOpenAI`` is recognised as an
``OpenAI`` client. The package is the SDK's module path (``google.genai``, not the
``google`` namespace, whose other packages have their own ``Client`` classes). A
matcher with no classes recognises the SDK's module itself (``litellm``, whose API is
module functions). Each matcher names the classes of one SDK and no two share a class,
so at most one matcher recognises an object and the order they are listed in never
decides anything.

Examples:
    >>> match_client(object()) is None
    True
    >>> supported_clients()[:3]
    ['anthropic.Anthropic', 'anthropic.AnthropicBedrock', 'anthropic.AnthropicBedrockMantle']
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["MATCHERS", "ClientMatch", "Matcher", "match_client", "supported_clients"]


@dataclass(frozen=True)
class Matcher:
    """The client classes of one SDK and the handler (integration name) that patches them.

    Attributes:
        name: Integration name of the handler (entry point in ``memtrellis.integrations``).
        package: Module path of the SDK (a class matches when its module is this
            package or inside it).
        sync: Names of its synchronous client classes (none: the module itself is the
            client, as ``litellm`` is).
        asynchronous: Names of its asynchronous client classes.
    """

    name: str
    package: str
    sync: frozenset[str]
    asynchronous: frozenset[str]

    def kind(self, obj: Any) -> bool | None:
        """True for one of its async clients, False for a sync one, None for neither."""
        if not self.sync and not self.asynchronous:
            is_module = isinstance(obj, ModuleType) and obj.__name__ == self.package
            return False if is_module else None
        prefix = self.package + "."
        for cls in type(obj).__mro__:
            module = cls.__module__
            if module != self.package and not module.startswith(prefix):
                continue
            if cls.__name__ in self.asynchronous:
                return True
            if cls.__name__ in self.sync:
                return False
        return None


@dataclass(frozen=True)
class ClientMatch:
    """A recognised client: its matcher and whether it is asynchronous."""

    matcher: Matcher
    is_async: bool


_ANTHROPIC_SYNC = frozenset({"Anthropic", "AnthropicBedrock", "AnthropicBedrockMantle"})
_ANTHROPIC_ASYNC = frozenset(
    {"AsyncAnthropic", "AsyncAnthropicBedrock", "AsyncAnthropicBedrockMantle"}
)

MATCHERS = (
    Matcher("openai", "openai", frozenset({"OpenAI"}), frozenset({"AsyncOpenAI"})),
    Matcher(
        "anthropic",
        "anthropic",
        _ANTHROPIC_SYNC | {"AnthropicVertex"},
        _ANTHROPIC_ASYNC | {"AsyncAnthropicVertex"},
    ),
    # google-genai's one client holds both: ``models`` and ``aio.models``.
    Matcher("google_genai", "google.genai", frozenset({"Client"}), frozenset()),
    # boto3.client("bedrock-runtime"): botocore makes its class at run time.
    Matcher("bedrock", "botocore", frozenset({"BedrockRuntime"}), frozenset()),
    Matcher("ollama", "ollama", frozenset({"Client"}), frozenset({"AsyncClient"})),
    # memory.register(litellm): the module; ``completion`` and ``acompletion`` both.
    Matcher("litellm", "litellm", frozenset(), frozenset()),
)


def match_client(obj: Any) -> ClientMatch | None:
    """The matcher that recognises ``obj``, or None.

    Raises:
        RuntimeError: Two matchers recognise it (they are written to be exclusive).

    Examples:
        >>> class OpenAI:  # recognised by module and class name; the SDK is never imported
        ...     pass
        >>> OpenAI.__module__ = "openai._client"
        >>> found = match_client(OpenAI())
        >>> found.matcher.name, found.is_async
        ('openai', False)
        >>> match_client(object()) is None
        True
    """
    found = [
        ClientMatch(matcher, kind)
        for matcher in MATCHERS
        if (kind := matcher.kind(obj)) is not None
    ]
    if len(found) > 1:  # pragma: no cover - the class sets above are disjoint
        raise RuntimeError(f"client matchers overlap on {type(obj).__name__}: {found}")
    return found[0] if found else None


def supported_clients() -> list[str]:
    """``package.Class`` of every client type the matchers recognise, sorted.

    Examples:
        >>> supported_clients()[-3:]
        ['ollama.Client', 'openai.AsyncOpenAI', 'openai.OpenAI']
        >>> "litellm (the module)" in supported_clients()
        True
    """
    classes = (f"{m.package}.{name}" for m in MATCHERS for name in (*m.sync, *m.asynchronous))
    modules = (f"{m.package} (the module)" for m in MATCHERS if not m.sync and not m.asynchronous)
    return sorted((*classes, *modules))
