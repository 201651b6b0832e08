"""The embedded vector index in a process of its own, so that Chroma never holds our GIL.

Chroma 1.5 holds the GIL for the whole of an embedded write (about 17 ms for one vector
and 58 ms for 50 on a 2-core machine; it frees it for reads only), so in an asyncio app
every write of the capture worker stalls the event loop for as long. `VectorProcess`
runs the same [`VectorIndex`][memtrellis.store.vectors.VectorIndex] in a child process
and forwards each call over one of a few socket pairs: the calling thread then waits on
a socket, GIL free, and the writes and queries cost this process only the pickling of
their arguments.

The child is a fresh ``python`` running `_main` (never ``multiprocessing``'s spawn,
which re-runs the user's main module). It serves each connection in a thread of
its own, so queries run beside a write as they do in one process; it exits when this
process closes the connections, including when this process dies. If it dies, a new
child is started and the call in flight sent again (every call is safe to repeat); if that
fails too, it raises
[`VectorIndexUnavailableError`][memtrellis.errors.VectorIndexUnavailableError], and a
failed write stays pending in the shard's log like any failed index write.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from memtrellis.errors import VectorIndexUnavailableError
from memtrellis.types import MemoryItem

__all__ = ["VectorProcess"]

log = logging.getLogger("memtrellis.store")

#: Calls that may run at once: recalls query beside the capture worker's write.
CONNECTIONS = 4


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a typed error carrying its message."""
    try:
        copy = pickle.loads(pickle.dumps(exc))
    except Exception:
        copy = None
    if isinstance(copy, BaseException):
        return exc
    return VectorIndexUnavailableError(f"{type(exc).__name__}: {exc}")


#: What the child runs (``-m`` would import this module twice: the package imports it).
_CHILD = "import sys; from memtrellis.store.vectorproc import _main; sys.exit(_main(sys.argv[1:]))"


class _Child:
    """One running child: its process and the parent ends of its connections."""

    def __init__(self, directory: Path, connections: int, timeout: float) -> None:
        pairs = [socket.socketpair() for _ in range(connections)]
        theirs = [pair[1] for pair in pairs]
        fds = [str(s.fileno()) for s in theirs]
        # The child imports the same memtrellis as this process, wherever it came from.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(directory), *fds],
                pass_fds=[s.fileno() for s in theirs],
                stdin=subprocess.DEVNULL,
                close_fds=True,
                env=env,
            )
        finally:
            for s in theirs:
                s.close()
        self.free: queue.SimpleQueue[Connection] = queue.SimpleQueue()
        self.connections = [Connection(pair[0].detach()) for pair in pairs]
        first = self.connections[0]
        if not first.poll(timeout):
            self.stop()
            raise VectorIndexUnavailableError(
                f"the vector process for {directory} did not start within {timeout:.0f} s"
            )
        try:
            status, value = first.recv()
        except (EOFError, OSError) as exc:
            self.stop()
            raise VectorIndexUnavailableError(
                f"the vector process for {directory} exited while opening Chroma "
                f"(exit code {self.process.poll()})"
            ) from exc
        if status != "ready":
            self.stop()
            raise value
        for connection in self.connections:
            self.free.put(connection)

    def stop(self, timeout: float = 60.0) -> None:
        """Close the connections; the child closes Chroma and exits."""
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("the vector process %s did not exit; killing it", self.process.pid)
            self.process.kill()
            self.process.wait()


class VectorProcess:
    """A [`VectorIndex`][memtrellis.store.vectors.VectorIndex] of an embedded Chroma,
    served by a child process.

    Same methods and results as the index it forwards to; ``Memory(...,
    vector_process=True)`` uses it.

    Examples:
        >>> import shutil, tempfile
        >>> from pathlib import Path
        >>> from memtrellis import MemoryItem, Scope
        >>> directory = Path(tempfile.mkdtemp())
        >>> index = VectorProcess(directory / "chroma")
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> index.upsert([item], [[1.0, 0.0, 0.0]])
        >>> index.query("ana", [1.0, 0.0, 0.0], n=1) == [(item.id, 1.0)]
        True
        >>> index.pid != os.getpid()
        True
        >>> index.close()
        >>> shutil.rmtree(directory)
    """

    def __init__(
        self, directory: Path, *, connections: int = CONNECTIONS, start_timeout: float = 120.0
    ) -> None:
        self.directory = directory
        self.chroma_url: str | None = None
        self.stale = False
        self._connections = connections
        self._timeout = start_timeout
        self._lock = threading.Lock()
        self._closed = False
        directory.mkdir(parents=True, exist_ok=True)
        self._child: _Child | None = _Child(directory, connections, start_timeout)

    @property
    def mode(self) -> str:
        """Always ``"embedded"``: the child runs an embedded Chroma."""
        return "embedded"

    @property
    def pid(self) -> int | None:
        """The child's process id (``None`` between a crash and the next call)."""
        child = self._child
        return None if child is None else child.process.pid

    def _running(self) -> _Child:
        with self._lock:
            if self._closed:
                raise VectorIndexUnavailableError("the vector index is closed")
            if self._child is None:
                self._child = _Child(self.directory, self._connections, self._timeout)
            return self._child

    def _lost(self, child: _Child) -> None:
        with self._lock:
            if self._child is child:
                self._child = None
        child.stop(timeout=5.0)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.stale:
            self.stale = False
            self._call("refresh")
        # Every call is safe to repeat (upserts and deletes are by id), so a child that
        # died is replaced and the call sent again, once.
        for attempt in (1, 2):
            child = self._running()
            connection = child.free.get()
            try:
                connection.send((name, args, kwargs))
                status, value = connection.recv()
            except (EOFError, OSError) as exc:
                # Back in the queue though broken: a thread waiting for a connection of
                # this child must wake up, fail the same way and move to the new one.
                child.free.put(connection)
                self._lost(child)
                if attempt == 2:
                    raise VectorIndexUnavailableError(
                        f"the vector process for {self.directory} exited during {name} "
                        f"twice (exit code {child.process.poll()})"
                    ) from exc
                log.warning(
                    "the vector process for %s exited during %s (exit code %s); restarting it",
                    self.directory,
                    name,
                    child.process.poll(),
                )
                continue
            child.free.put(connection)
            if status == "error":
                raise value
            return value
        raise AssertionError("unreachable")  # pragma: no cover

    def upsert(self, items: Sequence[MemoryItem], embeddings: Sequence[Sequence[float]]) -> None:
        """Insert or replace vectors; items may belong to several entities."""
        self._call("upsert", list(items), [list(map(float, e)) for e in embeddings])

    def update_metadata(self, items: Sequence[MemoryItem]) -> None:
        """Refresh the stored metadata (and item copy) without re-embedding."""
        self._call("update_metadata", list(items))

    def delete(self, entity_id: str, ids: Sequence[str]) -> None:
        """Delete vectors by id from one entity's collection (missing ids are ignored)."""
        self._call("delete", entity_id, list(ids))

    def drop_entity(self, entity_id: str) -> None:
        """Delete one entity's whole collection, leaving none of its data on disk."""
        self._call("drop_entity", entity_id)

    def has(self, entity_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the entity's collection holds."""
        return set(self._call("has", entity_id, list(ids)))

    def embeddings(self, entity_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """Stored vectors of ``ids`` in one entity's collection (missing ids left out)."""
        return dict(self._call("embeddings", entity_id, list(ids)))

    def count(self, entity_id: str) -> int:
        """Number of vectors in one entity's collection."""
        return int(self._call("count", entity_id))

    def item_copies(self, entity_id: str) -> tuple[dict[str, MemoryItem], int]:
        """The readable item copies of an entity's collection by id, and how many were not."""
        copies, unreadable = self._call("item_copies", entity_id)
        return dict(copies), int(unreadable)

    def query(
        self,
        entity_id: str,
        embedding: Sequence[float],
        n: int,
        *,
        process_id: str | None = None,
        session_id: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest memories as ``(id, cosine similarity)``, best first; ``ids``: among
        those memories only."""
        return list(
            self._call(
                "query",
                entity_id,
                list(map(float, embedding)),
                n,
                process_id=process_id,
                session_id=session_id,
                ids=None if ids is None else list(ids),
            )
        )

    def entity_ids(self) -> list[str]:
        """Entities that have a collection, read from collection metadata."""
        return list(self._call("entity_ids"))

    def refresh(self) -> None:
        """Reopen the child's client so it sees what other processes wrote."""
        self.stale = False
        self._call("refresh")

    def close(self) -> None:
        """Stop the child after it has closed Chroma; later calls raise."""
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is not None:
            child.stop()


# -- the child --------------------------------------------------------------------------------
def _serve(index: Any, connection: Connection) -> None:
    while True:
        try:
            name, args, kwargs = connection.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[str, Any] = ("ok", getattr(index, name)(*args, **kwargs))
        except Exception as exc:  # every failure goes back to the caller, typed
            reply = ("error", _portable(exc))
        try:
            connection.send(reply)
        except (EOFError, OSError):
            return


def _main(argv: Sequence[str]) -> int:
    from memtrellis.store.vectors import VectorIndex

    directory, *fds = argv
    connections = [Connection(int(fd)) for fd in fds]
    try:
        index = VectorIndex(Path(directory))
    except Exception as exc:
        with contextlib.suppress(OSError):
            connections[0].send(("error", _portable(exc)))
        return 1
    connections[0].send(("ready", os.getpid()))
    threads = [
        threading.Thread(target=_serve, args=(index, c), name=f"vectors-{n}", daemon=True)
        for n, c in enumerate(connections)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    index.close()
    return 0
