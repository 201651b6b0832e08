"""The settings every adapter shares (which memory, whose scope), on the core's binding.

Each adapter's memory steps, fail-open and counting are the core's adapter binding
([`memtrellis.binding`][memtrellis.binding]), built from these fields; this package only
translates LlamaIndex's messages to and from the core's message dicts.
"""

from __future__ import annotations

import logging
from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from memtrellis import Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
    AdapterOptions,
    AdapterStats,
    Binding,
)
from memtrellis.errors import InvalidInputError

__all__ = ["SOURCE", "CaptureFields", "RecallFields", "binding_for"]

log = logging.getLogger("llama_index.memory.memtrellis")
#: How ``Memory.health()`` counts this package's adapters.
SOURCE = "llama_index"
#: Tag of every memory captured by this package.
TAGS = ("llama_index",)
# Scope fields: "" means the memory's default here, so they are checked as `_options` has them.
_SCOPE = ("entity_id", "process_id", "session_id")


def binding_for(memory: Memory, stats: AdapterStats, **options: Any) -> Binding:
    """The core binding of one adapter of this package."""
    return Binding(memory, AdapterOptions(**options), source=SOURCE, stats=stats, logger=log)


def given(**scope: object) -> dict[str, str]:
    """The scope names given a value (None and ``""`` left out: the memory's default)."""
    return {name: str(value) for name, value in scope.items() if value}


class CaptureFields(BaseModel):
    """Fields of an adapter that captures turns; mixed into LlamaIndex's pydantic classes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory = Field(exclude=True, description="The memtrellis Memory.")
    entity_id: str | None = Field(default=None, description="Whose memory.")
    process_id: str | None = Field(default=None, description="Which app or agent.")
    mode: str | None = Field(default=None, description="Extraction mode of captured turns.")

    _stats: AdapterStats = PrivateAttr(default_factory=AdapterStats)

    def __init__(self, /, **data: Any) -> None:
        # `capture_mode` is the core's name of `mode` (`AdapterOptions`, and so what
        # `memory.register(llama_index=llm, capture_mode=...)` passes).
        if "capture_mode" in data:
            mode = data.pop("capture_mode")
            if data.get("mode") not in (None, mode):
                raise InvalidInputError(f"mode={data['mode']!r} and capture_mode={mode!r} differ")
            data["mode"] = mode
        super().__init__(**data)

    def model_post_init(self, context: Any, /) -> None:
        """Check the options (the binding's rules)."""
        super().model_post_init(context)
        self._options()

    def _options(self) -> dict[str, Any]:
        return {
            "entity_id": self.entity_id or None,
            "process_id": self.process_id or None,
            "capture_mode": self.mode,
            "strict": bool(getattr(self, "strict", False)),
        }

    @property
    def _binding(self) -> Binding:
        # Built from the fields as they are now (pydantic fields may be reassigned); the
        # counters are the adapter's own and kept.
        return binding_for(self.memory, self._stats, **self._options())

    def _scope(self, **named: object) -> dict[str, str]:
        """The adapter's scope, overridden by what a call names."""
        return self._binding.scope(given(**named))

    @property
    def failures(self) -> int:
        """Memory failures so far (logged; raised only when ``strict``)."""
        return self._stats.failures


class RecallFields(CaptureFields):
    """Fields of an adapter that also places memory context: how much (``k``, the token
    budget) and the block's later stages (`memtrellis.binding.AdapterOptions`)."""

    k: int = Field(default=DEFAULT_K, ge=1, le=1000, description="Most memories recalled per read.")
    token_budget: int = Field(
        default=DEFAULT_TOKEN_BUDGET, ge=0, description="Most tokens of memory context."
    )
    strict: bool = Field(default=False, description="Raise memory failures.")
    recent_turns: int = Field(
        default=DEFAULT_RECENT_TURNS,
        description="Most messages of the recent-conversation stage (only what the call lacks).",
    )
    open_items: int = Field(
        default=DEFAULT_OPEN_ITEMS, description="Most open decisions and action items kept."
    )
    context_hint: bool = Field(default=True, description="Earlier turns steer recall.")
    session_history: int = Field(
        default=0, description="The session's earlier messages the call lacks, read (0: off)."
    )

    def __init__(self, /, **data: Any) -> None:
        # The binding's checks first: pydantic would raise its own error, or coerce.
        AdapterOptions.of({n: v for n, v in data.items() if n not in _SCOPE})
        super().__init__(**data)

    def _options(self) -> dict[str, Any]:
        return {
            **super()._options(),
            "k": self.k,
            "token_budget": self.token_budget,
            "recent_turns": self.recent_turns,
            "open_items": self.open_items,
            "context_hint": self.context_hint,
            "session_history": self.session_history,
        }
