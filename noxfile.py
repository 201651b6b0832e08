"""Every set-up and check of the project, each in its own fresh virtual environment.

python3 -m pip install nox && python3 -m nox -s demo                    # the main job
python3 -m pip install nox && python3 -m nox -s lint typecheck tests    # all checks
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

DEV = ".[dev]"
# The LangChain integration: its own distribution, installed and checked with the core.
LANGCHAIN = "integrations/langchain"
LANGCHAIN_DEV = f"{LANGCHAIN}[dev]"
# The LlamaIndex integration, likewise.
LLAMA_INDEX = "integrations/llama-index"
LLAMA_INDEX_DEV = f"{LLAMA_INDEX}[dev]"
LINTED = ["src", "tests", "benchmarks", "integrations", "tools", "noxfile.py"]


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite, including a real `chroma run` server on loopback, then the
    LangChain and LlamaIndex integrations' suites (each with its own pytest configuration)."""
    session.install("-e", DEV, "-e", LANGCHAIN_DEV, "-e", LLAMA_INDEX_DEV)
    env = {"ANONYMIZED_TELEMETRY": "False"}
    session.run("pytest", "-q", "-ra", *session.posargs, env=env)
    session.run("pytest", "-q", "-ra", LANGCHAIN, *session.posargs, env=env)
    session.run("pytest", "-q", "-ra", LLAMA_INDEX, *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint (with the core's banned framework imports) and format check."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over src/ and the LangChain and LlamaIndex integrations' packages."""
    session.install("-e", DEV, "-e", LANGCHAIN_DEV, "-e", LLAMA_INDEX_DEV)
    session.run("mypy", "src")
    session.run("mypy", f"{LANGCHAIN}/src")
    with session.chdir(LLAMA_INDEX):  # its own settings: a namespace package
        session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmark; figures to benchmarks/results/ (LoCoMo needs ../shared/bench/)."""
    session.install(".[bench]", LANGCHAIN)
    session.run("python", "benchmarks/locomo.py", "--json", "benchmarks/results/locomo.json")
    session.run("python", "benchmarks/latency.py")
    session.run("python", "benchmarks/overhead.py")
    session.run("python", "benchmarks/ingest.py")
    session.run("python", "benchmarks/service.py")


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
