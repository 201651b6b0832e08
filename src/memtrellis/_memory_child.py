"""The engine process of ``Memory(..., engine_process=True)``: a real ``Memory`` serving
calls by name (private; started by [`EngineChannel`][memtrellis._engine.channel.EngineChannel]).

Each connection the parent hands over is served by a thread of its own, so calls run
beside each other as they would in the parent's threads; the process closes its
``Memory`` and exits when the parent closes the control socket (or dies).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from memtrellis._engine.channel import frame, portable, recv_obj, send_obj
from memtrellis.errors import EngineProcessError, InvalidInputError
from memtrellis.memory import Memory

__all__ = ["SERVED", "main"]

#: The facade's methods the engine process answers (the rest stay in the parent).
SERVED = frozenset(
    {
        "add",
        "capture",
        "flush",
        "refine",
        "store",
        "update",
        "forget",
        "get",
        "history",
        "versions",
        "entities",
        "list",
        "recall",
        "open_items",
        "session_turns",
        "relate",
        "export_graph",
        "export",
        "import_",
        "health",
        "close",
    }
)
#: Attributes the parent may read.
ATTRIBUTES = frozenset({"recovery_report", "extractor", "lifecycle", "capture_config"})


class _Server:
    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.special: dict[str, Callable[..., Any]] = {
            "aadd": lambda *a, **k: asyncio.run(memory.aadd(*a, **k)),
            "attribute": self._attribute,
            "export_text": self._export_text,
            "import_text": self._import_text,
            "embed": self._embed,
        }

    def _attribute(self, name: str) -> Any:
        if name not in ATTRIBUTES:
            raise InvalidInputError(f"the engine process has no attribute {name!r} to read")
        return getattr(self.memory, name)

    def _export_text(self, **kwargs: Any) -> tuple[int, str]:
        buffer = io.StringIO()
        count = self.memory.export(buffer, **kwargs)
        return count, buffer.getvalue()

    def _import_text(self, text: str, **kwargs: Any) -> Any:
        return self.memory.import_(io.StringIO(text), **kwargs)

    def _embed(self, method: str, texts: Any) -> Any:
        if method not in ("embed_documents", "embed_query"):
            raise InvalidInputError(f"the embedder has no method {method!r} to call")
        return getattr(self.memory.embedder, method)(texts)

    def run(self, name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if name in self.special:
            return self.special[name](*args, **kwargs)
        if name not in SERVED:
            raise InvalidInputError(f"the engine process does not serve {name!r}")
        return getattr(self.memory, name)(*args, **kwargs)

    def serve(self, sock: socket.socket) -> None:
        with sock:
            while True:
                try:
                    name, args, kwargs = recv_obj(sock)
                except (EOFError, OSError):
                    return
                try:
                    reply: tuple[str, Any] = ("ok", self.run(name, args, kwargs))
                except Exception as exc:  # every failure goes back to the caller, typed
                    note = getattr(exc, "add_note", None)  # Python 3.11+
                    if note is not None:
                        note(f"(raised in the memtrellis engine process {os.getpid()})")
                    reply = ("error", portable(exc))
                try:
                    data = frame(reply)
                except Exception as exc:
                    data = frame(("error", EngineProcessError(f"{name}: the reply failed: {exc}")))
                try:
                    sock.sendall(data)
                except OSError:
                    return


#: The environment variable that sets how much this process yields the CPU to the app's
#: own (``nice`` increment); ``0`` keeps the app's priority.
NICENESS_ENV = "MEMTRELLIS_ENGINE_NICE"
#: The default increment: the engine's work (embedding a batch, Chroma's writes) runs when
#: the app's threads have none to do, so the app's event loop is not kept waiting for a CPU.
NICENESS = 10


def _yield_cpu() -> None:
    """Lower this process's CPU priority by `NICENESS` (or ``$MEMTRELLIS_ENGINE_NICE``).

    Raises:
        InvalidInputError: The variable is not an integer from 0 to 19.
    """
    configured = os.environ.get(NICENESS_ENV, "").strip()
    try:
        increment = int(configured) if configured else NICENESS
    except ValueError:
        increment = -1
    if not 0 <= increment <= 19:
        raise InvalidInputError(
            f"{NICENESS_ENV} must be an integer from 0 to 19, got {configured!r}"
        )
    if increment and hasattr(os, "nice"):  # POSIX; elsewhere the engine keeps the priority
        os.nice(increment)


def main(argv: Sequence[str]) -> int:
    """Open the ``Memory`` the parent describes, serve it until the parent leaves."""
    # Ctrl-C reaches the whole process group: the parent decides when this one stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = socket.socket(fileno=int(argv[0]))
    spec = recv_obj(control)
    try:
        _yield_cpu()
        memory = Memory(spec.pop("path"), **spec)
    except Exception as exc:
        with contextlib.suppress(OSError):
            send_obj(control, ("error", portable(exc)))
        return 1
    server = _Server(memory)
    send_obj(control, ("ready", os.getpid()))
    try:
        while True:
            try:
                message, fds, _flags, _address = socket.recv_fds(control, 1, 1)
            except OSError:
                break
            if not message:
                for fd in fds:
                    os.close(fd)
                break
            for fd in fds:
                os.set_inheritable(fd, False)
                thread = threading.Thread(
                    target=server.serve, args=(socket.socket(fileno=fd),), daemon=True
                )
                thread.start()
    finally:
        memory.close()
    return 0
