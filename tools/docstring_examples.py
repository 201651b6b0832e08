"""Which public classes and functions lack a docstring example:
python3 tools/docstring_examples.py memtrellis memtrellis.store ...

The rule of the API reference (docs/reference/): every class and function a package
exports in ``__all__`` documents itself with a Google ``Examples:`` section holding a
doctest, which the test runs execute (``--doctest-modules``). The core's tests and each
integration's tests apply it to their own packages with ``lacking_examples``.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterable
from types import ModuleType


def lacking_examples(modules: Iterable[ModuleType]) -> list[str]:
    """``module.name`` of each exported class or function without a doctest example."""
    return [
        f"{module.__name__}.{name}"
        for module in modules
        for name in module.__all__
        if isinstance(obj := getattr(module, name), type) or inspect.isfunction(obj)
        if "Examples:\n" not in (doc := inspect.getdoc(obj) or "") or ">>>" not in doc
    ]


def main(names: list[str]) -> int:
    lacking = lacking_examples(importlib.import_module(name) for name in names)
    print("\n".join(lacking))
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
