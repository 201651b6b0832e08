"""The doors of [`Memory`][memtrellis.Memory] that adapters and SDK clients use.

`register` and `unregister` go through the one registry; `current_scope` and
`call_scope` read the ``scope()`` blocks; `count_adapter`, `report_failure` and
`on_close` reach the counters and close hooks. Code below the facade sees these doors
through `memtrellis._host.MemoryHost`, never through ``Memory`` itself. `Memory` (and
`ProcessMemory`, whose ``_engine`` keeps the app's scopes, counters and hooks) inherit
them from `AdapterDoors`; the API reference shows them on `Memory`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from memtrellis import registry
from memtrellis._engine import args as _args
from memtrellis.types import Scope

if TYPE_CHECKING:
    from memtrellis._engine import Engine

__all__ = ["AdapterDoors"]

log = logging.getLogger("memtrellis")


class AdapterDoors:
    """The public doors of `Memory` for adapters: registration, scopes, counters, hooks.

    A mixin: the class that uses it sets ``_engine`` (its scopes, stats and ``on_close``)
    and ``_scope`` (the scope a call uses).

    Examples:
        >>> from memtrellis import Memory
        >>> issubclass(Memory, AdapterDoors)
        True
    """

    _engine: Engine
    _scope: Callable[..., Scope]

    def current_scope(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        defaults: Mapping[str, str] | None = None,
    ) -> Scope:
        """The scope a call uses: each argument given, else the active `scope` block's, else
        ``defaults`` (an adapter's), else this memory's.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory, memory.scope(session_id="s1"):
            ...     scope = memory.current_scope(defaults={"entity_id": "bob"})
            ...     scope.entity_id, scope.session_id
            ('bob', 's1')
        """
        return self._scope(entity_id, process_id, session_id, defaults=defaults)

    def register(
        self,
        client: Any = None,
        /,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        capture_mode: str | None = None,
        strict: bool | None = None,
        session_history: int | None = None,
        recent_turns: int | None = None,
        open_items: int | None = None,
        context_hint: bool | None = None,
        **named: Any,
    ) -> Any:
        """Give memory to an SDK client or a framework object, through one registry.

        ``register(client)`` patches an SDK client in place and returns it (OpenAI,
        Anthropic, Google Gen AI, boto3 Bedrock, Ollama, or the ``litellm`` module:
        [SDK clients](../sdk-clients.md)); ``register(langchain=obj)``...: the
        integration of that name (one keyword: the wrapped object; several: a dict by name).
        The options hold for the registration; ``Memory.scope`` overrides its scope per call.
        The block's later stages (`memtrellis.binding.AdapterOptions`): ``open_items``
        (most of the entity's open decisions and action items it keeps room for, 10),
        ``context_hint`` (the request's earlier turns steer recall, True),
        ``session_history=n`` (reads up to ``n`` of the session's earlier messages the
        request lacks, `memtrellis.session_history`; 0, opt-in) and ``recent_turns``
        (the most of those the recent-conversation stage shows, 4). A message the
        request carries is never placed again.

        Raises `UnsupportedClientError` for an unsupported client, `UnknownIntegrationError`
        for a name no installed package registers, `InvalidInputError` for nothing to
        register or a client and names together.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory:
            ...     try:
            ...         memory.register(object())
            ...     except Exception as error:
            ...         print(type(error).__name__)
            UnsupportedClientError
        """
        options = _args.given(entity_id=entity_id, process_id=process_id, session_id=session_id)
        options |= _args.given(
            k=k,
            token_budget=token_budget,
            capture_mode=capture_mode,
            strict=strict,
            session_history=session_history,
            recent_turns=recent_turns,
            open_items=open_items,
            context_hint=context_hint,
        )
        return registry.register_objects(self, client, named, options)

    def unregister(self, client: Any) -> bool:
        """Restore a client registered with this memory; False when it is not.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory:
            ...     memory.unregister(object())
            False
        """
        return registry.unregister(self, client)

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` on [`close`][memtrellis.Memory.close] (last registered first); returns
        a function that cancels it.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory:
            ...     cancel = memory.on_close(lambda: print("closing"))
            closing
        """
        return self._engine.on_close(callback)

    def report_failure(
        self,
        what: Literal["recall", "capture", "context"],
        *,
        source: str,
        error: BaseException | None = None,
    ) -> None:
        """Count a memory failure an adapter absorbed (fail-open) in ``adapter_<what>_failures``
        and ``adapter_failures`` by ``"source.what"`` ("Health" in the
        [operations guide](../operations.md)); ``error`` is logged. Never raises.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory:
            ...     memory.report_failure("recall", source="my_adapter", error=TimeoutError())
            ...     health = memory.health()
            ...     health.adapter_recall_failures, health.adapter_failures
            (1, {'my_adapter.recall': 1})
        """
        try:
            self._engine.stats.count_adapter_failure(what, source)
            if error is not None:
                log.debug("memtrellis: %s reported a %s failure: %r", source, what, error)
        except Exception:  # never let the report break the failure path it runs on
            log.debug("memtrellis: report_failure could not count a failure", exc_info=True)

    def call_scope(self) -> dict[str, str]:
        """What the innermost [`scope`][memtrellis.Memory.scope] block sets (empty outside).

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory, memory.scope(entity_id="bob"):
            ...     memory.call_scope()
            {'entity_id': 'bob'}
        """
        return self._engine.scopes.overrides()

    def count_adapter(self, event: Literal["call", "capture"], *, source: str) -> None:
        """Count an adapter's call or capture in ``adapter_counts`` by ``"source.event"``
        (SDK clients: ``"client"``, also ``client_calls``/``client_captures``). Never raises.

        Examples:
            >>> from memtrellis.testing import temp_memory
            >>> with temp_memory() as memory:
            ...     memory.count_adapter("call", source="client")
            ...     memory.health().client_calls
            1
        """
        try:
            self._engine.stats.count_adapter_event(event, source)
        except Exception:  # never let counting break the call it runs in
            log.debug("memtrellis: count_adapter could not count an event", exc_info=True)
