"""What the store asks of Chroma's SQLite file directly, done in a short-lived process.

Chroma's Rust core links a SQLite of its own. Two copies of SQLite in one process do not
share their bookkeeping of POSIX locks, which belong to the process: when Python's
``sqlite3`` closes its handle on ``chroma.sqlite3``, the kernel drops every lock this
process holds on that file, Chroma's included, and Chroma's next write can meet another
writer unlocked. A VACUUM run that way beside the capture worker's writes left
"database disk image is malformed" (``tests/test_tenant_isolation.py`` found it). So
every statement of ours on that file runs in a child ``python`` that has no Chroma: its
locks are its own, and SQLite's locking between processes does the rest.

The child runs only the standard library, isolated (``-I``: no environment variables,
user site or current directory on its path) and without ``site`` (``-S``: the .pth files
of the environment, the editable installs' among them, are not read): about 18 ms of CPU,
where a child that read them took 24; every store opened pays one. It prints one JSON
value.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["ChromaSqlError", "chroma_sql"]

log = logging.getLogger("memtrellis.store")

_CHILD = r"""
import json, sqlite3, sys
op, database, arg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
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
print(json.dumps(out))
"""


# The child's interpreter options: the standard library alone is what it needs.
_ISOLATED = ("-I", "-S")


class ChromaSqlError(Exception):
    """A statement on ``chroma.sqlite3`` failed in the child (its stderr in the message)."""


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
    try:
        done = subprocess.run(  # our own fixed program, no shell
            [sys.executable, *_ISOLATED, "-c", _CHILD, operation, str(database), json.dumps(arg)],
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
