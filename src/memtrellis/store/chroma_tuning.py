"""How memtrellis tunes Chroma: the HNSW configuration of every collection (brought up to
date on collections made before), and an index on Chroma's write log by collection.

Both keep one entity's write as fast with hundreds of collections around it as with a
few (``benchmarks/chroma_writes.py``); `memtrellis.store.vectors` applies them and
re-exports the public names.

Examples:
    >>> HNSW_CONFIGURATION["space"], HNSW_CONFIGURATION["ef_search"]
    ('cosine', 200)
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from memtrellis.store._chroma_sql import ChromaSqlError, chroma_sql

__all__ = [
    "HNSW_CONFIGURATION",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_SYNC_THRESHOLD",
    "ChromaLogIndex",
    "bring_up_to_date",
    "index_chroma_log",
]

log = logging.getLogger("memtrellis.store")

#: Chroma's default ef_search of 100 gave recall@10 0.955 against exact search at 100k
#: vectors; 200 gave 0.979. Recall quality is worth the extra fraction of a millisecond.
HNSW_EF_SEARCH = 200
HNSW_EF_CONSTRUCTION = 200
#: Our index on Chroma's write log, by collection (see index_chroma_log).
_LOG_INDEX = "memtrellis_queue_by_topic"

#: Chroma appends every write to one log (``embeddings_queue``) shared by all collections
#: and, on each write, reads the collection's log since its HNSW segment last persisted and
#: purges what lies before. Neither query has an index on the collection, so both walk the
#: rows of every collection in that range; and a segment persists only every
#: ``sync_threshold`` writes. With Chroma's default of 1000, a user with fewer writes never
#: persists, the log is never purged and each write walks all of it: 200k memories in 400
#: collections left 200k rows and 280-540 ms per upsert. With 10 the log holds about
#: ``collections x 5`` rows: from 10 to 400 collections of 500, an upsert went from 4 to
#: 9 ms (tmpfs; Chroma's default: 18 to 737 ms, 100: 6 to 83 ms, 30: 5 to 21 ms), and a
#: persist every 10th write costs nothing measurable on disk where 1 (every write) cost
#: 1.7x the mean write; recall@10 and query time did not change
#: (``benchmarks/chroma_writes.py``, ``benchmarks/results/chroma_writes.json``).
#: ``batch_size`` is not used by Chroma 1.x's HNSW segments but must not exceed it.
HNSW_SYNC_THRESHOLD = 10

#: The HNSW configuration of every collection. ``space`` and ``ef_construction`` are fixed
#: when a collection is made; the rest is brought up to date on collections made before.
HNSW_CONFIGURATION: dict[str, str | int] = {
    "space": "cosine",
    "ef_search": HNSW_EF_SEARCH,
    "ef_construction": HNSW_EF_CONSTRUCTION,
    "sync_threshold": HNSW_SYNC_THRESHOLD,
    "batch_size": HNSW_SYNC_THRESHOLD,
}

#: What `HNSW_CONFIGURATION` sets that ``collection.modify`` can change on an existing
#: collection and that Chroma reports back (it does not report ``batch_size``).
_UPDATABLE = ("ef_search", "sync_threshold")


def _stale_settings(collection: Any) -> dict[str, int]:
    """What of `HNSW_CONFIGURATION` a collection lacks (read from the handle: no round trip)."""
    try:
        hnsw = (collection.configuration or {}).get("hnsw") or {}
    except Exception:  # an unreadable configuration: leave the collection as it is
        return {}
    return {
        key: int(HNSW_CONFIGURATION[key])
        for key in _UPDATABLE
        if hnsw.get(key) != HNSW_CONFIGURATION[key]
    }


def bring_up_to_date(collection: Any) -> None:
    """Give a collection made with other settings (release 0.1 used Chroma's defaults for
    ``sync_threshold``) the current `HNSW_CONFIGURATION`, once: the change is stored with
    the collection, so a later open finds nothing to do.

    It applies when Chroma next loads the collection's HNSW segment: at once when this is
    the first use of the collection in this process (the usual case, since the check runs
    when the collection is first opened), and for a ``chroma run`` server that already had
    the segment in memory, when the server restarts. A failure is logged, never raised:
    the collection works as before.
    """
    stale = _stale_settings(collection)
    if not stale:
        return
    if "sync_threshold" in stale:
        stale["batch_size"] = int(HNSW_CONFIGURATION["batch_size"])
    for attempt in range(1, 4):
        try:
            collection.modify(configuration={"hnsw": stale})
            return
        except Exception as exc:  # best effort: the old settings only cost speed
            if "locked" in str(exc) and attempt < 3:
                time.sleep(0.2 * attempt)  # Chroma's own writer holds the file a moment
                continue
            log.warning(
                "could not update the HNSW settings of Chroma collection %s (%s: %s)",
                getattr(collection, "name", "?"),
                type(exc).__name__,
                str(exc)[:200],
            )
            return


def index_chroma_log(directory: Path | str) -> bool:
    """Give the write log of the Chroma data in ``directory`` an index by collection.

    Every Chroma write reads its collection's log back and purges it, and Chroma's
    ``embeddings_queue`` is indexed by sequence number only: without this index each write
    walks the unpurged rows of every collection, so one user's write slows down as others
    are added (``benchmarks/chroma_writes.py``: 5.5 -> 10.1 ms from 10 to 400 collections of
    500 with ``sync_threshold`` 10, 3.9 -> 5.5 ms with it). The embedded index builds it on
    open; the operator of a ``chroma run`` server runs this once on the server's
    ``--path``. The index lives beside Chroma's schema under a name of ours, is made only
    when missing (checked read-only first, so this takes no write lock once it exists), and
    its absence only costs speed: a failure is logged, never raised. A file this process
    left indexed when it last closed it, untouched since, is not looked at again (see
    `ChromaLogIndex`).

    Returns whether the index exists afterwards.

    Examples:
        >>> import tempfile
        >>> index_chroma_log(tempfile.mkdtemp())  # no Chroma data there yet
        False
    """
    database = Path(directory) / "chroma.sqlite3"
    if not database.exists():
        return False
    if _left_indexed(database):
        return True
    try:
        # In a child process: a Chroma of this process may have the file open (see
        # _chroma_sql). Read-only first there, so an existing index takes no write lock.
        return bool(chroma_sql("index_log", database, _LOG_INDEX))
    except ChromaSqlError:
        log.warning("could not index Chroma's write log in %s; writes may slow", database)
        return False


# What proves a Chroma file is one this process left indexed: its device and inode, and its
# size, modification and change times as they were just after this process closed its
# client on it. Anything that writes the file since (Chroma in any process, a restore
# copied over it, even one that sets the modification time back) moves its change time,
# which no program can set; a file put in its place has another inode. A few hundred
# files at most are remembered (the least recently closed are forgotten first).
_Identity = tuple[int, int]
_State = tuple[int, int, int]
_LEFT_INDEXED: OrderedDict[_Identity, _State] = OrderedDict()
_LEFT_INDEXED_MAX = 512
_LEFT_LOCK = threading.Lock()


def _stat(database: Path) -> tuple[_Identity, _State] | None:
    try:
        found = database.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino), (found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _left_indexed(database: Path) -> bool:
    seen = _stat(database)
    if seen is None:
        return False
    with _LEFT_LOCK:
        return _LEFT_INDEXED.get(seen[0]) == seen[1]


class ChromaLogIndex:
    """The index on the write log of one embedded store's Chroma file, for the life of one
    client of it (`memtrellis.store.vectors.VectorIndex`): made or found on open, looked for
    no more once found.

    Finding it takes a child process (about 30 ms; see `index_chroma_log`) on every open,
    so when the client closes, the file it leaves is remembered, and the next open in this
    process of that same file, untouched since, trusts it without the child. Only a
    file this client found indexed itself, still at the same inode, is remembered.

    Examples:
        >>> import tempfile
        >>> log_index = ChromaLogIndex(tempfile.mkdtemp())  # no Chroma data there yet
        >>> log_index.ensure(), log_index.indexed
        (False, False)
        >>> log_index.closed()  # nothing to remember
    """

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self._database = self.directory / "chroma.sqlite3"
        self._file: _Identity | None = None  # the file found indexed, once it is

    @property
    def indexed(self) -> bool:
        """Whether this client found (or made) the index."""
        return self._file is not None

    def ensure(self) -> bool:
        """Make the index if it is missing, unless this client found it already; whether it
        exists."""
        if self._file is None:
            before = _stat(self._database)  # before looking: a file replaced meanwhile differs
            if before is not None and index_chroma_log(self.directory):
                self._file = before[0]
        return self._file is not None

    def closed(self) -> None:
        """The client has closed: remember the file as it is left, if it is the one found
        indexed."""
        if self._file is None:
            return
        left = _stat(self._database)
        if left is None or left[0] != self._file:
            return
        with _LEFT_LOCK:
            _LEFT_INDEXED[left[0]] = left[1]
            _LEFT_INDEXED.move_to_end(left[0])
            while len(_LEFT_INDEXED) > _LEFT_INDEXED_MAX:
                _LEFT_INDEXED.popitem(last=False)
