"""The pydantic base of memtrellis's data models (`memtrellis.types`, `memtrellis.health`):
unknown fields refused, assignments validated.

Examples:
    >>> class Point(Model):
    ...     x: int
    >>> Point(x=1, y=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for Point
    ...
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Model"]


class Model(BaseModel):
    """A pydantic model that refuses unknown fields and validates every assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)
