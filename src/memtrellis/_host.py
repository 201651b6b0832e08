"""What code below the facade may ask of a [`Memory`][memtrellis.Memory]: its public doors.

SDK clients and adapters are given a ``Memory`` but never import it (``memory.py`` is
above them); they type it as `MemoryHost`, the public methods they call. Nothing here
reaches into the facade's private attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from memtrellis.types import MemoryItem, RecallResult, Scope, SourceRef

__all__ = ["MemoryHost"]


class MemoryHost(Protocol):
    """The doors of ``Memory`` that clients and adapters use (a structural type).

    Examples:
        >>> from memtrellis.testing import temp_memory
        >>> with temp_memory() as memory:
        ...     host: MemoryHost = memory
        ...     host.call_scope(), host.current_scope().entity_id
        ({}, 'default')
    """

    def recall(self, *args: Any, **kwargs: Any) -> RecallResult:
        """``Memory.recall``."""

    async def arecall(self, *args: Any, **kwargs: Any) -> RecallResult:
        """``Memory.arecall``."""

    def open_items(self, *args: Any, **kwargs: Any) -> list[MemoryItem]:
        """``Memory.open_items``."""

    async def aopen_items(self, *args: Any, **kwargs: Any) -> list[MemoryItem]:
        """``Memory.aopen_items``."""

    def session_turns(self, *args: Any, **kwargs: Any) -> list[SourceRef]:
        """``Memory.session_turns``."""

    async def asession_turns(self, *args: Any, **kwargs: Any) -> list[SourceRef]:
        """``Memory.asession_turns``."""

    def capture(self, *args: Any, **kwargs: Any) -> str:
        """``Memory.capture``."""

    async def acapture(self, *args: Any, **kwargs: Any) -> str:
        """``Memory.acapture``."""

    @property
    def default_scope(self) -> Scope:
        """The memory's own default scope."""

    def call_scope(self) -> dict[str, str]:
        """``Memory.call_scope``: what an active ``Memory.scope`` block sets."""

    def count_adapter(self, event: Literal["call", "capture"], *, source: str) -> None:
        """``Memory.count_adapter``: one more adapter call or capture in ``Health``."""

    def current_scope(
        self,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        session_id: str | None = None,
        defaults: Mapping[str, str] | None = None,
    ) -> Scope:
        """``Memory.current_scope``: the scope a call uses, ``Memory.scope`` blocks honoured."""

    def report_failure(
        self,
        what: Literal["recall", "capture", "context"],
        *,
        source: str,
        error: BaseException | None = None,
    ) -> None:
        """``Memory.report_failure``."""

    def on_close(self, callback: Callable[[], object]) -> Callable[[], None]:
        """``Memory.on_close``: run ``callback`` when the memory closes; returns a remover."""
