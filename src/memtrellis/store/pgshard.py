"""One entity's shard in PostgreSQL: its snapshot, its log rows and its advisory writer lock.

Positions in the log are record numbers: the first record of a generation is at 1 and
``append`` returns the number of the last record written. An append computes its numbers
from the last committed one inside its ``INSERT``, so two appends that race collide on the
primary key and the loser retries: numbers are dense and committed in order, and a reader
that has seen record ``n`` has seen every record before it.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from memtrellis.errors import StoreCorruptError, StoreLockedError
from memtrellis.store._pgkeys import Connection, entity_lock_key
from memtrellis.store.graph import MemoryGraph
from memtrellis.store.storage import LogRead


class PostgresBackend(Protocol):
    """What a shard storage uses of `memtrellis.store.postgres.PostgresBackend`."""

    label: str
    max_size: int
    pool: ConnectionPool[Connection]


__all__ = ["PostgresShardStorage"]

#: Tries of an append whose record numbers another writer took first.
_APPEND_TRIES = 20

_STAMP = """
SELECT s.generation, s.xmin::text, l.pos, l.xmin::text
FROM (SELECT %(e)s::text AS entity_id) AS q
LEFT JOIN memtrellis_shards AS s ON s.entity_id = q.entity_id
LEFT JOIN LATERAL (
    SELECT pos, xmin FROM memtrellis_log
    WHERE entity_id = q.entity_id AND generation = coalesce(s.generation, 0)
    ORDER BY pos DESC LIMIT 1
) AS l ON true
"""

# The record numbers follow the last committed one; the settings CTE turns synchronous
# commit off for this statement's transaction only (``durable=False``).
_APPEND = """
WITH settings AS (SELECT set_config('synchronous_commit', %(sync)s, true) AS value),
last AS (
    SELECT coalesce(max(pos), 0) AS pos FROM memtrellis_log
    WHERE entity_id = %(e)s AND generation = %(g)s
)
INSERT INTO memtrellis_log (entity_id, generation, pos, record)
SELECT %(e)s, %(g)s, last.pos + r.n, r.record
FROM settings, last, unnest(%(records)s::text[]) WITH ORDINALITY AS r(record, n)
RETURNING pos
"""

_LAST_POS = """
SELECT coalesce(max(pos), 0) FROM memtrellis_log WHERE entity_id = %s AND generation = %s
"""


class PostgresShardStorage:
    """`ShardStorage` in the tables of a `memtrellis.store.postgres.PostgresBackend`.

    The writer lock is a session advisory lock on `entity_lock_key`, held on a pooled
    connection of its own; while the current thread holds it, the storage's queries run
    on that connection. It is re-entrant within one storage object and serialises the
    threads that share the object.

    Examples:
        >>> from memtrellis.store._pgscratch import scratch_database
        >>> from memtrellis.store.postgres import PostgresBackend
        >>> backend = PostgresBackend(scratch_database())
        >>> storage = backend.storage("ana")
        >>> before = storage.stamp()
        >>> with storage.lock(timeout=5):
        ...     storage.append(0, [{"op": "ok", "rid": "x"}], durable=True)
        1
        >>> storage.stamp() != before, storage.read_log(0, 0).records
        (True, [{'op': 'ok', 'rid': 'x'}])
        >>> backend.close()
    """

    def __init__(self, backend: PostgresBackend, entity_id: str) -> None:
        self.backend = backend
        self.entity_id = entity_id
        self._key = entity_lock_key(entity_id)
        self._mu = threading.RLock()
        self._depth = 0
        self._held: Connection | None = None
        self._owner: int | None = None

    @property
    def label(self) -> str:
        """The database (no password) and the entity."""
        return f"{self.backend.label} entity {self.entity_id!r}"

    # -- connections and the lock ---------------------------------------------------------
    @contextmanager
    def _conn(self) -> Iterator[Connection]:
        if self._held is not None and self._owner == threading.get_ident():
            yield self._held
            return
        with self.backend.pool.connection() as conn:
            yield conn

    def _locked_out(self, timeout: float, why: str = "") -> StoreLockedError:
        return StoreLockedError(
            f"another writer held the lock on {self.label} for longer than {timeout} s{why}"
        )

    @contextmanager
    def lock(self, timeout: float) -> Iterator[None]:
        """Hold the entity's advisory lock (one holder across processes and machines).

        The server releases it when the holder's connection ends, so a writer that dies
        never leaves it held.

        Raises:
            StoreLockedError: Another writer held it for longer than ``timeout`` seconds.
        """
        deadline = time.monotonic() + max(timeout, 0.0)
        got = self._mu.acquire(timeout=timeout) if timeout > 0 else self._mu.acquire(False)
        if not got:
            raise self._locked_out(timeout)
        try:
            if self._depth == 0:
                self._held = self._acquire(timeout, deadline)
                self._owner = threading.get_ident()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release()
        finally:
            self._mu.release()

    def _acquire(self, timeout: float, deadline: float) -> Connection:
        pool = self.backend.pool
        try:
            conn = pool.getconn(timeout=max(deadline - time.monotonic(), 0.001))
        except PoolTimeout as exc:
            why = f" (no free connection: the pool holds at most {self.backend.max_size})"
            raise self._locked_out(timeout, why) from exc
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
            if not (row and row[0]):
                self._wait(conn, timeout, deadline)
        except StoreLockedError:
            pool.putconn(conn)  # not acquired, settings restored: the connection is clean
            raise
        except BaseException:
            conn.close()  # whatever it may hold ends with its session
            pool.putconn(conn)
            raise
        return conn

    def _wait(self, conn: Connection, timeout: float, deadline: float) -> None:
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        if remaining_ms < 1:
            raise self._locked_out(timeout)
        # lock_timeout bounds the wait of pg_advisory_lock like any other lock wait.
        conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{remaining_ms}ms",))
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", (self._key,))
        except pg_errors.LockNotAvailable as exc:
            raise self._locked_out(timeout) from exc
        finally:
            conn.execute("SELECT set_config('lock_timeout', '0', false)")

    def _release(self) -> None:
        conn, self._held, self._owner = self._held, None, None
        if conn is None:  # pragma: no cover - only after a failed acquire
            return
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except psycopg.Error:
            # The session is gone (and its lock with it) or unusable: never pool it again.
            conn.close()
        finally:
            self.backend.pool.putconn(conn)

    # -- reads ----------------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether the shard has a current generation or any log record."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM memtrellis_shards WHERE entity_id = %(e)s) "
                "OR EXISTS (SELECT 1 FROM memtrellis_log WHERE entity_id = %(e)s)",
                {"e": self.entity_id},
            ).fetchone()
        return bool(row and row[0])

    def generation(self) -> int:
        """The current generation (0 before the first snapshot)."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT generation FROM memtrellis_shards WHERE entity_id = %s",
                (self.entity_id,),
            ).fetchone()
        return int(row[0]) if row else 0

    def stamp(self) -> Hashable:
        """One indexed query: the generation and the last record of its log.

        With each its row version (``xmin``), so that a shard forgotten and written again
        up to the same position does not look unchanged.
        """
        with self._conn() as conn:
            row = conn.execute(_STAMP, {"e": self.entity_id}).fetchone()
        return tuple(row) if row else None

    def _corrupt(self, problem: str) -> StoreCorruptError:
        return StoreCorruptError(
            f"{self.label}: {problem}. Nothing was changed.", path=self.label, command=None
        )

    def load(self) -> tuple[MemoryGraph, int]:
        """The current snapshot and its generation (an empty graph at 0)."""
        with self._conn() as conn:
            row = conn.execute(
                "SELECT s.generation, n.graph FROM memtrellis_shards AS s "
                "LEFT JOIN memtrellis_snapshots AS n USING (entity_id, generation) "
                "WHERE s.entity_id = %s",
                (self.entity_id,),
            ).fetchone()
        if row is None:
            return MemoryGraph(), 0
        expected, raw = int(row[0]), row[1]
        if raw is None:
            if expected == 0:
                return MemoryGraph(), 0
            raise self._corrupt(f"the snapshot of generation {expected} is missing")
        try:
            graph, generation = MemoryGraph.from_json(bytes(raw))
        except (ValueError, KeyError, TypeError) as exc:
            problem = f"{exc.__class__.__name__}: {str(exc)[:200]}"
            raise self._corrupt(
                f"the snapshot of generation {expected} cannot be read ({problem})"
            ) from exc
        if generation != expected:
            raise self._corrupt(
                f"the snapshot stored as generation {expected} says generation {generation}"
            )
        return graph, generation

    def read_log(self, generation: int, position: int) -> LogRead:
        """The records of ``generation``'s log numbered after ``position``, in order."""
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT pos, record FROM memtrellis_log "
                "WHERE entity_id = %s AND generation = %s AND pos > %s ORDER BY pos",
                (self.entity_id, generation, position),
            ).fetchall()
        records: list[dict[str, Any]] = []
        for pos, text in rows:
            try:
                record = json.loads(text)
                if not isinstance(record, dict) or "op" not in record:
                    raise ValueError("not a log record")
            except ValueError as exc:
                raise self._corrupt(
                    f"log record {pos} of generation {generation} cannot be read"
                ) from exc
            records.append(record)
            position = int(pos)
        return LogRead(records, position, False)

    # -- writes ---------------------------------------------------------------------------
    def append(self, generation: int, records: list[dict[str, Any]], *, durable: bool) -> int:
        """Insert the records in one transaction; returns the number of the last one.

        ``durable=False`` commits without waiting for the server's WAL flush
        (``synchronous_commit = off``): a server crash may lose the records, never tear them.
        """
        if not records:
            with self._conn() as conn:
                row = conn.execute(_LAST_POS, (self.entity_id, generation)).fetchone()
            return int(row[0]) if row else 0
        params = {
            "e": self.entity_id,
            "g": generation,
            "sync": "on" if durable else "off",
            "records": [json.dumps(r, separators=(",", ":")) for r in records],
        }
        for attempt in range(_APPEND_TRIES):
            try:
                with self._conn() as conn:
                    rows = conn.execute(_APPEND, params).fetchall()
                return max(int(row[0]) for row in rows)
            except pg_errors.UniqueViolation:
                # Another append took these positions first (only appends made without the
                # lock race): wait a random moment, growing, so two racers fall out of step.
                if attempt == _APPEND_TRIES - 1:
                    raise
                time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise AssertionError("unreachable")  # pragma: no cover

    def cut_torn(self, generation: int, position: int) -> bool:
        """Always ``False``: an append is one transaction, which commits whole or not at all."""
        return False

    def save(self, graph: MemoryGraph, generation: int) -> None:
        """Write snapshot ``generation``, make it current and drop older ones, in one commit."""
        document = graph.to_json(generation)
        e = self.entity_id
        with self._conn() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO memtrellis_snapshots (entity_id, generation, graph) "
                "VALUES (%s, %s, %s) ON CONFLICT (entity_id, generation) "
                "DO UPDATE SET graph = excluded.graph",
                (e, generation, document),
            )
            conn.execute(
                "INSERT INTO memtrellis_shards (entity_id, generation) VALUES (%s, %s) "
                "ON CONFLICT (entity_id) DO UPDATE SET generation = excluded.generation",
                (e, generation),
            )
            self._drop_old(conn, generation)

    def _drop_old(self, conn: Connection, generation: int) -> None:
        conn.execute(
            "DELETE FROM memtrellis_snapshots WHERE entity_id = %s AND generation <> %s",
            (self.entity_id, generation),
        )
        conn.execute(
            "DELETE FROM memtrellis_log WHERE entity_id = %s AND generation < %s",
            (self.entity_id, generation),
        )

    def cleanup(self) -> None:
        """Drop snapshots and logs of generations before the current one."""
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                "SELECT generation FROM memtrellis_shards WHERE entity_id = %s FOR UPDATE",
                (self.entity_id,),
            ).fetchone()
            if row is not None:
                self._drop_old(conn, int(row[0]))

    def destroy(self) -> None:
        """Delete every row of the shard (the catalog row is the catalog's to remove)."""
        with self._conn() as conn, conn.transaction():
            for table in ("memtrellis_log", "memtrellis_snapshots", "memtrellis_shards"):
                conn.execute(f"DELETE FROM {table} WHERE entity_id = %s", (self.entity_id,))
