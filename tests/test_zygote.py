"""tests/zygote.py: child processes forked from a warm interpreter behave as fresh ones do
where the tests look (argv, stdio, exit codes, signals, exit handlers), and anything the
zygote cannot stand in for runs as a plain subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import zygote

PY = sys.executable

REPORT = """
import os, sys
print(os.getppid(), 'chromadb' in sys.modules, __name__, sys.argv)
"""


def test_a_child_runs_its_code_as_main_with_its_argv_from_the_zygote() -> None:
    done = zygote.run([PY, "-c", REPORT, "a", "b"], capture_output=True, text=True, timeout=60)
    parent, preloaded, name, argv = done.stdout.split(" ", 3)
    assert done.returncode == 0, done.stderr
    assert (preloaded, name, argv.strip()) == ("True", "__main__", "['-c', 'a', 'b']")
    assert int(parent) not in {os.getpid(), 1}  # the zygote's child, not ours
    again = zygote.run([PY, "-c", REPORT], capture_output=True, text=True, timeout=60)
    assert again.stdout.split(" ")[0] == parent  # one zygote serves them all


def test_exit_codes_stdio_and_exit_handlers_are_a_fresh_interpreter_s() -> None:
    code = """
import atexit, sys
atexit.register(lambda: print('exit handler ran'))
print(sys.stdin.read().upper())
sys.stderr.write('to stderr\\n')
sys.exit(7)
"""
    done = zygote.run([PY, "-c", code], input="abc", capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (
        7,
        "ABC\nexit handler ran\n",
        "to stderr\n",
    )
    failed = zygote.run([PY, "-c", "raise ValueError('boom')"], capture_output=True, text=True)
    assert failed.returncode == 1
    assert failed.stderr.startswith("Traceback") and "ValueError: boom" in failed.stderr
    assert "zygote.py" not in failed.stderr
    message = zygote.run([PY, "-c", "import sys; sys.exit('bad')"], capture_output=True, text=True)
    assert (message.returncode, message.stderr) == (1, "bad\n")


def test_a_script_runs_with_its_folder_on_the_path_and_in_the_given_folder(tmp_path: Path) -> None:
    (tmp_path / "helper_mod.py").write_text("VALUE = 42\n")
    script = tmp_path / "script.py"
    script.write_text(
        "import os, sys, helper_mod\nprint(helper_mod.VALUE, sys.argv, os.getcwd())\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = zygote.run([PY, str(script), "x"], cwd=elsewhere, capture_output=True, text=True)
    assert done.stdout == f"42 {[str(script), 'x']} {elsewhere}\n", done.stderr


def test_a_child_is_a_process_of_its_own_that_signals_reach() -> None:
    child = zygote.Popen(
        [PY, "-c", "import time; print('ready', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    assert child.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.2)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=60) == -signal.SIGKILL
    child.stdout.close()
    with pytest.raises(subprocess.TimeoutExpired):
        zygote.run([PY, "-c", "import time; time.sleep(120)"], timeout=0.5)


def test_what_the_zygote_cannot_stand_in_for_runs_as_a_plain_subprocess(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ours = os.getpid()
    module = zygote.run([PY, "-m", "json.tool", "--help"], capture_output=True, text=True)
    assert module.returncode == 0 and "usage" in module.stdout
    for extra in ({"env": dict(os.environ, ZYGOTE_TEST="1")}, {"start_new_session": True}):
        done = zygote.run([PY, "-c", REPORT], capture_output=True, text=True, **extra)
        assert done.stdout.split(" ")[:2] == [str(ours), "False"], extra  # started fresh
    # a change to this process's environment starts a new zygote that children then see
    monkeypatch.setenv("ZYGOTE_TEST", "2")
    code = "import os, sys; print('chromadb' in sys.modules, os.environ['ZYGOTE_TEST'])"
    done = zygote.run([PY, "-c", code], capture_output=True, text=True)
    assert done.stdout == "True 2\n", done.stderr


def test_passed_descriptors_keep_their_numbers_and_only_they_stay_open(tmp_path: Path) -> None:
    # memtrellis's engine and vector processes take a socket's number in their argv, with
    # PYTHONPATH set to this process's sys.path: both are what the zygote stands in for
    import socket

    ours, theirs = socket.socketpair()
    extra_read, extra_write = os.pipe()  # open here, not passed: closed in the child
    code = (
        "import os, socket, sys\n"
        "s = socket.socket(fileno=int(sys.argv[1]))\n"
        "s.sendall(repr((os.getppid(), 'chromadb' in sys.modules,"
        " sorted(int(f) for f in os.listdir('/proc/self/fd')))).encode())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    number = theirs.fileno()
    try:
        child = zygote.Popen(
            [PY, "-c", code, str(number)],
            pass_fds=[number],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        theirs.close()
        assert child.wait(timeout=60) == 0
        ppid, warm, fds = eval(ours.recv(4096).decode())
    finally:
        ours.close()
        os.close(extra_read)
        os.close(extra_write)
    assert (ppid != os.getpid(), warm) == (True, True)  # forked from the zygote
    # stdio, the passed socket under its own number, and listdir's own descriptor
    assert [0, 1, 2, number] == [f for f in fds if f in (0, 1, 2, number)] and len(fds) == 5
    # a PYTHONPATH naming a folder this process does not import from: a fresh interpreter
    env["PYTHONPATH"] = str(tmp_path)
    done = zygote.run([PY, "-c", REPORT], env=env, capture_output=True, text=True)
    assert done.stdout.split(" ")[:2] == [str(os.getpid()), "False"], done.stderr


def test_the_zygote_ends_of_itself_when_its_process_does() -> None:
    # the zygote ends when the socket to it closes; a thread blocked reading that socket
    # kept it open, so every process that had used a zygote waited 30 s at exit for it
    # and then killed it (xdist workers, too)
    code = f"""
import atexit, sys
sys.path.insert(0, {str(Path(zygote.__file__).parent)!r})
import zygote
seen = []
atexit.register(lambda: print("zygote's exit status", seen[0].process.returncode))
zygote.run([sys.executable, "-c", "pass"], check=True)
seen.append(zygote._zygote)
"""
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout == "zygote's exit status 0\n", done.stderr  # not -9: killed
