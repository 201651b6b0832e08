"""Patching a client's methods in place: idempotent, reversible and thread-safe.

Each patched method is set on the client's own resource object (``client.chat.
completions``, ``client.messages``...), which the SDKs create once per client, so other
clients of the same class are untouched. The registration is kept on the client; a
second registration with the same client only replaces its settings (the methods are
wrapped once), and `uninstall` puts the original methods back. One lock
serialises installing and uninstalling across threads.

A copy made with ``client.with_options(...)`` or ``client.copy(...)`` is a new client
with new resources; the registered client's ``copy``/``with_options`` are patched too,
so that the copy is registered with the same settings.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memtrellis._host import MemoryHost
from memtrellis.clients.calls import Api, Settings, patched_method

__all__ = ["Registration", "install", "registration_of", "restore_on_close", "uninstall"]

log = logging.getLogger("memtrellis")

_ATTR = "_memtrellis_registration"
_COPIES = ("copy", "with_options")
_LOCK = threading.RLock()


@dataclass
class _Patch:
    target: Any
    name: str
    had_own: bool
    previous: Any
    replacement: Any


@dataclass
class Registration:
    """A registered client's settings and the methods patched for it."""

    settings: Settings
    patches: list[_Patch] = field(default_factory=list)
    #: The memories whose close restores the client (one close hook each).
    closers: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)


def registration_of(client: Any) -> Registration | None:
    """The client's registration, None when it is not registered.

    Examples:
        >>> class Client:  # a client that memory.register(client) patched carries one
        ...     pass
        >>> registration_of(Client()) is None
        True
    """
    found = getattr(client, "__dict__", {}).get(_ATTR)
    return found if isinstance(found, Registration) else None


def _resource(client: Any, path: Sequence[str]) -> Any:
    target = client
    for name in path:
        target = getattr(target, name, None)
        if target is None:
            return None
    return target


def _restore(registration: Registration) -> None:
    for patch in reversed(registration.patches):
        current = vars(patch.target).get(patch.name)
        if current is not patch.replacement:
            # Someone wrapped the method after us; taking ours out would drop theirs.
            log.warning("memtrellis left %s patched: it was wrapped again since", patch.name)
            continue
        if patch.had_own:
            setattr(patch.target, patch.name, patch.previous)
        else:
            delattr(patch.target, patch.name)
    registration.patches.clear()


def _patch(registration: Registration, target: Any, name: str, replacement: Any) -> None:
    own = vars(target)
    registration.patches.append(_Patch(target, name, name in own, own.get(name), replacement))
    setattr(target, name, replacement)


def _copying(
    original: Callable[..., Any], apis: Sequence[Api], is_async: bool, registration: Registration
) -> Callable[..., Any]:
    """``client.copy``/``with_options`` whose copy is registered with the same settings."""

    @functools.wraps(original)
    def copy(*args: Any, **kwargs: Any) -> Any:
        made = original(*args, **kwargs)
        settings = registration.settings
        install(made, apis, is_async=is_async, settings=settings)
        restore_on_close(settings.memory, made)
        return made

    return copy


def install(
    client: Any, apis: Sequence[Api], *, is_async: bool, settings: Settings
) -> Registration:
    """Patch the methods of ``apis`` on ``client`` (once); returns its registration."""
    with _LOCK:
        current = registration_of(client)
        if current is not None:
            current.settings = settings
            return current
        registration = Registration(settings)
        try:
            for api in apis:
                resource = _resource(client, api.path)
                if resource is None:  # an SDK version without this API
                    continue
                for name, kind in api.methods.items():
                    original = getattr(resource, name, None)
                    if original is None:
                        continue
                    replacement = patched_method(
                        original,
                        api=api,
                        kind=kind,
                        is_async=is_async if api.is_async is None else api.is_async,
                        client=client,
                        settings=lambda: registration.settings,
                    )
                    _patch(registration, resource, name, replacement)
            for name in _COPIES:
                original = getattr(client, name, None)
                if callable(original):
                    _patch(
                        registration, client, name, _copying(original, apis, is_async, registration)
                    )
        except BaseException:
            _restore(registration)
            raise
        vars(client)[_ATTR] = registration
        return registration


def uninstall(client: Any, memory: MemoryHost | None = None) -> bool:
    """Put back the original methods; False when ``client`` is not registered (with
    ``memory``, when given)."""
    with _LOCK:
        registration = registration_of(client)
        if registration is None or (
            memory is not None and registration.settings.memory is not memory
        ):
            return False
        _restore(registration)
        del vars(client)[_ATTR]
        return True


def restore_on_close(memory: MemoryHost, client: Any) -> None:
    """Unregister ``client`` when ``memory`` closes (without keeping the client alive).

    A client that takes no weak reference cannot be restored on close; it stays patched
    until ``memory.unregister(client)``.

    Examples:
        >>> class Client:  # any object that takes weak references
        ...     pass
        >>> class Host:
        ...     hooks = []
        ...     def on_close(self, callback):
        ...         self.hooks.append(callback)
        ...         return lambda: self.hooks.remove(callback)
        >>> host, client = Host(), Client()
        >>> _ = install(client, (), is_async=False, settings=Settings(memory=host))
        >>> restore_on_close(host, client)
        >>> len(host.hooks)
        1
        >>> del client  # the hook goes with the client
        >>> len(host.hooks)
        0
    """
    registration = registration_of(client)
    if registration is None or memory in registration.closers:
        return
    try:  # weak both ways: the hook keeps neither the client nor the memory alive
        ref, owner = weakref.ref(client), weakref.ref(memory)
    except TypeError:  # no weak references: close() cannot restore it
        return
    with contextlib.suppress(TypeError):
        registration.closers.add(memory)

    def restore() -> None:
        alive, host = ref(), owner()
        if alive is not None and host is not None:
            uninstall(alive, host)

    weakref.finalize(client, memory.on_close(restore))
