"""The local-model tier: a real llama.cpp server with Gemma 3 270M (the ``local-llm``
extra), started once for the session on a free loopback port and stopped at the end.

Collected only with ``MEMTRELLIS_LOCAL_LLM=1``, which ``nox -s local_llm`` sets: the
default checks neither install nor start a model. The model's replies are real and
imperfect (a 270M model writes broken JSON, prose, truncated objects); the tests assert
what memtrellis does with them, never what the model says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memtrellis.openai_compatible import OpenAICompatibleLLM

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

if os.environ.get("MEMTRELLIS_LOCAL_LLM") != "1":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def llama_server() -> Iterator[Any]:
    """The running server (`benchmarks/_llama_server.LlamaServer`)."""
    sys.path.insert(0, str(BENCHMARKS))
    from _llama_server import LlamaServer

    with LlamaServer(context=8192, threads=2) as server:
        yield server


@pytest.fixture
def local_llm(llama_server: Any) -> OpenAICompatibleLLM:
    """The local model, plain text replies (the prompt alone asks for JSON)."""
    return OpenAICompatibleLLM(
        "gemma-3-270m", base_url=llama_server.base_url, max_tokens=96, timeout=900
    )


@pytest.fixture
def local_llm_json(llama_server: Any) -> OpenAICompatibleLLM:
    """The local model asked for JSON matching the schema (llama.cpp's grammar)."""
    return OpenAICompatibleLLM(
        "gemma-3-270m",
        base_url=llama_server.base_url,
        max_tokens=96,
        timeout=900,
        response_format="json_schema",
    )
