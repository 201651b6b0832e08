"""The curated public API and the layer table of docs/architecture.md."""

from __future__ import annotations

import ast
import inspect
import re
import runpy
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import memtrellis
import memtrellis.binding
import memtrellis.clients
import memtrellis.context
import memtrellis.embeddings
import memtrellis.errors
import memtrellis.extraction
import memtrellis.graph_export
import memtrellis.lifecycle
import memtrellis.registry
import memtrellis.service
import memtrellis.service.openapi
import memtrellis.store
import memtrellis.testing
import memtrellis.tool_calls
import memtrellis.transfer
import memtrellis.types

SRC = Path(memtrellis.__file__).parent
TOOL = Path(__file__).resolve().parent.parent / "tools" / "docstring_examples.py"


def _lacking_examples(modules: list[ModuleType]) -> list[str]:
    found: list[str] = runpy.run_path(str(TOOL))["lacking_examples"](modules)
    return found


def test_public_api_is_pinned() -> None:
    assert sorted(memtrellis.__all__) == sorted(
        [
            "Attachment",
            "CaptureConfig",
            "EdgeKind",
            "EmbedderUnavailableError",
            "EmbeddingMismatchError",
            "EngineProcessError",
            "ExtractionConfig",
            "LLM",
            "Mode",
            "Health",
            "HistoryEvent",
            "InvalidInputError",
            "Memory",
            "repair_store",
            "MemoryItem",
            "MemoryNotFoundError",
            "MemoryType",
            "MemtrellisError",
            "RecallExplanation",
            "RecallResult",
            "RecalledMemory",
            "Scope",
            "SourceKind",
            "SourceRef",
            "StoreClosedError",
            "StoreCorruptError",
            "StoreLockedError",
            "TokenizerUnavailableError",
            "ToolUse",
            "UnknownIntegrationError",
            "UnsupportedClientError",
            "VectorIndexUnavailableError",
            "__version__",
        ]
    )
    for name in memtrellis.__all__:
        assert hasattr(memtrellis, name), name


def test_memory_methods_for_sdk_clients_are_public() -> None:
    from memtrellis import Memory

    for name in ("register", "unregister", "scope"):
        method = getattr(Memory, name)
        assert callable(method) and method.__doc__ and "Examples:" in method.__doc__, name


def test_every_error_is_a_memtrellis_error() -> None:
    import memtrellis.errors as errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), memtrellis.MemtrellisError)


ARCHITECTURE = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"
FORBIDDEN_EVERYWHERE = (
    *("langchain", "langchain_core", "llama_index", "openai", "anthropic"),
    *("boto3", "botocore", "ollama", "litellm"),  # and google.genai, below
)


@dataclass(frozen=True)
class Layer:
    """One row of the layer table in docs/architecture.md."""

    name: str
    modules: tuple[str, ...]  # dotted names; a trailing ``*`` matches a name prefix
    may_import: frozenset[str]


def layer_table(text: str) -> dict[str, Layer]:
    """The rows of the table under ``## Layers``: layer, modules, may import, third-party."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("| layer |"))
    rows = []
    for line in lines[start:]:  # the first table only: it ends at the first other line
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append(line)
    assert rows[0].split("|")[1:4] == [" layer ", " modules ", " may import "], rows[0]
    layers: dict[str, Layer] = {}
    for row in rows[1:]:
        name, modules, allowed = (cell.strip() for cell in row.split("|")[1:4])
        found = tuple(m for m in re.findall(r"`(memtrellis[\w.*]*)`", modules))
        assert found, f"layer {name!r} names no module"
        words = {w.strip() for w in allowed.split(",")} - {"—", ""}
        layers[name] = Layer(name, found, frozenset(words))
    for layer in layers.values():
        unknown = layer.may_import - set(layers)
        assert not unknown, f"layer {layer.name!r} may import unknown layers {unknown}"
    return layers


LAYERS = layer_table(ARCHITECTURE.read_text("utf-8"))


def _matches(module: str, pattern: str) -> bool:
    """``module`` is ``pattern`` or inside it (``memtrellis._memory_*`` is a prefix)."""
    if pattern.endswith("*"):
        return module.startswith(pattern[:-1])
    if pattern == "memtrellis":
        return module == "memtrellis"
    return module == pattern or module.startswith(pattern + ".")


def layer_of(module: str) -> str | None:
    """The layer whose row names ``module`` (the longest name that matches wins)."""
    best: tuple[int, str] | None = None
    for layer in LAYERS.values():
        for pattern in layer.modules:
            if _matches(module, pattern) and (best is None or len(pattern) > best[0]):
                best = (len(pattern), layer.name)
    return best[1] if best else None


def _module_name(path: Path) -> str:
    parts = ["memtrellis", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (``TYPE_CHECKING`` and functions too);
    ``from package import name`` counts as ``package.name`` when that is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            assert node.module is not None
            where = SRC.parent.joinpath(*node.module.split("."))
            for alias in node.names:
                if (where / alias.name).is_dir() or (where / f"{alias.name}.py").exists():
                    found.add(f"{node.module}.{alias.name}")  # a submodule
                else:
                    found.add(node.module)  # a name the module defines
    return found


def test_the_layer_table_names_every_layer_and_every_module() -> None:
    """DESIGN's layers, every one of them, as docs/architecture.md lists them."""
    for name in ("lifecycle", "clients", "embeddings", "registry", "service", "cli"):
        assert name in LAYERS, name
    for name in ("tokens", "llm", "engine", "facade", "store", "recall", "extraction"):
        assert name in LAYERS, name
    assert layer_of("memtrellis._engine.writer") == "engine"
    assert layer_of("memtrellis.memory") == "facade"
    unnamed = [_module_name(p) for p in SRC.rglob("*.py") if layer_of(_module_name(p)) is None]
    assert unnamed == []


def test_core_never_imports_frameworks_and_layers_hold() -> None:
    """Every import of every core module is of its own layer or of one its row allows."""
    broken: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        me = layer_of(_module_name(path))
        assert me is not None, path
        allowed = LAYERS[me].may_import | {me}
        for module in sorted(_imports(path)):
            assert module.split(".")[0] not in FORBIDDEN_EVERYWHERE, (path, module)
            assert not module.startswith("google.genai"), (path, module)
            if module.split(".")[0] != "memtrellis":
                continue
            theirs = layer_of(module)
            if theirs not in allowed:
                broken.append(f"{path.relative_to(SRC)} ({me}) imports {module} ({theirs})")
    assert broken == []


def test_the_layer_check_catches_a_forbidden_import() -> None:
    """The table is enforced, not only parsed: a lower layer importing a higher one fails."""
    assert "facade" not in LAYERS["store"].may_import
    assert layer_of("memtrellis.memory") == "facade"
    assert "lifecycle" not in LAYERS["store"].may_import
    assert "facade" not in LAYERS["engine"].may_import  # nothing below imports Memory
    for below in ("store", "recall", "extraction", "lifecycle", "context", "capture"):
        assert not LAYERS[below].may_import & {"facade", "engine", "clients", "cli"}, below


def test_lacking_examples_finds_a_missing_example() -> None:
    module = ModuleType("sample")

    def documented() -> None:
        """Documented.

        Examples:
            >>> documented()
        """

    def bare() -> None:
        """No example."""

    module.__dict__.update(__all__=["documented", "bare"], documented=documented, bare=bare)
    assert _lacking_examples([module]) == ["sample.bare"]


def test_public_names_have_a_docstring_with_an_example() -> None:
    """Every class and function of the public API documents itself with a short example in
    a Google ``Examples:`` section (run by the doctests, shown in the API reference), and
    every public method of ``Memory`` has a docstring."""
    modules = [
        memtrellis,
        memtrellis.binding,
        memtrellis.clients,
        memtrellis.context,
        memtrellis.embeddings,
        memtrellis.errors,
        memtrellis.extraction,
        memtrellis.graph_export,
        memtrellis.lifecycle,
        memtrellis.registry,
        memtrellis.service,
        memtrellis.service.openapi,
        memtrellis.store,
        memtrellis.testing,
        memtrellis.tool_calls,
        memtrellis.transfer,
        memtrellis.types,
    ]
    assert _lacking_examples(modules) == []
    undocumented = [
        name
        for cls in memtrellis.Memory.__mro__[:-1]  # the doors for adapters are a mixin's
        for name, member in vars(cls).items()
        if not name.startswith("_") and not inspect.getdoc(member)
    ]
    assert undocumented == []


def test_docstring_examples_are_google_examples_sections() -> None:
    """``Examples:`` (plural) is the Google section the API reference renders as code; a
    singular ``Example:`` would be rendered as prose, its doctest output as markdown."""
    singular = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if line.strip() == "Example:"
    ]
    assert singular == []
