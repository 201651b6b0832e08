"""Child Python processes for the tests, forked from a warm interpreter.

A test that starts ``python -c CODE`` or ``python script.py`` to get a second process on a
store (a racing writer, a process killed mid-write, a benchmark's measuring child) pays
~1.3 CPU-s of imports (memtrellis, Chroma, numpy) before its code runs: most of what
such tests cost. `Popen` and `run` here take the same arguments as `subprocess`'s, and
start such a command by asking a zygote (one per test process, started at first use,
with those modules imported and nothing opened, no thread running) to fork; the child
takes the caller's stdin, stdout and stderr (pipes included), working directory,
environment and argv, runs the code as ``__main__``, and exits as Python would (exit
handlers, exit code, a traceback on stderr). It is a real process with its own pid:
signals, ``kill`` and ``wait`` work as for any child.

File descriptors in ``pass_fds`` reach the child under the same numbers (so memtrellis's
own engine and vector processes, which take a socket's number in their argv, start here
too; see `forked_module`), and so does an environment that differs from this process's
only in a ``PYTHONPATH`` of folders already on ``sys.path`` (what those spawns add).
Anything else runs as a plain subprocess, unchanged: another program, ``-m``, a shell,
``preexec_fn``, a new session, another user, or an environment given for that child
alone. When this process's own environment has changed since the zygote
started (its modules read some variables as they were imported), a new zygote starts.
Children of one zygote share its string-hash seed (Python reseeds `random` in a forked
child); what must be a fresh interpreter (import-time checks, hash randomisation, "in a
fresh process" tests) keeps using `subprocess`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["Popen", "run"]

#: What the zygote imports before it forks anything.
PRELOAD = ("memtrellis", "memtrellis.testing", "chromadb")

#: Variables that may differ between the zygote's environment and a child's: nothing
#: reads them at import.
_FREE = frozenset({"PYTEST_CURRENT_TEST"})

#: Where a child's received descriptors are moved before they take their numbers.
_HIGH = 4096

_SERVE = """
import sys
sys.path[0:0] = [sys.argv[2]]
import zygote
zygote._serve(int(sys.argv[1]))
"""


# -- the zygote ---------------------------------------------------------------------------


def _serve(fd: int) -> None:  # pragma: no cover - runs in the zygote
    """Import PRELOAD, then fork one child per request until the socket closes; report each
    child's pid when forked and its wait status when it ends."""
    import importlib
    import selectors

    for name in PRELOAD:
        importlib.import_module(name)
    del sys.path[0]  # the tests folder, put there to import this module
    conn = socket.socket(fileno=fd)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is conn:
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 64)
                if not message:  # the tests' process is done: reap what ended, then exit
                    _reap(None)
                    return
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    _child(json.loads(message), fds)
                for received in fds:
                    os.close(received)
                conn.send(json.dumps({"pid": pid}).encode())
            else:
                os.read(wake_read, 4096)
                _reap(conn)


def _reap(conn: socket.socket | None) -> None:  # pragma: no cover - runs in the zygote
    """Wait for the children that ended (so that their CPU time counts as this process's
    children's, and so its parent's) and report each one's status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if conn is not None:
            conn.send(json.dumps({"exit": pid, "status": status}).encode())


def _child(request: dict[str, Any], fds: list[int]) -> None:  # pragma: no cover
    """Become the requested process: its stdio and passed descriptors, folder,
    environment and argv; run it; exit."""
    import fcntl
    import runpy
    import tempfile
    import types

    status = 1
    try:
        targets = [0, 1, 2, *request["pass"]]
        # out of every target's way first: a received descriptor may hold a target's number
        high = [fcntl.fcntl(received, fcntl.F_DUPFD, _HIGH) for received in fds]
        for target, received in zip(targets, high, strict=True):
            os.dup2(received, target)  # inheritable, as pass_fds leaves them
        start = 3  # then close the rest, as close_fds does before an exec
        for kept in sorted(set(targets) - {0, 1, 2}):
            os.closerange(start, kept)
            start = kept + 1
        os.closerange(start, 1 << 16)
        if request["cwd"] is not None:
            os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # PYTHONPATH's folders follow the script's folder, as in a fresh interpreter
        added = [f for f in os.environ.get("PYTHONPATH", "").split(os.pathsep) if f]
        sys.path[1:1] = [folder for folder in added if folder not in sys.path]
        tempfile.tempdir = None
        argv: list[str] = request["argv"]
        sys.argv = list(argv)
        if argv[0] == "-c":
            sys.path[0] = ""
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(request["code"], "<string>", "exec"), main.__dict__)
        else:
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
        status = 0
    except SystemExit as stop:
        if stop.code is None:
            status = 0
        elif isinstance(stop.code, int):
            status = stop.code
        else:
            print(stop.code, file=sys.stderr)
            status = 1
    except BaseException:  # reported as the interpreter would, without this module's frame
        kind, error, trace = sys.exc_info()
        assert kind is not None and error is not None and trace is not None
        sys.excepthook(kind, error, error.with_traceback(trace.tb_next).__traceback__)
    try:  # what an interpreter does on its way out
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        os._exit(status & 0xFF)


# -- the tests' side ----------------------------------------------------------------------


class _Zygote:
    """This process's zygote: requests go out one at a time; exits come in any time."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        here = str(Path(__file__).resolve().parent)
        self.env = dict(os.environ)
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(theirs.fileno()), here],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.sock = ours
        self.owner = os.getpid()
        self.spawning = threading.Lock()
        self.changed = threading.Condition()
        self.pids: list[int] = []
        self.statuses: dict[int, int] = {}
        self.gone = False
        threading.Thread(target=self._listen, name="zygote", daemon=True).start()
        atexit.register(self._close)

    def _close(self) -> None:
        """End the zygote and wait for it, so that no process is left behind and the CPU
        time of its children counts in this process's (as `time` and nox report it)."""
        if self.owner != os.getpid():
            return
        # close() alone leaves the socket open while the listening thread is blocked in
        # recv() on it, so the zygote would never see the end (and be killed after 30 s)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _listen(self) -> None:
        while True:
            try:
                message = self.sock.recv(1 << 16)
            except OSError:
                message = b""
            with self.changed:
                if not message:
                    self.gone = True
                    self.changed.notify_all()
                    return
                event = json.loads(message)
                if "pid" in event:
                    self.pids.append(event["pid"])
                else:
                    self.statuses[event["exit"]] = event["status"]
                self.changed.notify_all()

    def spawn(self, request: dict[str, Any], fds: list[int]) -> int:
        with self.spawning:
            socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
            with self.changed:
                if not self.changed.wait_for(lambda: self.pids or self.gone, timeout=60):
                    raise RuntimeError("the zygote did not answer in 60 s")
                if not self.pids:
                    raise RuntimeError("the zygote is gone")
                return self.pids.pop()

    def status(self, pid: int, timeout: float | None) -> int | None:
        """The wait status of ``pid`` once it ended (None if it runs past ``timeout``)."""
        with self.changed:
            self.changed.wait_for(lambda: pid in self.statuses or self.gone, timeout=timeout)
            if pid not in self.statuses and self.gone:
                raise RuntimeError(f"the zygote died before child {pid} ended")
            return self.statuses.pop(pid, None)


_zygote: _Zygote | None = None
_lock = threading.Lock()


def _differ(one: Any, other: Any) -> set[str]:
    """The variables whose values differ between two environments (but `_FREE`)."""
    return {k for k in one.keys() | other.keys() if one.get(k) != other.get(k)} - _FREE


def _the_zygote() -> _Zygote:
    """The zygote of this process, started anew when this process's environment changed
    since it started (its modules read some variables when they were imported)."""
    global _zygote
    with _lock:
        old = _zygote
        if old is None or old.owner != os.getpid() or old.gone or _differ(old.env, os.environ):
            # an old one lives on while a child of its is waited for (it ends with its socket)
            _zygote = _Zygote()
        return _zygote


def _request(args: Any, env: Any, cwd: Any, simple: bool) -> dict[str, Any] | None:
    """What the zygote is asked to run, or None when only a real subprocess will do."""
    if not simple or isinstance(args, (str, bytes, os.PathLike)):
        return None
    argv = [os.fspath(a) if isinstance(a, os.PathLike) else a for a in args]
    if len(argv) < 2 or not all(isinstance(a, str) for a in argv) or argv[0] != sys.executable:
        return None
    if argv[1] == "-c" and len(argv) >= 3:
        code, child_argv = argv[2], ["-c", *argv[3:]]
    elif argv[1].endswith(".py") and not argv[1].startswith("-") and Path(argv[1]).is_file():
        code, child_argv = None, argv[1:]
    else:
        return None
    if env is not None and not _only_known_folders_added(env):
        return None  # an environment for this child alone
    wanted = dict(os.environ if env is None else env)
    cwd = None if cwd is None else os.fspath(cwd)
    return {"argv": child_argv, "code": code, "env": wanted, "cwd": cwd, "pass": []}


def _only_known_folders_added(env: Any) -> bool:
    """Whether `env` is this process's environment but for a ``PYTHONPATH`` of folders
    already on ``sys.path`` (the zygote imported from them, so a child sees the same)."""
    differ = _differ(env, os.environ)
    if not differ <= {"PYTHONPATH"}:
        return False
    folders = env.get("PYTHONPATH", "").split(os.pathsep) if differ else []
    return all(folder in sys.path for folder in folders if folder)


class Popen(subprocess.Popen):  # type: ignore[type-arg]
    """`subprocess.Popen`, started from the zygote when the command allows (see above)."""

    _from_zygote: _Zygote | None = None

    def _execute_child(  # type: ignore[override]
        self,
        args: Any,
        executable: Any,
        preexec_fn: Any,
        close_fds: bool,
        pass_fds: Any,
        cwd: Any,
        env: Any,
        startupinfo: Any,
        creationflags: int,
        shell: bool,
        p2cread: int,
        p2cwrite: int,
        c2pread: int,
        c2pwrite: int,
        errread: int,
        errwrite: int,
        *rest: Any,
    ) -> None:
        # rest: restore_signals, gid, gids, uid, umask, start_new_session (, process_group)
        _, gid, gids, uid, umask, new_session, *group = rest
        simple = (
            executable is None
            and preexec_fn is None
            and close_fds
            and not shell
            and (gid, gids, uid, umask, new_session) == (None, None, None, -1, False)
            and group in ([], [-1], [None])
        )
        request = _request(args, env, cwd, simple)
        if request is None:
            super()._execute_child(  # type: ignore[misc]
                args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
                creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite,
                *rest,
            )  # fmt: skip
            return
        zygote = _the_zygote()
        stdio = [p2cread if p2cread != -1 else 0]
        stdio.append(c2pwrite if c2pwrite != -1 else 1)
        stdio.append(errwrite if errwrite != -1 else 2)
        request["pass"] = list(pass_fds)
        try:
            self.pid = zygote.spawn(request, [*stdio, *pass_fds])
        finally:
            self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)  # type: ignore[attr-defined]
        self._from_zygote = zygote
        self._child_created = True

    def _internal_poll(self, _deadstate: Any = None, **kwargs: Any) -> int | None:
        zygote = self._from_zygote
        if zygote is None:
            return super()._internal_poll(_deadstate, **kwargs)  # type: ignore[misc, no-any-return]
        if self.returncode is None:
            status = zygote.status(self.pid, timeout=0)
            if status is not None:
                self._handle_exitstatus(status)  # type: ignore[attr-defined]
        return self.returncode

    def _wait(self, timeout: float | None) -> int:
        zygote = self._from_zygote
        if zygote is None:
            return super()._wait(timeout)  # type: ignore[misc, no-any-return]
        if self.returncode is None:
            status = zygote.status(self.pid, timeout)
            if status is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._handle_exitstatus(status)  # type: ignore[attr-defined]
        assert self.returncode is not None
        return self.returncode


def run(
    args: Any,
    *,
    input: Any = None,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run`, with `Popen` from here."""
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with Popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        except BaseException:
            process.kill()
            raise
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def forked_module() -> Any:
    """The `subprocess` module with `Popen` and `run` from here: to put in place of a
    module's ``subprocess`` (``monkeypatch.setattr(module, "subprocess", ...)``) so that
    the Python processes that module starts fork from the zygote."""
    from types import SimpleNamespace

    return SimpleNamespace(**{**vars(subprocess), "run": run, "Popen": Popen})
