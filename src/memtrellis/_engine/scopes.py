"""Whose memory a call refers to: the defaults of a ``Memory``, its ``scope()`` blocks, and
the rule by-id operations follow.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from memtrellis._engine.args import make_scope
from memtrellis.errors import InvalidInputError
from memtrellis.types import Scope

__all__ = ["DEFAULT_ENTITY", "Scopes"]

#: The entity of a ``Memory`` that was given none; such a memory finds any id by id.
DEFAULT_ENTITY = "default"


class Scopes:
    """A memory's default scope and the ``Memory.scope()`` blocks active per thread or task."""

    def __init__(self, default: Scope) -> None:
        self.default = default
        # Memory.scope(): the scope for the current thread or task only.
        self._overrides: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
            f"memtrellis_scope_{id(self)}", default=None
        )

    def overrides(self) -> dict[str, str]:
        """What the innermost active ``scope()`` block sets, for this thread or task."""
        return dict(self._overrides.get() or {})

    def current(
        self,
        entity_id: Any = None,
        process_id: Any = None,
        session_id: Any = None,
        *,
        defaults: Mapping[str, Any] | None = None,
    ) -> Scope:
        """A call's own argument, else the active block, else ``defaults``, else the memory's."""
        if defaults is not None and not isinstance(defaults, Mapping):
            raise InvalidInputError(
                f"defaults must be a mapping of scope ids, not {type(defaults).__name__}"
            )
        base = {**self.default.model_dump(), **(defaults or {}), **self.overrides()}
        return make_scope(
            entity_id if entity_id is not None else base["entity_id"],
            process_id if process_id is not None else base["process_id"],
            session_id if session_id is not None else base["session_id"],
        )

    @contextlib.contextmanager
    def using(self, given: Mapping[str, str]) -> Iterator[Scope]:
        """The block of ``Memory.scope()``: ``given`` over the outer blocks, checked first."""
        token = self._overrides.set({**self.overrides(), **given})
        try:
            yield self.current()  # checks the values before the block runs
        finally:
            self._overrides.reset(token)

    def by_id(self, entity_id: Any) -> str | None:
        """The entity a by-id call looks in; None: any entity of the store.

        A call's ``entity_id=``, else the active block's (either naming any entity,
        ``"default"`` included), else the memory's own entity unless it is ``"default"``: a
        memory bound to no entity finds any id.
        """
        if entity_id is not None:
            return make_scope(entity_id, None, None).entity_id
        chosen = self.overrides().get("entity_id")
        if chosen is not None:
            return chosen
        return None if self.default.entity_id == DEFAULT_ENTITY else self.default.entity_id
