"""Shards, logs, catalog and writer locks in PostgreSQL, for several machines on one memory.

`PostgresBackend` owns a connection pool and the schema; it hands out a
`memtrellis.store.pgshard.PostgresShardStorage` per entity and one `PostgresCatalog`.
The tables (schema version 1)::

    memtrellis_schema     one row: the schema version this database holds
    memtrellis_entities   the catalog: entity_id, seq (first-write order), state, stats
    memtrellis_shards     entity_id -> its current generation
    memtrellis_snapshots  (entity_id, generation) -> the node-link JSON `MemoryGraph` writes
    memtrellis_log        (entity_id, generation, pos) -> one log record as JSON text

Log records are kept as JSON text rather than ``jsonb``: ``jsonb`` rejects ``\\u0000``
and lone surrogate escapes that a JSON log may legitimately hold, and text comes back
byte for byte. Writer locks are session advisory locks (`entity_lock_key`), so the
server releases them when a writer's connection ends, a killed process included.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memtrellis.errors import MissingDependencyError, StoreCorruptError
from memtrellis.store._pgkeys import Connection, advisory_key, entity_lock_key
from memtrellis.store.storage import EntityStats

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as exc:  # pragma: no cover - the dev extra installs them
    raise MissingDependencyError("psycopg", extra="postgres") from exc

if TYPE_CHECKING:
    from memtrellis.store.pgshard import PostgresShardStorage

__all__ = [
    "SCHEMA_VERSION",
    "PostgresBackend",
    "PostgresCatalog",
    "entity_lock_key",
    "safe_label",
]

#: The schema version this code writes; a database at a higher version is refused.
SCHEMA_VERSION = 1

_SCHEMA_TABLE = """
CREATE TABLE IF NOT EXISTS memtrellis_schema (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version integer NOT NULL
)
"""

_SCHEMA_V1 = (
    """
    CREATE TABLE memtrellis_entities (
        seq bigserial NOT NULL UNIQUE,
        entity_id text PRIMARY KEY,
        state text NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'dropping')),
        stats jsonb NOT NULL DEFAULT '{}'::jsonb
    )
    """,
    """
    CREATE TABLE memtrellis_shards (
        entity_id text PRIMARY KEY,
        generation bigint NOT NULL
    )
    """,
    """
    CREATE TABLE memtrellis_snapshots (
        entity_id text NOT NULL,
        generation bigint NOT NULL,
        graph bytea NOT NULL,
        PRIMARY KEY (entity_id, generation)
    )
    """,
    """
    CREATE TABLE memtrellis_meta (
        key text PRIMARY KEY,
        value text NOT NULL
    )
    """,
    """
    CREATE TABLE memtrellis_log (
        entity_id text NOT NULL,
        generation bigint NOT NULL,
        pos bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (entity_id, generation, pos)
    )
    """,
)


#: Held (per transaction) while the schema is created or migrated.
_SCHEMA_LOCK = advisory_key("memtrellis-schema", "")


def safe_label(url: str) -> str:
    """The connection string for messages: user, host, port and database, no password.

    Examples:
        >>> safe_label("postgresql://ana:secret@db.example:5433/memories")
        'postgresql://ana@db.example:5433/memories'
        >>> safe_label("postgresql://postgres:@/postgres?host=/tmp/pg")
        'postgresql://postgres@/tmp/pg/postgres'
    """
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparsable connection string)"
    user = f"{params['user']}@" if params.get("user") else ""
    host = str(params.get("host") or "")
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname') or ''}"


class PostgresBackend:
    """A PostgreSQL database holding a memory's shards, logs, catalog and writer locks.

    Opening creates the schema when the database has none (under an advisory lock, so
    processes starting together do not race) and refuses a schema written by a newer
    memtrellis. Every connection is taken from one `psycopg_pool.ConnectionPool` in
    autocommit mode; a writer lock holds one connection for as long as it is held.

    Args:
        url: A libpq connection string or URL (``postgresql://user@host/db``).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most (each held writer lock uses one).
        connect_timeout: Seconds to wait for the first connection.

    Raises:
        StoreCorruptError: The database holds a newer schema version.
        psycopg_pool.PoolTimeout: The server could not be reached in time.

    Examples:
        >>> from memtrellis.store._pgscratch import scratch_database
        >>> backend = PostgresBackend(scratch_database())
        >>> backend.schema_version()
        1
        >>> storage = backend.storage("ana")
        >>> with storage.lock(timeout=5):
        ...     storage.append(0, [{"op": "ok", "rid": "r1"}], durable=True)
        1
        >>> backend.catalog().entities()
        []
        >>> backend.close()
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 16,
        connect_timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.label = safe_label(url)
        self.max_size = max_size
        self.pool: ConnectionPool[Connection] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True},
            open=False,
            name="memtrellis",
        )
        try:
            self.pool.open(wait=True, timeout=connect_timeout)
        except PoolTimeout as exc:
            self.pool.close()
            raise PoolTimeout(
                f"could not connect to {self.label} within {connect_timeout} s"
            ) from exc
        try:
            self._ensure_schema()
        except BaseException:
            self.pool.close()
            raise

    def _ensure_schema(self) -> None:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(_SCHEMA_TABLE)
            row = conn.execute("SELECT version FROM memtrellis_schema").fetchone()
            if row is None:
                for statement in _SCHEMA_V1:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO memtrellis_schema (version) VALUES (%s)", (SCHEMA_VERSION,)
                )
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreCorruptError(
                    f"{self.label} holds memtrellis schema version {row[0]}, written by a "
                    f"newer memtrellis; this one reads up to version {SCHEMA_VERSION}. "
                    "Nothing was changed: upgrade memtrellis on this machine.",
                    path=self.label,
                )

    def schema_version(self) -> int:
        """The schema version the database holds."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT version FROM memtrellis_schema").fetchone()
        return int(row[0]) if row else 0

    def manifest(self, proposed: str) -> str:
        """The store manifest (JSON) the database holds, storing ``proposed`` if it holds
        none: the first process of the first machine decides, every later one reads."""
        with self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO memtrellis_meta (key, value) VALUES ('manifest', %s) "
                "ON CONFLICT (key) DO NOTHING",
                (proposed,),
            )
            row = conn.execute(
                "SELECT value FROM memtrellis_meta WHERE key = 'manifest'"
            ).fetchone()
        return str(row[0]) if row else proposed

    def storage(self, entity_id: str) -> PostgresShardStorage:
        """The `ShardStorage` of ``entity_id``'s shard in this database."""
        from memtrellis.store.pgshard import PostgresShardStorage

        return PostgresShardStorage(self, entity_id)

    def catalog(self) -> PostgresCatalog:
        """The `Catalog` of this database (closing it closes the backend)."""
        return PostgresCatalog(self)

    def close(self) -> None:
        """Close every pooled connection (a writer lock still held is released with it)."""
        self.pool.close()

    @property
    def closed(self) -> bool:
        """Whether `close` was called."""
        return bool(self.pool.closed)


class PostgresCatalog:
    """The `Catalog` in ``memtrellis_entities``: one row per entity, shared by every machine.

    Closing the catalog closes its backend: the store's catalog is the last thing it closes.

    Examples:
        >>> from memtrellis.store._pgscratch import scratch_database
        >>> catalog = PostgresBackend(scratch_database()).catalog()
        >>> catalog.ensure("ana")
        >>> catalog.record("ana", EntityStats(memories=2))
        >>> catalog.entities(), catalog.get("ana").memories
        (['ana'], 2)
        >>> catalog.close()
    """

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend

    def _rows(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.backend.pool.connection() as conn:
            return conn.execute(query, params).fetchall()

    def _run(self, query: str, *params: Any) -> None:
        with self.backend.pool.connection() as conn:
            conn.execute(query, params)

    def entities(self) -> list[str]:
        """Every entity with a shard, in the order they were first written."""
        rows = self._rows(
            "SELECT entity_id FROM memtrellis_entities WHERE state = 'live' ORDER BY seq"
        )
        return [str(row[0]) for row in rows]

    def ensure(self, entity_id: str) -> None:
        """Record the entity (before its shard's first write); no-op when known."""
        self._run(
            "INSERT INTO memtrellis_entities (entity_id) VALUES (%s) "
            "ON CONFLICT (entity_id) DO UPDATE SET state = 'live' "
            "WHERE memtrellis_entities.state <> 'live'",
            entity_id,
        )

    def get(self, entity_id: str) -> EntityStats | None:
        """The entity's last recorded figures, or ``None`` when unknown."""
        rows = self._rows(
            "SELECT stats FROM memtrellis_entities WHERE entity_id = %s AND state = 'live'",
            entity_id,
        )
        return EntityStats.from_dict(rows[0][0]) if rows else None

    def all(self) -> dict[str, EntityStats]:
        """Every entity's recorded figures."""
        rows = self._rows(
            "SELECT entity_id, stats FROM memtrellis_entities WHERE state = 'live' ORDER BY seq"
        )
        return {str(e): EntityStats.from_dict(s) for e, s in rows}

    def record(self, entity_id: str, stats: EntityStats) -> None:
        """Replace the entity's figures."""
        self._run(
            "INSERT INTO memtrellis_entities (entity_id, stats) VALUES (%s, %s::jsonb) "
            "ON CONFLICT (entity_id) DO UPDATE SET stats = excluded.stats",
            entity_id,
            json.dumps(stats.to_dict(), separators=(",", ":")),
        )

    def mark_dropping(self, entity_id: str) -> None:
        """Mark the entity as being forgotten (before its shard is destroyed)."""
        self._run(
            "INSERT INTO memtrellis_entities (entity_id, state) VALUES (%s, 'dropping') "
            "ON CONFLICT (entity_id) DO UPDATE SET state = 'dropping'",
            entity_id,
        )

    def dropping(self) -> list[str]:
        """Entities whose forgetting was started and not finished."""
        rows = self._rows(
            "SELECT entity_id FROM memtrellis_entities WHERE state = 'dropping' ORDER BY seq"
        )
        return [str(row[0]) for row in rows]

    def remove(self, entity_id: str) -> None:
        """Forget the entity's row (after its shard and vectors are gone)."""
        self._run("DELETE FROM memtrellis_entities WHERE entity_id = %s", entity_id)

    def close(self) -> None:
        """Close the backend's connections."""
        self.backend.close()
