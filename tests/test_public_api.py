"""The curated public API and the layer rules of DESIGN.md."""

from __future__ import annotations

import ast
import inspect
import runpy
from pathlib import Path
from types import ModuleType

import memtrellis
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
            "EdgeKind",
            "EmbedderUnavailableError",
            "EmbeddingMismatchError",
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


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


FORBIDDEN_EVERYWHERE = ("langchain", "langchain_core", "llama_index", "openai", "anthropic")
# The facade: memory.py (Memory) and the private modules its methods' bodies live in.
FACADE = ("memtrellis.memory", "memtrellis._engine", "memtrellis._memory_async")
_ABOVE_EXTRACTION = (
    "memtrellis.store",
    "memtrellis.recall",
    *FACADE,
    "memtrellis.cli",
    "memtrellis.capture",
)
# layer -> top-level memtrellis modules it must not import (DESIGN.md, "Layers")
LAYER_BANS = {
    "types.py": ("memtrellis.store", "memtrellis.recall", *FACADE, "memtrellis.cli"),
    "errors.py": ("memtrellis.",),
    "store": ("memtrellis.recall", *FACADE, "memtrellis.cli", "memtrellis.lifecycle"),
    "lifecycle": ("memtrellis.recall", *FACADE, "memtrellis.cli", "memtrellis.capture"),
    "recall": (*FACADE, "memtrellis.cli"),
    "extraction": _ABOVE_EXTRACTION,
    "capture": ("memtrellis.recall", *FACADE, "memtrellis.cli"),
    "llm.py": ("memtrellis.store", "memtrellis.recall", *FACADE),
    # context: types, errors and tokens only (DESIGN.md) -- never the store, never recall
    "context": (
        *_ABOVE_EXTRACTION,
        "memtrellis.extraction",
        "memtrellis.embeddings",
        "memtrellis.llm",
        "memtrellis.registry",
        "memtrellis.lifecycle",
        "memtrellis.graph_export",
    ),
    "registry.py": (*_ABOVE_EXTRACTION, "memtrellis.extraction", "memtrellis.lifecycle"),
    # SDK clients: context, types and the registry; memory only through the Memory they get
    "clients": (
        "memtrellis.store",
        "memtrellis.recall",
        "memtrellis.extraction",
        "memtrellis.lifecycle",
        "memtrellis.capture",
        "memtrellis.cli",
        *FACADE,  # the facade and its engine: memory only through the doors (memtrellis._host)
    ),
}
# The facade may import every core layer, never the CLI or the service built on it.
for _module in ("memory.py", "_engine", "_memory_async.py"):
    LAYER_BANS[_module] = (
        "memtrellis.cli",
        "memtrellis.service",
    )
# Export and import read and write the store (and embed), never the layers above it.
LAYER_BANS["transfer.py"] = (
    "memtrellis.recall",
    *FACADE,
    "memtrellis.cli",
    "memtrellis.capture",
    "memtrellis.extraction",
    "memtrellis.service",
)
# Progress bars are a leaf every layer may use.
LAYER_BANS["_progress.py"] = ("memtrellis.store", "memtrellis.recall", *FACADE, "memtrellis.cli")
# The graph export is core: it reads types and the store, never the layers above them.
for _module in ("graph_export.py", "_graph_view.py", "_graph_html.py", "_graph_png.py"):
    LAYER_BANS[_module] = (
        "memtrellis.recall",
        *FACADE,
        "memtrellis.cli",
        "memtrellis.capture",
        "memtrellis.extraction",
    )


def _under(module: str, banned: str) -> bool:
    """``module`` is ``banned`` or inside it (``memtrellis.cli`` is not ``memtrellis.clients``)."""
    if banned.endswith("."):
        return module.startswith(banned)
    return module == banned or module.startswith(banned + ".")


def test_core_never_imports_frameworks_and_layers_hold() -> None:
    for path in SRC.rglob("*.py"):
        imports = _imports(path)
        for module in imports:
            assert module.split(".")[0] not in FORBIDDEN_EVERYWHERE, (path, module)
        rel = path.relative_to(SRC).parts[0]
        for banned in LAYER_BANS.get(rel, ()):
            assert not any(_under(m, banned) for m in imports), (path, banned)


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
        memtrellis.transfer,
        memtrellis.types,
    ]
    assert _lacking_examples(modules) == []
    undocumented = [
        name
        for name, member in vars(memtrellis.Memory).items()
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
