"""The optional offline embedders (paraphrase-MiniLM-L3, tokenlearn static) and names for
them: shape, unit length, meaning, pinned per store, no network."""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from memtrellis import Memory
from memtrellis.embeddings import as_embedder, default_embedder
from memtrellis.embeddings.catalog import EMBEDDERS, named_embedder
from memtrellis.errors import EmbedderUnavailableError, EmbeddingMismatchError, InvalidInputError
from offline_helpers import assert_ok_offline, run_offline

HAS_STATIC = find_spec("static_model") is not None  # its wheel exists for x86_64 Linux only
needs_static = pytest.mark.skipif(not HAS_STATIC, reason="no tokenlearn-static-model wheel here")


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module", params=["minilm-l3", pytest.param("static", marks=needs_static)])
def embedder(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return named_embedder(request.param)


def test_dimension_unit_length_and_float_lists(embedder) -> None:  # type: ignore[no-untyped-def]
    vectors = embedder.embed_documents(["short", "a somewhat longer sentence about memory"])
    assert [len(v) for v in vectors] == [embedder.dimension] * 2
    for vector in vectors:
        assert all(type(x) is float for x in vector)
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)
    assert embedder.embed_documents([]) == []
    assert len(embedder.embed_query("")) == embedder.dimension


def test_batch_equals_single_and_keeps_order(embedder) -> None:  # type: ignore[no-untyped-def]
    texts = ["the cat sat", "a much longer sentence about a dog in the park", "tea"]
    batch = embedder.embed_documents(texts)
    for text, vector in zip(texts, batch, strict=True):
        assert np.allclose(embedder.embed_query(text), vector, atol=1e-5)


def test_similar_meaning_is_closer(embedder) -> None:  # type: ignore[no-untyped-def]
    tea, drink, train = embedder.embed_documents(
        ["I like green tea", "Green tea is my favourite drink", "The train leaves at nine"]
    )
    assert cosine(tea, drink) > cosine(tea, train)


def test_bad_input_is_refused(embedder) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError):
        embedder.embed_documents("a bare string")
    with pytest.raises(InvalidInputError):
        embedder.embed_query(3)


@needs_static
def test_model_ids_are_distinct_and_stable() -> None:
    ids = {name: named_embedder(name).model_id for name in EMBEDDERS}
    assert ids == {
        "minilm": "all-MiniLM-L6-v2-onnx-int8",
        "minilm-l3": "paraphrase-MiniLM-L3-v2-onnx",
        "static": "tokenlearn-static-10k-64d-int8",
        "multilingual": "use-multilingual-v3-numpy",
        "multilingual-e5": "multilingual-e5-small-q4",
    }
    assert named_embedder("minilm") is default_embedder()


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInputError, match="'minilm-l3'"):
        as_embedder("no-such-model")


@needs_static
def test_a_store_is_pinned_to_the_embedder_it_was_built_with(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memory(path, embedder="static") as memory:
        memory.add("Ines moved to Lisbon with her dog", mode="fast")
        assert memory.embedder.model_id == "tokenlearn-static-10k-64d-int8"
    for other in ("minilm-l3", None):  # another name, and the default
        with pytest.raises(EmbeddingMismatchError, match="tokenlearn-static-10k-64d-int8"):
            Memory(path, embedder=other)
    with Memory(path, embedder="static") as memory:  # the same name opens it again
        [hit] = memory.recall("Where did Ines move?", k=1).memories
        assert "Lisbon" in hit.text


def test_a_default_store_refuses_the_l3_model(tmp_path: Path) -> None:
    path = tmp_path / "store"
    with Memory(path) as memory:
        memory.add("I like green tea", mode="fast")
    with pytest.raises(EmbeddingMismatchError, match="all-MiniLM-L6-v2-onnx-int8"):
        Memory(path, embedder="minilm-l3")


def test_a_tampered_l3_model_is_refused(tmp_path: Path) -> None:
    from memtrellis.embeddings.minilm_l3 import MiniLML3Embedder

    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    with pytest.raises(EmbedderUnavailableError, match="sha256"):
        MiniLML3Embedder(model_path=fake).load()


def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from memtrellis.embeddings import minilm_l3, pinned, static

    monkeypatch.setattr(minilm_l3, "_DISTRIBUTION", "no-such-distribution")
    with pytest.raises(EmbedderUnavailableError, match=r"memtrellis\[embed-l3\]"):
        minilm_l3.MiniLML3Embedder().load()
    monkeypatch.setattr(pinned, "find_spec", lambda name: None)
    with pytest.raises(EmbedderUnavailableError, match=r"memtrellis\[embed-static\]"):
        static.StaticEmbedder().load()


@needs_static
def test_both_embed_offline_in_a_fresh_process(tmp_path: Path) -> None:
    result = run_offline(
        f"""
        from memtrellis import Memory
        for name in ("minilm-l3", "static"):
            with Memory({str(tmp_path)!r} + "/" + name, embedder=name) as memory:
                memory.add("Ines moved to Lisbon", mode="fast")
                print(name, memory.recall("Lisbon", k=1).memories[0].text)
        """
    )
    assert_ok_offline(result)
    assert result.stdout.split("\n")[:2] == [
        "minilm-l3 Ines moved to Lisbon",
        "static Ines moved to Lisbon",
    ]
