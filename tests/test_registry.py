"""Named integrations and LLM adapters through real entry points (a dist-info on sys.path)."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from memtrellis import InvalidInputError, Memory, UnknownIntegrationError
from memtrellis.llm import as_llm
from memtrellis.registry import integration_names, load_integration, register
from memtrellis.testing import HashingEmbedder, ScriptedLLM

PLUGIN = '''
class Wrapped:
    def __init__(self, memory, obj, **options):
        self.memory, self.obj, self.options = memory, obj, options

def wrap(memory, obj, **options):
    return Wrapped(memory, obj, **options)

NOT_CALLABLE = 42

class Framework:
    """A chat model of some framework: it has no complete()."""
    def __init__(self, answer):
        self.answer = answer

class Adapted:
    def __init__(self, model):
        self.model = model
    def complete(self, messages):
        return self.model.answer

def adapt(obj):
    return Adapted(obj) if isinstance(obj, Framework) else None

class FrameworkWithItsOwnComplete:
    """A framework model whose complete() takes a prompt, not messages (as LlamaIndex's)."""
    def complete(self, prompt):
        raise AssertionError("the framework's own complete must not be called")

class OwnAdapted:
    def complete(self, messages):
        return "adapted"

def adapt_own(obj):
    return OwnAdapted() if isinstance(obj, FrameworkWithItsOwnComplete) else None

def adapt_badly(obj):
    return "not an llm" if isinstance(obj, str) else None

def broken(obj):
    raise AssertionError("never loaded")
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed distribution `demo-plugin` that registers through entry points."""
    (tmp_path / "demo_plugin.py").write_text(PLUGIN)
    info = tmp_path / "demo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """
            [memtrellis.integrations]
            demo = demo_plugin:wrap
            demo_other = demo_plugin:wrap
            demo_broken = demo_plugin:NOT_CALLABLE

            [memtrellis.llm_adapters]
            demo = demo_plugin:adapt
            demo_bad = demo_plugin:adapt_badly
            demo_missing = demo_plugin_missing:nothing
            demo_plugin = demo_plugin:adapt_own
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_register_loads_the_named_integration(plugin: Path) -> None:
    wrapped = register("the memory", "demo", "the model", temperature=0)

    assert (wrapped.memory, wrapped.obj, wrapped.options) == (
        "the memory",
        "the model",
        {"temperature": 0},
    )
    assert {"demo", "demo_broken"} <= set(integration_names())


def test_unknown_names_list_the_installed_ones(plugin: Path) -> None:
    with pytest.raises(UnknownIntegrationError) as caught:
        load_integration("nope")

    assert "demo" in caught.value.known
    assert "'nope'" in str(caught.value) and "demo" in str(caught.value)
    with pytest.raises(InvalidInputError, match="callable"):
        load_integration("demo_broken")


def test_memory_register_one_or_several(plugin: Path, store_path: Path) -> None:
    with Memory(store_path, embedder=HashingEmbedder()) as memory:
        one = memory.register(demo="model a")
        several = memory.register(demo="model b", demo_other="model c")

        assert one.memory is memory and one.obj == "model a"
        assert sorted(several) == ["demo", "demo_other"]
        assert (several["demo"].obj, several["demo_other"].obj) == ("model b", "model c")
        with pytest.raises(InvalidInputError):
            memory.register()
        with pytest.raises(UnknownIntegrationError):
            memory.register(demo="a", unknown="b")


def test_an_llm_adapter_makes_a_framework_model_usable(
    plugin: Path, store_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from demo_plugin import Framework  # type: ignore[import-not-found]

    reply = '{"memories": [{"value": "Ana lives in Porto", "source_ids": ["m1"]}]}'
    with caplog.at_level(logging.WARNING, logger="memtrellis"):
        memory = Memory(store_path, embedder=HashingEmbedder(), llm=Framework(reply))
    with memory:
        [item] = memory.add([{"role": "user", "content": "I live in Porto", "id": "m1"}])

    assert item.text == "Ana lives in Porto"
    assert "demo_missing" in caplog.text  # a broken adapter is logged and skipped


def test_objects_no_adapter_takes_are_refused(plugin: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"complete\(messages\)"):
        as_llm(object())
    with pytest.raises(InvalidInputError, match="adapt_badly"):
        as_llm("a string the bad adapter claims")


def test_the_adapter_named_after_a_models_package_is_asked_first(plugin: Path) -> None:
    from demo_plugin import FrameworkWithItsOwnComplete  # type: ignore[import-not-found]

    model = FrameworkWithItsOwnComplete()  # it has complete(), but not the protocol's
    assert as_llm(model).complete([{"role": "user", "content": "hi"}]) == "adapted"

    class Subclassed(FrameworkWithItsOwnComplete):  # a user's subclass, in another module
        pass

    assert as_llm(Subclassed()).complete([]) == "adapted"
    plain = ScriptedLLM(["{}"])
    assert as_llm(plain) is plain
