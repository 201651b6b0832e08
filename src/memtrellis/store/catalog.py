"""The catalog of an embedded store: one SQLite row per entity, read without loading shards.

SQLite (in WAL mode) rather than a JSON file because several processes update it at once,
each for its own entities, and a row update must never rewrite what the others wrote.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memtrellis.store._corrupt import damaged
from memtrellis.store.storage import EntityStats

__all__ = ["SqliteCatalog"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_id TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL DEFAULT 'live',
    stats TEXT NOT NULL DEFAULT '{}'
)
"""


class SqliteCatalog:
    """The `Catalog` of an embedded store, in ``catalog.sqlite3``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> catalog = SqliteCatalog(Path(tempfile.mkdtemp()) / "catalog.sqlite3")
        >>> catalog.ensure("ana")
        >>> catalog.record("ana", EntityStats(memories=2))
        >>> catalog.entities(), catalog.get("ana").memories
        (['ana'], 2)
        >>> catalog.close()
    """

    def __init__(self, path: Path, *, timeout: float = 60.0) -> None:
        self.path = path
        self._mu = threading.Lock()
        try:
            self._db = sqlite3.connect(
                str(path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            # A row is figures that the shards can recompute: losing the last update to a
            # power cut costs nothing, so the catalog does not fsync every write.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise damaged(path, f"cannot be read ({exc})", path.parent) from exc

    @contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """The connection, with a damaged database file reported as such (a busy or
        locked one is not damage: its errors pass as they are)."""
        with self._mu:
            try:
                yield self._db
            except sqlite3.OperationalError:
                raise
            except sqlite3.DatabaseError as exc:
                raise damaged(self.path, f"cannot be read ({exc})", self.path.parent) from exc

    def entities(self) -> list[str]:
        """Every entity with a shard, in the order they were first written."""
        with self._using() as db:
            rows = db.execute(
                "SELECT entity_id FROM entities WHERE state = 'live' ORDER BY seq"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def ensure(self, entity_id: str) -> None:
        """Record the entity (before its shard's first write); no-op when known."""
        with self._using() as db:
            db.execute(
                "INSERT INTO entities (entity_id) VALUES (?) "
                "ON CONFLICT(entity_id) DO UPDATE SET state = 'live'",
                (entity_id,),
            )

    def get(self, entity_id: str) -> EntityStats | None:
        """The entity's last recorded figures, or ``None`` when unknown."""
        with self._using() as db:
            row = db.execute(
                "SELECT stats FROM entities WHERE entity_id = ? AND state = 'live'", (entity_id,)
            ).fetchone()
        return None if row is None else EntityStats.from_dict(json.loads(row[0]))

    def all(self) -> dict[str, EntityStats]:
        """Every entity's recorded figures."""
        with self._using() as db:
            rows = db.execute(
                "SELECT entity_id, stats FROM entities WHERE state = 'live' ORDER BY seq"
            ).fetchall()
        return {str(e): EntityStats.from_dict(json.loads(s)) for e, s in rows}

    def record(self, entity_id: str, stats: EntityStats) -> None:
        """Replace the entity's figures."""
        payload = json.dumps(stats.to_dict(), separators=(",", ":"))
        with self._using() as db:
            db.execute(
                "INSERT INTO entities (entity_id, stats) VALUES (?, ?) "
                "ON CONFLICT(entity_id) DO UPDATE SET stats = excluded.stats",
                (entity_id, payload),
            )

    def mark_dropping(self, entity_id: str) -> None:
        """Mark the entity as being forgotten (before its shard is destroyed)."""
        with self._using() as db:
            db.execute(
                "INSERT INTO entities (entity_id, state) VALUES (?, 'dropping') "
                "ON CONFLICT(entity_id) DO UPDATE SET state = 'dropping'",
                (entity_id,),
            )

    def dropping(self) -> list[str]:
        """Entities whose forgetting was started and not finished."""
        with self._using() as db:
            rows = db.execute(
                "SELECT entity_id FROM entities WHERE state = 'dropping' ORDER BY seq"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def remove(self, entity_id: str) -> None:
        """Forget the entity's row (after its shard and vectors are gone)."""
        with self._using() as db:
            db.execute("DELETE FROM entities WHERE entity_id = ?", (entity_id,))

    def close(self) -> None:
        """Release the connection."""
        with self._mu:
            self._db.close()
