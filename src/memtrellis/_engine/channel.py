"""The channel to an engine in a child process (``Memory(..., engine_process=True)``).

The child (`memtrellis._memory_child`) is a fresh ``python`` that opens a real ``Memory``
and answers calls by name. This process talks to it over Unix socket pairs: a control
pair made at start (the open arguments, then one byte with a new connection's file
descriptor each time one is needed) and a pool of connections, each carrying one call at a
time as length-prefixed pickles. A sync call sends and blocks in ``recv`` (GIL free); an
async call sends and awaits the reply with ``loop.sock_recv``, that is, with the socket
registered with the running loop: no thread of this process works or waits for it, so
the event loop's thread never waits for the GIL because of memtrellis.

Failures: an error the child's ``Memory`` raises comes back pickled and is raised here with
its type. If the child exits, every call in flight raises
[`EngineProcessError`][memtrellis.errors.EngineProcessError] (not sent again: an ``add``
is not safe to repeat) and the next call starts a new child, which recovers the store and
the capture spool as any open does. The child exits when this process closes the control
socket, and so also when this process dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import socket
import struct
import subprocess
import sys
import threading
from typing import Any

from memtrellis.errors import (
    EngineProcessError,
    InvalidInputError,
    MemtrellisError,
    StoreClosedError,
)

__all__ = ["EngineChannel", "portable", "recv_obj", "send_obj"]

log = logging.getLogger("memtrellis")

_HEADER = struct.Struct("!Q")
#: What the child runs (``-m`` would import the package's modules twice).
_CHILD = "import sys; from memtrellis._memory_child import main; sys.exit(main(sys.argv[1:]))"


def frame(obj: Any) -> bytes:
    """``obj`` pickled, after its length."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def send_obj(sock: socket.socket, obj: Any) -> None:
    """Send one framed pickle (blocking)."""
    sock.sendall(frame(obj))


def _exactly(sock: socket.socket, size: int) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        read = sock.recv_into(view[got:])
        if read == 0:
            raise EOFError("the other end closed the connection")
        got += read
    return buffer


def recv_obj(sock: socket.socket) -> Any:
    """Receive one framed pickle (blocking); EOFError when the other end closed."""
    (size,) = _HEADER.unpack(_exactly(sock, _HEADER.size))
    return pickle.loads(_exactly(sock, size))


async def _arecv_obj(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Any:
    data = bytearray()
    size = None
    while size is None or len(data) < size:
        chunk = await loop.sock_recv(sock, max(65536, (size or 0) - len(data)))
        if not chunk:
            raise EOFError("the other end closed the connection")
        data += chunk
        if size is None and len(data) >= _HEADER.size:
            size = _HEADER.size + _HEADER.unpack_from(data)[0]
    return pickle.loads(memoryview(data)[_HEADER.size :])


def portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else an `EngineProcessError` naming its type."""
    try:
        copy = pickle.loads(pickle.dumps(exc))
    except Exception:
        copy = None
    if isinstance(copy, BaseException):
        return exc
    return EngineProcessError(f"{type(exc).__name__}: {exc}")


class _Child:
    """One running child: its process, its control socket and its idle connections."""

    def __init__(self, spec: bytes, timeout: float) -> None:
        ours, theirs = socket.socketpair()
        # The child imports the same memtrellis as this process, wherever it came from.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                close_fds=True,
                env=env,
            )
        finally:
            theirs.close()
        self.control = ours
        self.idle: list[socket.socket] = []
        self.lock = threading.Lock()
        self.dead = False
        try:
            ours.settimeout(timeout)
            ours.sendall(_HEADER.pack(len(spec)) + spec)
            status, value = recv_obj(ours)
            ours.settimeout(None)
        except TimeoutError as exc:
            self.stop(0.0)
            raise EngineProcessError(
                f"the engine process did not start within {timeout:.0f} s"
            ) from exc
        except (EOFError, OSError) as exc:
            self.stop(5.0)
            raise EngineProcessError(
                f"the engine process exited while opening the store (exit code {self.exit_code})"
            ) from exc
        if status != "ready":
            self.stop(5.0)
            raise value
        self.pid: int = value

    @property
    def exit_code(self) -> int | None:
        """The child's exit code; None while it runs."""
        return self.process.poll()

    def connection(self) -> socket.socket:
        """An idle connection, or a new one handed to the child."""
        with self.lock:
            if self.dead:
                raise EOFError("the engine process is gone")
            if self.idle:
                return self.idle.pop()
            mine, theirs = socket.socketpair()
            try:
                socket.send_fds(self.control, [b"c"], [theirs.fileno()])
            except OSError:
                mine.close()
                raise
            finally:
                theirs.close()
            return mine

    def give_back(self, sock: socket.socket) -> None:
        """A connection with no call in flight, for the next call."""
        with self.lock:
            if not self.dead:
                self.idle.append(sock)
                return
        sock.close()

    def stop(self, timeout: float) -> None:
        """Close every socket (the child closes its ``Memory`` and exits); kill it after
        ``timeout`` seconds."""
        with self.lock:
            self.dead = True
            idle, self.idle = self.idle, []
        for sock in [*idle, self.control]:
            with contextlib.suppress(OSError):
                sock.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("memtrellis: the engine process %s did not exit; killing it", self.pid)
            self.process.kill()
            self.process.wait()


class EngineChannel:
    """Calls by name to a ``Memory`` in a child process, sync or async.

    Examples:
        >>> import shutil, tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> directory = tempfile.mkdtemp()
        >>> channel = EngineChannel({"path": directory, "embedder": HashingEmbedder()})
        >>> len(channel.call("add", ("Ana lives in Porto",), {}))
        1
        >>> channel.pid != os.getpid()
        True
        >>> channel.stop()
        >>> shutil.rmtree(directory)
    """

    def __init__(
        self, spec: dict[str, Any], *, start_timeout: float = 120.0, stop_timeout: float = 90.0
    ) -> None:
        for name, value in spec.items():
            try:
                pickle.dumps(value)
            except Exception as exc:
                raise InvalidInputError(
                    f"engine_process=True opens the memory in a child process, so {name}= must "
                    f"be picklable; {type(value).__name__} is not ({exc}). Give one that "
                    "pickles (or a factory the child can import), or use engine_process=False"
                ) from exc
        self._spec = pickle.dumps(spec)
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._child: _Child | None = _Child(self._spec, start_timeout)

    @property
    def pid(self) -> int | None:
        """The child's process id; None after it exited (until the next call)."""
        child = self._child
        if child is None or child.dead or child.exit_code is not None:
            return None
        return child.pid

    def _running(self) -> _Child:
        with self._lock:
            if self._closed:
                raise StoreClosedError("this Memory is closed")
            child = self._child
            if child is not None and not child.dead and child.exit_code is not None:
                child.stop(0.0)  # it died between calls: nothing of a call is lost
            if child is None or child.dead:
                log.warning("memtrellis: starting a new engine process")
                child = self._child = _Child(self._spec, self._start_timeout)
            return child

    def _lost(self, child: _Child, name: str, exc: BaseException) -> MemtrellisError:
        child.stop(5.0)
        if self._closed:
            return StoreClosedError("this Memory is closed")
        return EngineProcessError(
            f"the engine process exited during {name} (exit code {child.exit_code}); "
            "the call's outcome is unknown, the next call starts a new process"
        )

    @staticmethod
    def _request(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
        try:
            return frame((name, args, kwargs))
        except Exception as exc:
            raise InvalidInputError(
                f"{name}: an argument cannot be sent to the engine process ({exc})"
            ) from exc

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``name`` in the child and return its result or raise its error."""
        request = self._request(name, args, kwargs)
        child = self._running()
        try:
            sock = child.connection()
        except (EOFError, OSError) as exc:
            raise self._lost(child, name, exc) from exc
        try:
            sock.setblocking(True)
            sock.sendall(request)
            status, value = recv_obj(sock)
        except (EOFError, OSError) as exc:
            sock.close()
            raise self._lost(child, name, exc) from exc
        except BaseException:  # interrupted: the reply would come on this connection later
            sock.close()
            raise
        child.give_back(sock)
        if status == "error":
            raise value
        return value

    async def acall(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """`call` for a coroutine: the reply is awaited on the running loop."""
        request = self._request(name, args, kwargs)
        child = self._child
        if child is None or child.dead or self._closed or child.exit_code is not None:
            child = await asyncio.to_thread(self._running)  # starting one takes seconds
        loop = asyncio.get_running_loop()
        try:
            sock = child.connection()
        except (EOFError, OSError) as exc:
            raise self._lost(child, name, exc) from exc
        try:
            sock.setblocking(False)
            await loop.sock_sendall(sock, request)
            status, value = await _arecv_obj(loop, sock)
        except (EOFError, OSError) as exc:
            sock.close()
            raise self._lost(child, name, exc) from exc
        except BaseException:  # cancelled: the reply would come on this connection later
            sock.close()
            raise
        child.give_back(sock)
        if status == "error":
            raise value
        return value

    def stop(self) -> None:
        """Stop the child (it closes its ``Memory`` if no call did) and wait for it."""
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is not None:
            child.stop(self._stop_timeout)
