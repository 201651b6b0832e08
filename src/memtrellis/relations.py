"""What `Memory.relate` answers: the paths between two names or memories, step by step.

The search itself is `memtrellis.recall.paths`; these are its result types, in the types
layer so that the service and adapters can name them. `PathStep` and `RelationPath` live in
`memtrellis.types` (a recalled memory's explanation shows the path it was reached by) and
are the same classes here.

Examples:
    >>> from memtrellis.relations import PathStep, RelationPath
    >>> path = RelationPath(confidence=0.7, steps=[
    ...     PathStep(kind="subject", id="Hana", text="Hana", edge="mentions", forward=False),
    ...     PathStep(kind="memory", id="m1", text="Hana moved to Kyoto.", edge="mentions",
    ...              forward=True),
    ...     PathStep(kind="subject", id="Kyoto", text="Kyoto")])
    >>> path.describe()
    'Hana -mentions- [Hana moved to Kyoto.] -mentions- Kyoto'
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from memtrellis.types import PathStep, RelationPath

__all__ = ["PathStep", "RelationPath", "Relations"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Relations(_Model):
    """What `relate` found: the names or ids asked about, what they resolved to (``None``:
    no memory and no subject of that name), and the paths between them, best first."""

    a: str
    b: str
    a_resolved: str | None
    b_resolved: str | None
    paths: list[RelationPath]

    @property
    def related(self) -> bool:
        """Whether at least one path was found."""
        return bool(self.paths)
