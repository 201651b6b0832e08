"""Progress bars of long work (tqdm on stderr), shown only to a person watching a terminal.

``progress=None`` (the default of every method that takes it) shows a bar when stderr is
a terminal and the work has lasted half a second (a short call draws nothing); ``True``
shows it at once, wherever stderr goes; ``False`` never.
"""

from __future__ import annotations

import sys
from typing import Any

from memtrellis.errors import InvalidInputError

__all__ = ["bar", "progress_arg", "shown"]


def progress_arg(progress: Any) -> bool | None:
    """``progress=`` checked: ``None``, ``True`` or ``False``."""
    if progress is not None and not isinstance(progress, bool):
        raise InvalidInputError(
            f"progress must be True, False or None, not {type(progress).__name__}"
        )
    return progress


def shown(progress: bool | None) -> bool:
    """Whether a bar asked for with ``progress`` can be seen at all."""
    if progress is not None:
        return progress
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def bar(progress: bool | None, *, desc: str, total: int | None = None, unit: str = "it") -> Any:
    """A tqdm bar on stderr, disabled unless `progress` (or a terminal) asks for it.

    A disabled bar costs almost nothing per ``update``.
    """
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not shown(progress),
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
        delay=0.0 if progress else 0.5,
    )
