"""What the store asks of Chroma's SQLite file directly, done in another process.

Chroma's Rust core links a SQLite of its own. Two copies of SQLite in one process do not
share their bookkeeping of POSIX locks, which belong to the process: when Python's
``sqlite3`` closes its handle on ``chroma.sqlite3``, the kernel drops every lock this
process holds on that file, Chroma's included, and Chroma's next write can meet another
writer unlocked. A VACUUM run that way beside the capture worker's writes left
"database disk image is malformed" (``tests/test_tenant_isolation.py`` found it). So
every statement of ours on that file runs in a child ``python`` that has no Chroma: its
locks are its own, and SQLite's locking between processes does the rest.

The child runs only the standard library, isolated (``-I``: no ``PYTHON*`` variables,
user site or current directory on its path) and without ``site`` (``-S``: the
environment's .pth files are not read). Starting one costs ~18 ms of CPU, and every
store opened needs one (its write log's index, see ``chroma_tuning``), so one child
answers the operations in turn, one JSON line each, and exits when this process closes
its end, exits or forks, or after ``_IDLE`` seconds without a request: opening stores
one after another costs one start, and no child outlives its use by more than that.
It holds no handle on any file between two operations. An operation that finds it busy
(another thread's) or gone, in a forked child of this process, or under another
``TMPDIR`` (where SQLite writes its temporary files) than it started with, runs in a
child of its own, as every operation once did.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

__all__ = ["ChromaSqlError", "chroma_sql"]

log = logging.getLogger("memtrellis.store")

_CHILD = r"""
import json, sqlite3, sys
def run(op, database, arg):
    def ro():
        return sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    if op == "index_log":
        name = arg
        db = ro()
        names = {r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE name IN (?, 'embeddings_queue')", (name,))}
        db.close()
        if name in names:
            out = True
        elif "embeddings_queue" not in names:
            out = False
        else:
            db = sqlite3.connect(database, timeout=30)
            db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON embeddings_queue (topic, seq_id)")
            db.commit()
            db.close()
            out = True
    elif op == "segments":
        db = ro()
        if arg.get("collection_id") is None:
            rows = db.execute(
                "SELECT s.id FROM segments s JOIN collections c ON s.collection = c.id"
                " WHERE c.name = ?", (arg["name"],)).fetchall()
        else:
            rows = db.execute(
                "SELECT id FROM segments WHERE collection = ?", (arg["collection_id"],)).fetchall()
        db.close()
        out = [str(r[0]) for r in rows]
    elif op == "check":
        try:
            db = ro()
            out = [str(r[0]) for r in db.execute("PRAGMA quick_check").fetchall()][:3]
            db.close()
        except sqlite3.DatabaseError as exc:
            out = [f"{type(exc).__name__}: {exc}"]
    elif op == "vacuum":
        db = sqlite3.connect(database, timeout=30)
        db.isolation_level = None
        db.execute("VACUUM")
        db.close()
        out = True
    else:
        raise SystemExit(f"unknown operation {op!r}")
    return out
def serve(idle):
    import select, traceback
    while select.select([sys.stdin], [], [], idle)[0]:
        line = sys.stdin.readline()
        if not line:
            return
        try:
            reply = {"ok": run(*json.loads(line))}
        except BaseException:
            reply = {"error": traceback.format_exc()[-500:]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
if sys.argv[1] == "--serve":
    serve(float(sys.argv[2]))
else:
    print(json.dumps(run(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
"""


# The child's interpreter options: the standard library alone is what it needs.
_ISOLATED = ("-I", "-S")
# Seconds the answering child waits for another request before it exits.
_IDLE = 5.0
# What SQLite reads from the environment (where it writes its temporary files, VACUUM's
# copy among them): a child that started under other values answers no more.
_TEMP_VARIABLES = ("SQLITE_TMPDIR", "TMPDIR")


class ChromaSqlError(Exception):
    """A statement on ``chroma.sqlite3`` failed in the child (its error in the message)."""


def chroma_sql(operation: str, database: Path, arg: Any = None, *, timeout: float = 120) -> Any:
    """Run one of the child's operations on ``database``; its JSON result.

    Operations: ``index_log`` (``arg``: the index name; whether it exists afterwards),
    ``segments`` (``arg``: ``{"name", "collection_id"}``; the segment ids of a
    collection), ``check`` (SQLite's ``quick_check``, read-only: ``["ok"]`` for a whole
    file, else up to three problems) and ``vacuum``.

    Examples:
        >>> import sqlite3, tempfile
        >>> from pathlib import Path
        >>> database = Path(tempfile.mkdtemp()) / "chroma.sqlite3"
        >>> sqlite3.connect(database).close()
        >>> chroma_sql("index_log", database, "memtrellis_queue_by_topic")
        False
        >>> chroma_sql("check", database)
        ['ok']
        >>> database.unlink(); database.parent.rmdir()
    """
    request = [operation, str(Path(database).absolute()), arg]  # the child's folder is not ours
    if _lock.acquire(blocking=False):
        try:
            answered, result = _ask(request, timeout)
        finally:
            _lock.release()
        if answered:
            return result
    return _one_shot(request, timeout)


def _one_shot(request: list[Any], timeout: float) -> Any:
    """The operation in a child of its own, which exits once it has answered."""
    operation, database, arg = request
    try:
        done = subprocess.run(  # our own fixed program, no shell
            [sys.executable, *_ISOLATED, "-c", _CHILD, operation, database, json.dumps(arg)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ChromaSqlError(f"{operation} on {database}: {exc}") from exc
    if done.returncode != 0:
        raise ChromaSqlError(f"{operation} on {database}: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout)


class _Child:
    """The child that answers operations in turn (see the module's docstring)."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.temp = [os.environ.get(name) for name in _TEMP_VARIABLES]
        self.process = subprocess.Popen(  # our own fixed program, no shell
            [sys.executable, *_ISOLATED, "-c", _CHILD, "--serve", str(_IDLE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            # a Ctrl-C in the terminal is for this process; the child ends with it
            start_new_session=True,
        )
        self.stdin: IO[str] = self.process.stdin  # type: ignore[assignment]
        self.stdout: IO[str] = self.process.stdout  # type: ignore[assignment]

    def usable(self) -> bool:
        return (
            self.owner == os.getpid()
            and self.process.poll() is None
            and self.temp == [os.environ.get(name) for name in _TEMP_VARIABLES]
        )

    def close(self) -> None:
        """Close its end (the child exits on reading that) and reap it."""
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - it exits on end of input
            self.process.kill()
            self.process.wait()
        self.stdout.close()


_lock = threading.Lock()
_child: _Child | None = None


def _ask(request: list[Any], timeout: float) -> tuple[bool, Any]:
    """``(True, result)`` from the answering child, started if need be; ``(False, None)``
    when it cannot be asked (then a child of the operation's own runs it: the operations
    may run again, as they only make what is missing or read). The caller holds
    ``_lock``."""
    global _child
    if sys.platform == "win32":  # select() takes sockets only there
        return False, None
    if _child is not None and not _child.usable():
        if _child.owner == os.getpid():
            _child.close()
        _child = None
    child = _child
    try:
        if child is None:
            child = _child = _Child()
        child.stdin.write(json.dumps(request) + "\n")
        child.stdin.flush()
        ready = select.select([child.stdout], [], [], timeout)[0]
        line = child.stdout.readline() if ready else None
    except (OSError, ValueError):  # it exited (idle, killed) before reading the request
        line = ""
    if line is None:  # no answer in time: a hung statement ends with its child
        assert child is not None
        child.process.kill()
        child.close()
        _child = None
        operation, database, _ = request
        raise ChromaSqlError(f"{operation} on {database}: no answer within {timeout} s")
    if not line:
        if child is not None:
            child.close()
        _child = None
        return False, None
    reply = json.loads(line)
    if "error" in reply:
        operation, database, _ = request
        raise ChromaSqlError(f"{operation} on {database}: {reply['error'].strip()}")
    return True, reply["ok"]


def _close() -> None:
    """At exit: let this process's answering child go."""
    global _child
    if _child is not None and _child.owner == os.getpid():
        _child.close()
    _child = None


def _forget_after_fork() -> None:
    """In a forked child: the parent's answering child is not this process's to use (its
    pipes stay open here, never written to: it exits when idle)."""
    global _lock, _orphan, _child
    _lock = threading.Lock()
    _orphan, _child = _child, None


_orphan: _Child | None = None  # kept referenced: a running Popen warns when collected
atexit.register(_close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
