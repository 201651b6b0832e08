"""A throwaway PostgreSQL server for the doctests, the tests and the benchmarks.

The server comes from the ``pgserver`` wheel (the ``dev`` extra), which ships the server
binaries, so a fresh machine needs nothing but ``pip install``. It runs from a temporary
directory that is removed when the server stops; each caller gets a database of its own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import uuid
import warnings
from pathlib import Path
from typing import Any

__all__ = ["ScratchServer", "scratch_database"]


class ScratchServer:
    """A PostgreSQL server in a temporary directory, stopped and removed by `close`."""

    def __init__(self) -> None:
        # pgserver keeps a lock file in the user's runtime directory, which is /tmp/runtime-<uid>
        # where XDG_RUNTIME_DIR is not set: give it one inside our temporary directory (under
        # the test suites, the run's own), removed at exit, so nothing stays in /tmp.
        if "XDG_RUNTIME_DIR" not in os.environ:
            runtime = tempfile.mkdtemp(prefix="mt-pg-run-")
            os.environ["XDG_RUNTIME_DIR"] = runtime
            atexit.register(shutil.rmtree, runtime, ignore_errors=True)
        with warnings.catch_warnings():
            # platformdirs' notice that it picked /tmp/runtime-<uid> for pgserver's lock file
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            from pgserver.postgres_server import get_server

        # Short, so that the server's Unix socket path fits in its directory.
        self.directory = Path(tempfile.mkdtemp(prefix="mt-pg-"))
        try:
            self._server: Any = get_server(self.directory / "data", cleanup_mode="stop")
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self.url: str = self._server.get_uri()
        self._closed = False

    def database_url(self, name: str) -> str:
        """The connection URL of database ``name`` on this server."""
        return str(self._server.get_uri(database=name))

    def new_database(self) -> str:
        """Create an empty database; returns its URL."""
        import psycopg

        name = f"mt_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database `new_database` made, closing its remaining connections."""
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        name = conninfo_to_dict(url)["dbname"]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        """Stop the server and remove its directory."""
        if self._closed:
            return
        self._closed = True
        try:
            self._server.cleanup()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


_shared: ScratchServer | None = None
_mu = threading.Lock()


def shared_server() -> ScratchServer:
    """This process's scratch server, started on first use and removed at exit."""
    global _shared
    with _mu:
        if _shared is None or _shared._closed:
            _shared = ScratchServer()
            atexit.register(_shared.close)
        return _shared


def scratch_database() -> str:
    """The URL of a new empty database on this process's scratch server."""
    return shared_server().new_database()
