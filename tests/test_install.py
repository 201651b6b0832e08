"""The README's install and set-up commands work as written, from the clone: the install
command puts the core and both integrations into a fresh venv of the user's own, where the
README's LangChain example runs; the set-up commands work on a Python whose pip refuses to
install outside a virtual environment (PEP 668, as on stock Debian 12 and Ubuntu 23.04+).

Both reach the package index (pip), so they take a minute or more: they run only with
MEMTRELLIS_INSTALL_TESTS=1, which the checks (`nox -s tests`) set for one run of this file
beside the suites.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("MEMTRELLIS_INSTALL_TESTS") != "1",
        reason="reaches the package index; `nox -s tests` runs it (MEMTRELLIS_INSTALL_TESTS=1)",
    ),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout"),
    pytest.mark.timeout(900),
]


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _bash_lines(section: str) -> list[str]:
    [block] = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    lines = (line.split("  #", 1)[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _build_leftovers(folder: Path) -> list[Path]:
    """What a build from the clone could leave in it (the suites run beside this test and
    write their own caches, so only a build's own traces are looked for)."""
    roots = [folder, *(folder / "integrations").iterdir()]
    return [
        found
        for root in roots
        for pattern in ("build", "dist", "*.egg-info", "src/*.egg-info")
        for found in root.glob(pattern)
    ]


def _run(args: list[str] | str, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PIP_NO_INPUT": "1"}
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "MEMTRELLIS_HOME", "PYTHONHOME"):
        env.pop(name, None)
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=840, **kwargs
    )  # type: ignore[call-overload, no-any-return]


def test_readme_install_command_puts_core_and_integrations_in_a_fresh_venv(
    tmp_path: Path,
) -> None:
    make_venv, upgrade, install = _bash_lines(_section("Install into your own environment"))
    assert make_venv == "python3 -m venv .venv && . .venv/bin/activate"
    assert upgrade == "python -m pip install --upgrade pip"
    assert install.startswith("pip install ")
    before = _build_leftovers(ROOT)

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], tmp_path).returncode == 0
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    upgraded = _run(pip + shlex.split(upgrade)[3:], tmp_path)
    assert upgraded.returncode == 0, upgraded.stdout[-3000:] + upgraded.stderr[-3000:]
    done = _run(pip + shlex.split(install)[1:], ROOT)  # from the clone, as the README says

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _build_leftovers(ROOT) == before  # the install built nothing into the clone
    imports = "import memtrellis, langchain_memtrellis, llama_index.memory.memtrellis; print('ok')"
    work = tmp_path / "work"
    work.mkdir()
    imported = _run([str(venv / "bin" / "python"), "-c", imports], work)
    assert imported.returncode == 0 and imported.stdout == "ok\n", imported.stderr[-3000:]
    # the installed code is the venv's own copy, not the clone's source
    located = "import memtrellis; print(memtrellis.__file__)"
    where = _run([str(venv / "bin" / "python"), "-c", located], work)
    assert where.stdout.startswith(str(venv)), where.stdout

    [example] = re.findall(r"```python\n(.*?)```", _section("LangChain"), re.DOTALL)[:1]
    ran = _run([str(venv / "bin" / "python"), "-c", example], work)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "peanuts" in ran.stdout
    assert list(work.iterdir()) == []  # the example cleans up after itself


def _externally_managed_python(home: Path) -> Path:
    """A copy of this machine's base Python that pip treats as a distribution's (PEP 668):
    the interpreter with its standard library linked in, an ``EXTERNALLY-MANAGED`` marker
    beside it, and pip importable, as on Debian with python3-pip installed."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(sys.base_prefix)
    stdlib = Path(sysconfig.get_path("stdlib"))
    assert stdlib.is_relative_to(base), stdlib
    fake_stdlib = home / "lib" / version
    (fake_stdlib / "site-packages").mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in {"site-packages", "EXTERNALLY-MANAGED"}:
            (fake_stdlib / entry.name).symlink_to(entry)
    (fake_stdlib / "EXTERNALLY-MANAGED").write_text(
        "[externally-managed]\nError=this Python is managed by the distribution (a test)\n"
    )
    pip = Path(sysconfig.get_path("purelib", vars={"base": sys.base_prefix})) / "pip"
    if not pip.is_dir():  # this base has no pip of its own: borrow the running venv's
        import pip as running_pip

        pip = Path(running_pip.__file__).parent
    (fake_stdlib / "site-packages" / "pip").symlink_to(pip)
    (home / "bin").mkdir()
    python = home / "bin" / "python3"
    shutil.copy2(base / "bin" / version, python)
    return python


def test_setup_commands_work_on_an_externally_managed_python(tmp_path: Path) -> None:
    commands = _bash_lines(_section("Set-up: two commands"))
    assert len(commands) == 2 and commands == [
        line for line in commands if line.startswith("python3 -m venv .venv && ")
    ]
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith(commands[1])  # CI runs it
    python = _externally_managed_python(tmp_path / "distro")
    where = _run([str(python), "-c", "import sys; print(sys.prefix)"], tmp_path)
    assert where.stdout.strip() == str(tmp_path / "distro")  # not a venv: PEP 668 applies
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy2(ROOT / "noxfile.py", clone / "noxfile.py")

    # the old set-up command stops there
    old = _run([str(python), "-m", "pip", "install", "nox"], clone)
    assert old.returncode != 0 and "externally-managed-environment" in old.stderr, old.stderr

    # the README's: every step but the session itself, which `nox -l` stands in for
    command = commands[0]
    assert command.endswith(" -s demo")
    listed = _run(
        command.replace("python3 ", f"{shlex.quote(str(python))} ", 1).removesuffix(" -s demo")
        + " -l",
        clone,
        shell=True,
    )
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    sessions = {line.split()[1] for line in listed.stdout.splitlines() if line[:2] in {"* ", "- "}}
    assert {"demo", "lint", "typecheck", "tests"} <= sessions, listed.stdout
    assert (clone / ".venv" / "bin" / "nox").is_file()
