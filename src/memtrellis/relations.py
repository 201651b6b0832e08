"""What `Memory.relate` answers: the paths between two names or memories, step by step.

The search itself is `memtrellis.recall.paths`; these are its result types, in the types
layer so that the service and adapters can name them.

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

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memtrellis.types import MemoryItem

__all__ = ["PathStep", "RelationPath", "Relations"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PathStep(_Model):
    """One node of a path: a memory (with its sources) or a subject the memories mention.

    ``edge`` is the kind of the edge to the next step (``None`` on the last step), and
    ``forward`` whether that edge points from this step to the next (``supersedes`` points
    from the newer memory to the one it replaced; ``mentions`` from a memory to a subject).
    """

    kind: Literal["memory", "subject"]
    id: str = Field(description="the memory id, or the subject's name")
    text: str = Field(description="the memory's text, or the subject's name")
    memory: MemoryItem | None = Field(default=None, description="the memory, with sources")
    edge: str | None = None
    forward: bool | None = None


class RelationPath(_Model):
    """A path from ``a`` to ``b`` and the confidence it rests on."""

    steps: list[PathStep]
    confidence: float = Field(ge=0.0, le=1.0)

    @property
    def memories(self) -> list[MemoryItem]:
        """The memories the path passes through, in order."""
        return [s.memory for s in self.steps if s.memory is not None]

    def describe(self) -> str:
        """One line: ``Hana -mentions- [Hana moved to Kyoto.] -mentions- Kyoto``."""
        parts: list[str] = []
        for step in self.steps:
            parts.append(f"[{step.text}]" if step.kind == "memory" else step.text)
            if step.edge is not None:
                parts.append(f"-{step.edge}-")
        return " ".join(parts)


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
