"""What ``Memory.relate`` found, as the text a model reads: the one renderer of every
``relate`` tool (LangChain's, LlamaIndex's, an agent's).

A path is one line: its steps in order, a memory as ``[id] text`` and a subject by its
name, each link as ``-kind-``; stored text escaped as in the memory context
(`escape_line`), so a memory can neither forge a line nor close a block. Paths come best
first, numbered; when there are none the answer says which name nothing is about, or
that nothing connects the two.

Examples:
    >>> from memtrellis.relations import PathStep, RelationPath, Relations
    >>> path = RelationPath(confidence=0.7, steps=[
    ...     PathStep(kind="subject", id="Hana", text="Hana", edge="mentions", forward=False),
    ...     PathStep(kind="memory", id="m1", text="Hana moved to Kyoto.", edge="mentions",
    ...              forward=True),
    ...     PathStep(kind="subject", id="Kyoto", text="Kyoto")])
    >>> found = Relations(a="hana", b="kyoto", a_resolved="Hana", b_resolved="Kyoto",
    ...                   paths=[path])
    >>> print(relations_text(found))
    Hana and Kyoto are related through:
    1. Hana -mentions- [m1] Hana moved to Kyoto. -mentions- Kyoto
    >>> print(relations_text(found.model_copy(update={"b_resolved": None, "paths": []})))
    Nothing in the memories is about kyoto.
"""

from __future__ import annotations

from memtrellis.context.escape import escape_line
from memtrellis.relations import RelationPath, Relations

__all__ = ["path_line", "relations_text"]


def path_line(path: RelationPath) -> str:
    """One path as one line, stored text escaped.

    Examples:
        >>> from memtrellis.relations import PathStep, RelationPath
        >>> path_line(RelationPath(confidence=0.9, steps=[
        ...     PathStep(kind="memory", id="m1", text="Ana <3 Porto", edge="supports"),
        ...     PathStep(kind="memory", id="m2", text="Ana lives in Porto.")]))
        '[m1] Ana &lt;3 Porto -supports- [m2] Ana lives in Porto.'
    """
    parts: list[str] = []
    for step in path.steps:
        text = escape_line(step.text)
        parts.append(f"[{escape_line(step.id)}] {text}" if step.kind == "memory" else text)
        if step.edge is not None:
            parts.append(f"-{escape_line(step.edge)}-")
    return " ".join(parts)


def relations_text(found: Relations) -> str:
    """The answer of a ``relate`` tool: the paths, best first, one numbered line each
    (`path_line`), under a line naming what they relate; else why there are none.

    Examples:
        >>> from memtrellis.relations import Relations
        >>> relations_text(Relations(a="Ana", b="Rome", a_resolved="Ana", b_resolved="Rome",
        ...                          paths=[]))
        'No memories connect Ana and Rome.'
    """
    if not found.paths:
        missing = [
            escape_line(asked)
            for asked, resolved in ((found.a, found.a_resolved), (found.b, found.b_resolved))
            if resolved is None
        ]
        if missing:
            return f"Nothing in the memories is about {' or '.join(missing)}."
        a, b = escape_line(str(found.a_resolved)), escape_line(str(found.b_resolved))
        return f"No memories connect {a} and {b}."
    a, b = escape_line(str(found.a_resolved)), escape_line(str(found.b_resolved))
    lines = [f"{a} and {b} are related through:"]
    lines += [f"{number}. {path_line(path)}" for number, path in enumerate(found.paths, 1)]
    return "\n".join(lines)
