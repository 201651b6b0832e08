"""Which SDK a client object belongs to, by the module and name of its classes.

The core never imports an SDK: a client is recognised by the classes in its type's MRO
(top-level module and class name), so a subclass such as ``AzureOpenAI`` is recognised
as an ``OpenAI`` client. Each matcher names the classes of one SDK and no two share a
class, so at most one matcher recognises an object and the order they are listed in
never decides anything.

Examples:
    >>> match_client(object()) is None
    True
    >>> supported_clients()
    ['anthropic.Anthropic', 'anthropic.AsyncAnthropic', 'openai.AsyncOpenAI', 'openai.OpenAI']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["MATCHERS", "ClientMatch", "Matcher", "match_client", "supported_clients"]


@dataclass(frozen=True)
class Matcher:
    """The client classes of one SDK and the handler (integration name) that patches them.

    Attributes:
        name: Integration name of the handler (entry point in ``memtrellis.integrations``).
        package: Top-level module of the SDK.
        sync: Names of its synchronous client classes.
        asynchronous: Names of its asynchronous client classes.
    """

    name: str
    package: str
    sync: frozenset[str]
    asynchronous: frozenset[str]

    def kind(self, obj: Any) -> bool | None:
        """True for one of its async clients, False for a sync one, None for neither."""
        for cls in type(obj).__mro__:
            if cls.__module__.split(".")[0] != self.package:
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


MATCHERS = (
    Matcher("openai", "openai", frozenset({"OpenAI"}), frozenset({"AsyncOpenAI"})),
    Matcher("anthropic", "anthropic", frozenset({"Anthropic"}), frozenset({"AsyncAnthropic"})),
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
        >>> supported_clients()[:2]
        ['anthropic.Anthropic', 'anthropic.AsyncAnthropic']
    """
    return sorted(f"{m.package}.{name}" for m in MATCHERS for name in (*m.sync, *m.asynchronous))
