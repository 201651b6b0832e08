"""The shape of the package: no import cycle, and nothing below the facade reaching into it.

Both rules read the source with ``ast``; neither imports the modules it checks.
"""

from __future__ import annotations

import ast
import doctest
from collections.abc import Iterator
from pathlib import Path

import memtrellis

SRC = Path(memtrellis.__file__).parent
ROOT = SRC.parent.parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}


def imports_of(name: str, path: Path) -> set[str]:
    """The memtrellis modules ``name`` imports anywhere: at the top, in functions, and
    under ``TYPE_CHECKING``. ``from pkg import x`` is an edge to ``pkg.x`` when that is
    a module, else to ``pkg`` (its ``__init__``)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in MODULES:
                    found.add(full)
                elif base in MODULES:
                    found.add(base)
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycles_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_package() -> None:
    graph = {name: imports_of(name, path) for name, path in MODULES.items()}
    assert cycles(graph) == []


# -- private reaches into Memory ------------------------------------------------------------

#: Names a variable holding a Memory goes by in this code base and its tests.
MEMORY_NAMES = frozenset({"memory", "mem", "m", "memory_", "_memory"})


def memory_private_names() -> set[str]:
    """The private attributes and methods ``Memory`` defines (``self._x``, ``def _x``)."""
    tree = ast.parse((SRC / "memory.py").read_text(encoding="utf-8"))
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Memory"]
    names: set[str] = set()
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _trees(path: Path) -> Iterator[ast.AST]:
    """The module, and the code of every doctest in its docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    yield tree
    parser = doctest.DocTestParser()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            for example in parser.get_examples(docstring or ""):
                try:
                    yield ast.parse(example.source)
                except SyntaxError:
                    continue


def _holder(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def private_reaches(path: Path, private: set[str]) -> list[str]:
    """``x._name`` reads that reach into a Memory: ``_name`` is one of Memory's private
    names on anything but ``self``/``cls``, or any private name on a variable named like a
    memory (``memory._x``, ``self._memory._x``, ``settings.memory._x``); string forms
    (``getattr(memory, "_x")``) count too."""
    found: list[str] = []
    for tree in _trees(path):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                if node.attr.startswith("__"):
                    continue
                holder = _holder(node.value)
                if holder in MEMORY_NAMES or (
                    node.attr in private and holder not in {"self", "cls"}
                ):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "setattr", "hasattr"}
                and len(node.args) >= 2
                and _holder(node.args[0]) in MEMORY_NAMES
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")
            ):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_private_reaches_finds_the_forms_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(memory, settings, engine):\n"
        '    """\n    >>> m._engine\n    """\n'
        "    memory._store.put()\n"
        "    settings.memory._stats.count('x')\n"
        "    getattr(memory, '_capture')\n"
        "    engine._engine\n"
        "    engine.store._lock  # not a Memory name, not on a memory: fine\n"
    )
    found = private_reaches(sample, {"_engine"})
    assert sorted(f.split(": ", 1)[1] for f in found) == sorted(
        [
            "memory._store",
            "settings.memory._stats",
            "getattr(memory, '_capture')",
            "engine._engine",
            "m._engine",
        ]
    )


def test_no_module_but_memory_py_reads_a_private_attribute_of_memory() -> None:
    private = memory_private_names()
    assert "_engine" in private
    found = [
        reach
        for path in SRC.rglob("*.py")
        if path != SRC / "memory.py"
        for reach in private_reaches(path, private)
    ]
    assert found == []


def test_tests_reach_into_a_memory_only_through_memtrellis_testing() -> None:
    """Tests use ``store_of``, ``capture_service_of`` and ``store_captured``."""
    private = memory_private_names() | {"_store", "_capture", "_store_captured", "_scope"}
    suites = [ROOT / "tests", *sorted((ROOT / "integrations").glob("*/tests"))]
    # It runs under the sources of release 0.1 (tests/test_migrate.py), whose Memory it drives.
    release_0_1 = {ROOT / "tests" / "v01_store_builder.py"}
    found = [
        reach
        for suite in suites
        for path in sorted(suite.rglob("*.py"))
        if path not in release_0_1
        for reach in private_reaches(path, private)
    ]
    assert found == []
