"""The settings every adapter shares: which memory, whose scope, and the failure counter."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from memtrellis import Memory
from memtrellis.context import DEFAULT_TOKEN_BUDGET

from llama_index.memory.memtrellis._failopen import FailOpen
from llama_index.memory.memtrellis._recall import RecallSettings

__all__ = ["CaptureFields", "RecallFields"]


class CaptureFields(BaseModel):
    """Fields of an adapter that captures turns; mixed into LlamaIndex's pydantic classes."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory = Field(exclude=True, description="The memtrellis Memory.")
    entity_id: str | None = Field(default=None, description="Whose memory.")
    process_id: str | None = Field(default=None, description="Which app or agent.")
    mode: str | None = Field(default=None, description="Extraction mode of captured turns.")

    _guard: FailOpen = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Set up the failure counter."""
        super().model_post_init(context)
        self._guard = FailOpen(
            type(self).__name__,
            strict=bool(getattr(self, "strict", False)),
            memory=self.memory,
        )

    @property
    def failures(self) -> int:
        """Memory failures so far (logged; raised only when ``strict``)."""
        return self._guard.failures


class RecallFields(CaptureFields):
    """Fields of an adapter that also places memory context."""

    k: int = Field(default=8, ge=1, le=1000, description="Most memories recalled per read.")
    token_budget: int = Field(
        default=DEFAULT_TOKEN_BUDGET, ge=0, description="Most tokens of memory context."
    )
    strict: bool = Field(default=False, description="Raise memory failures.")

    @property
    def _settings(self) -> RecallSettings:
        return RecallSettings(self.entity_id, self.process_id, self.k, self.token_budget)
