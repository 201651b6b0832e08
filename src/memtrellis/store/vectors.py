"""The vector index: Chroma, one collection per ``entity_id``, created lazily.

Partitioned by entity rather than filtered: a ``where`` filter selecting one user's 1% of
100k vectors measured about 40 ms p50 against about 2 ms for an unfiltered query. Process
and session stay metadata filters inside the entity's collection. The settings every
collection gets, and the index on Chroma's write log, are in `memtrellis.store.chroma_tuning`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from memtrellis._offline import chroma_settings, prepare_offline_env
from memtrellis.store._chroma_damage import (
    forget_failed_client,
    is_damage,
    refuse_a_lost_database,
)
from memtrellis.store._chroma_lag import again_while_unsynced, not_loaded
from memtrellis.store._chroma_sql import ChromaSqlError, chroma_sql
from memtrellis.store._corrupt import FROM_GRAPH, damaged
from memtrellis.store._rwlock import SharedExclusiveLock
from memtrellis.store.chroma_tuning import (
    HNSW_CONFIGURATION,
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_SYNC_THRESHOLD,
    ChromaLogIndex,
    bring_up_to_date,
    index_chroma_log,
)
from memtrellis.types import MemoryItem

__all__ = [
    "HNSW_CONFIGURATION",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_EF_SEARCH",
    "HNSW_SYNC_THRESHOLD",
    "VectorIndex",
    "Vectors",
    "collection_name",
    "index_chroma_log",
]

log = logging.getLogger("memtrellis.store")
_T = TypeVar("_T")
_P = ParamSpec("_P")


def collection_name(entity_id: str) -> str:
    """A Chroma-safe collection name for one entity (names allow only ``[a-zA-Z0-9._-]``).

    Examples:
        >>> collection_name("ana") == collection_name("ana")  # stable across runs
        True
        >>> collection_name("Ana Lima/2").startswith("mt-")
        True
    """
    return "mt-" + hashlib.blake2b(entity_id.encode(), digest_size=16).hexdigest()


#: Records per Chroma call when the client does not say (``get_max_batch_size`` of an
#: embedded Chroma 1.5 on SQLite: 5,461, its limit of SQL variables per statement).
DEFAULT_MAX_BATCH = 5_461


def _batches(count: int, size: int) -> Iterator[slice]:
    """Slices of ``range(count)`` of at most ``size`` each (none when ``count`` is 0).

    Examples:
        >>> [(s.start, s.stop) for s in _batches(5, 2)]
        [(0, 2), (2, 4), (4, 5)]
    """
    step = max(1, size)
    for start in range(0, count, step):
        yield slice(start, min(start + step, count))


def _missing() -> tuple[type[Exception], ...]:
    # What Chroma raises for a collection that does not exist (ValueError before 1.0).
    from chromadb.errors import NotFoundError

    return (NotFoundError, ValueError)


def _metadata(item: MemoryItem) -> dict[str, str | int | float | bool]:
    # The full item rides along so that the graph can be rebuilt from the index alone.
    return {
        "entity_id": item.scope.entity_id,
        "process_id": item.scope.process_id or "",
        "session_id": item.scope.session_id or "",
        "memory_type": item.memory_type.value,
        "created_at": item.created_at.timestamp(),
        "item": item.model_dump_json(),
    }


class Vectors(Protocol):
    """What the store asks of a vector index: `VectorIndex` in this process, or
    [`VectorProcess`][memtrellis.store.vectorproc.VectorProcess] serving one from a child.

    ``stale`` set to True makes the next call reopen the client first (another process
    wrote); ``mode`` is ``"embedded"`` or ``"http"``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> index: Vectors = VectorIndex(Path(tempfile.mkdtemp()))
        >>> index.mode, index.count("nobody")
        ('embedded', 0)
        >>> index.close()
    """

    stale: bool

    @property
    def mode(self) -> str: ...
    def upsert(
        self, items: Sequence[MemoryItem], embeddings: Sequence[Sequence[float]]
    ) -> None: ...
    def update_metadata(self, items: Sequence[MemoryItem]) -> None: ...
    def delete(self, entity_id: str, ids: Sequence[str]) -> None: ...
    def drop_entity(self, entity_id: str) -> None: ...
    def has(self, entity_id: str, ids: Sequence[str]) -> set[str]: ...
    def embeddings(self, entity_id: str, ids: Sequence[str]) -> dict[str, list[float]]: ...
    def count(self, entity_id: str) -> int: ...
    def item_copies(self, entity_id: str) -> tuple[dict[str, MemoryItem], int]: ...
    def query(
        self,
        entity_id: str,
        embedding: Sequence[float],
        n: int,
        *,
        process_id: str | None = None,
        session_id: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]: ...
    def entity_ids(self) -> list[str]: ...
    def refresh(self) -> None: ...
    def close(self) -> None: ...


def _asked_again(
    method: Callable[Concatenate[VectorIndex, _P], _T],
) -> Callable[Concatenate[VectorIndex, _P], _T]:
    """A `VectorIndex` call, asked again on a reopened client while Chroma refuses it
    because this process's view lags behind another's changes (`again_while_unsynced`):
    every call by ids is idempotent, so a write is asked again as a read is."""

    def asked(self: VectorIndex, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return self._again_while_unsynced(method.__name__, lambda: method(self, *args, **kwargs))

    functools.update_wrapper(asked, method)  # its name and docstring, for the API pages
    return asked


class VectorIndex:
    """Thin, typed access to Chroma for memtrellis' needs.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from memtrellis import MemoryItem, Scope
        >>> index = VectorIndex(Path(tempfile.mkdtemp()))
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> index.upsert([item], [[1.0, 0.0, 0.0]])
        >>> index.query("ana", [1.0, 0.0, 0.0], n=1) == [(item.id, 1.0)]
        True
        >>> index.close()
    """

    def __init__(self, directory: Path, *, chroma_url: str | None = None) -> None:
        self.directory = directory
        self.chroma_url = chroma_url
        self._lock = threading.RLock()
        # A collection handle dies with the client that made it. Calls hold the gate
        # shared while they use one; refresh and close replace the client holding it
        # exclusive, so a recall in one thread never queries a client another closed.
        self._gate = SharedExclusiveLock()
        self._collections: dict[str, Any] = {}
        self._client: Any = None
        self._max_batch: int | None = None
        self.stale = False
        self._log_index = ChromaLogIndex(directory)
        self._connect()

    @property
    def mode(self) -> str:
        """``"http"`` for a Chroma server, ``"embedded"`` otherwise."""
        return "http" if self.chroma_url else "embedded"

    def _connect(self) -> None:
        prepare_offline_env()
        import chromadb

        if self.chroma_url:
            from urllib.parse import urlparse

            url = urlparse(self.chroma_url)
            self._client = chromadb.HttpClient(
                host=url.hostname or "127.0.0.1",
                port=url.port or (443 if url.scheme == "https" else 8000),
                ssl=url.scheme == "https",
                settings=chroma_settings(),
            )
        else:
            # Before Chroma opens the file, so that no write of this process's Chroma can
            # meet the index being built; and again after, for a store Chroma just created.
            refuse_a_lost_database(self.directory)
            self._index_the_log()
            try:
                self._client = chromadb.PersistentClient(
                    path=str(self.directory), settings=chroma_settings()
                )
            except Exception as exc:  # chromadb raises several kinds for a damaged file
                forget_failed_client(self.directory)
                raise damaged(
                    self.directory,
                    f"cannot be opened ({type(exc).__name__}: {str(exc)[:200]})",
                    self.directory.parent,
                    FROM_GRAPH,
                ) from exc
            self._index_the_log()
        self._collections.clear()
        self._max_batch = None
        self.stale = False

    @property
    def max_batch(self) -> int:
        """Most records one Chroma call takes, as the client reports it (read once).

        Chroma refuses a larger ``upsert``, ``update``, ``delete`` or ``get`` outright, so
        every write and read by ids is cut into batches of this size.
        """
        if self._max_batch is None:
            try:
                size = int(self._client.get_max_batch_size())
            except Exception:  # an old server without the call: Chroma's SQLite limit
                size = DEFAULT_MAX_BATCH
            self._max_batch = max(1, size)
        return self._max_batch

    def _index_the_log(self) -> None:
        # Once made, the index stays: reopening the client (refresh) need not look again.
        if self.mode == "embedded":
            self._log_index.ensure()

    def refresh(self) -> None:
        """Reopen the embedded client so it sees what other processes wrote.

        An embedded Chroma keeps its HNSW index in memory and does not notice another
        process's writes; reopening costs about 15 ms and happens only after one.
        """
        with self._gate.exclusive(), self._lock:
            if self.mode == "embedded":
                self._close_client()
                self._connect()
            self.stale = False

    def _close_client(self) -> None:
        close = getattr(self._client, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # best effort on shutdown
                close()
        self._client = None

    def close(self) -> None:
        """Release the client."""
        with self._gate.exclusive(), self._lock:
            self._collections.clear()
            if self._client is not None:
                self._close_client()
                self._log_index.closed()

    @contextlib.contextmanager
    def _client_in_use(self) -> Iterator[None]:
        """Hold the current client for one call (reopened first when it is stale)."""
        if self.stale:
            self.refresh()
        with self._gate.shared():
            try:
                yield
            except Exception as exc:
                if self.mode != "embedded" or not is_damage(exc):
                    raise
                raise damaged(
                    self.directory,
                    f"cannot be read ({type(exc).__name__}: {str(exc)[:200]})",
                    self.directory.parent,
                    FROM_GRAPH,
                ) from exc

    def _collection(self, entity_id: str, *, create: bool) -> Any:
        # Call with the client in use (_client_in_use).
        with self._lock:
            found = self._collections.get(entity_id)
            if found is not None:
                return found
            name = collection_name(entity_id)
            if create:
                found = self._client.get_or_create_collection(
                    name,
                    configuration={"hnsw": dict(HNSW_CONFIGURATION)},
                    metadata={"entity_id": entity_id, "memtrellis": 1},
                    embedding_function=None,
                )
            else:
                try:
                    found = self._client.get_collection(name, embedding_function=None)
                except _missing():
                    return None
            bring_up_to_date(found)
            self._collections[entity_id] = found
            return found

    @_asked_again
    def upsert(self, items: Sequence[MemoryItem], embeddings: Sequence[Sequence[float]]) -> None:
        """Insert or replace vectors; items may belong to several entities."""
        with self._client_in_use():
            by_entity: dict[str, list[int]] = {}
            for position, item in enumerate(items):
                by_entity.setdefault(item.scope.entity_id, []).append(position)
            for entity_id, positions in by_entity.items():
                collection = self._collection(entity_id, create=True)
                for part in _batches(len(positions), self.max_batch):
                    chosen = positions[part]
                    collection.upsert(
                        ids=[items[p].id for p in chosen],
                        embeddings=[list(embeddings[p]) for p in chosen],
                        # No documents: the item JSON in the metadata carries the text,
                        # nothing reads documents back, and Chroma's full-text indexing
                        # of them cost ~30% of a write.
                        metadatas=[_metadata(items[p]) for p in chosen],
                    )

    @_asked_again
    def update_metadata(self, items: Sequence[MemoryItem]) -> None:
        """Refresh the stored metadata (and item copy) without re-embedding."""
        with self._client_in_use():
            by_entity: dict[str, list[MemoryItem]] = {}
            for item in items:
                by_entity.setdefault(item.scope.entity_id, []).append(item)
            for entity_id, group in by_entity.items():
                collection = self._collection(entity_id, create=False)
                if collection is None:
                    continue
                for part in _batches(len(group), self.max_batch):
                    collection.update(
                        ids=[i.id for i in group[part]],
                        metadatas=[_metadata(i) for i in group[part]],
                    )

    @_asked_again
    def delete(self, entity_id: str, ids: Sequence[str]) -> None:
        """Delete vectors by id from one entity's collection (missing ids are ignored)."""
        with self._client_in_use():
            collection = self._collection(entity_id, create=False)
            if collection is None:
                return
            wanted = list(ids)
            for part in _batches(len(wanted), self.max_batch):
                collection.delete(ids=wanted[part])

    def drop_entity(self, entity_id: str) -> None:
        """Delete one entity's whole collection, leaving none of its data on disk.

        Chroma 1.5's ``delete_collection`` leaves two copies behind in embedded mode: the
        collection's HNSW segment directory (vectors, and stray bytes of its documents)
        and the SQLite pages that held its metadata, now free but not overwritten. Both
        are removed here, because forgetting an entity must not leave its memories in
        the store directory.
        """
        with self._client_in_use(), self._lock:
            self._collections.pop(entity_id, None)
            name = collection_name(entity_id)
            segments = self._segment_dirs(name)
            with contextlib.suppress(*_missing()):  # already gone: the goal is reached
                self._client.delete_collection(name)
            self._scrub(segments)

    @property
    def _sqlite_path(self) -> Path:
        return self.directory / "chroma.sqlite3"

    def _segment_dirs(self, name: str) -> list[Path]:
        """The on-disk segment directories of a collection (embedded mode only)."""
        if self.mode != "embedded" or not self._sqlite_path.exists():
            return []
        try:
            collection_id = str(self._client.get_collection(name, embedding_function=None).id)
        except _missing():
            collection_id = None
        try:
            found = chroma_sql(
                "segments", self._sqlite_path, {"name": name, "collection_id": collection_id}
            )
        except ChromaSqlError:
            log.warning("could not list the Chroma segments of %s; its files may remain", name)
            return []
        return [self.directory / str(segment) for segment in found]

    def _scrub(self, segments: list[Path]) -> None:
        """Remove a dropped collection's segment files and the freed SQLite pages."""
        if self.mode != "embedded":
            return
        for segment in segments:
            shutil.rmtree(segment, ignore_errors=True)
        if not self._sqlite_path.exists():
            return
        try:
            # VACUUM rewrites the database without its free pages (where the deleted
            # rows' bytes still sit); it costs one copy of chroma.sqlite3. In a child
            # process, never beside Chroma's own SQLite in this one (see _chroma_sql).
            chroma_sql("vacuum", self._sqlite_path)
        except ChromaSqlError:
            log.warning("could not compact %s after dropping a collection", self._sqlite_path)

    @_asked_again
    def has(self, entity_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the entity's collection holds."""
        with self._client_in_use():
            collection = self._collection(entity_id, create=False)
            if collection is None:
                return set()
            wanted, found = list(ids), set[str]()
            for part in _batches(len(wanted), self.max_batch):
                found.update(collection.get(ids=wanted[part], include=[])["ids"])
            return found

    def embeddings(self, entity_id: str, ids: Sequence[str]) -> dict[str, list[float]]:
        """Stored vectors of ``ids`` in one entity's collection (missing ids left out).

        While another process is writing the collection, this process's embedded view can
        hold a record whose vector it has not loaded yet, and Chroma refuses the whole
        read ("Error finding id"): the client is reopened and the read tried again, and
        if the view still lags, the vectors are read one by one and the lagging ones left
        out (as missing: a planner then has one candidate fewer, never a wrong vector).
        """
        wanted = list(ids)
        return self._again_while_unsynced(
            "embeddings",
            lambda: self._embeddings(entity_id, wanted, one_by_one=False),
            then=lambda: self._embeddings(entity_id, wanted, one_by_one=True),
        )

    def _again_while_unsynced(
        self, what: str, call: Callable[[], _T], then: Callable[[], _T] | None = None
    ) -> _T:
        """``call()``, asked again on a reopened client while Chroma refuses it because
        this process's embedded view lags (see `memtrellis.store._chroma_lag`)."""
        if self.mode != "embedded":
            return call()
        return again_while_unsynced(call, reopen=self.refresh, then=then, what=what)

    def _embeddings(
        self, entity_id: str, wanted: list[str], *, one_by_one: bool
    ) -> dict[str, list[float]]:
        with self._client_in_use():
            collection = self._collection(entity_id, create=False)
            if collection is None:
                return {}
            found: dict[str, list[float]] = {}
            parts = [slice(n, n + 1) for n in range(len(wanted))] if one_by_one else None
            for part in parts or _batches(len(wanted), self.max_batch):
                try:
                    got = collection.get(ids=wanted[part], include=["embeddings"])
                except Exception as exc:
                    if not (one_by_one and not_loaded(exc)):
                        raise
                    log.warning(
                        "entity %s: the vector of %s is not readable yet (another process "
                        "is writing it); left out",
                        entity_id,
                        wanted[part][0],
                    )
                    continue
                vectors = got["embeddings"] if got["embeddings"] is not None else []
                found.update(
                    {i: [float(x) for x in v] for i, v in zip(got["ids"], vectors, strict=True)}
                )
            return found

    @_asked_again
    def count(self, entity_id: str) -> int:
        """Number of vectors in one entity's collection."""
        with self._client_in_use():
            collection = self._collection(entity_id, create=False)
            return 0 if collection is None else int(collection.count())

    @_asked_again
    def item_copies(self, entity_id: str) -> tuple[dict[str, MemoryItem], int]:
        """The readable item copies of an entity's collection by id, and how many were not
        (what repair rebuilds a graph from, and what tests compare the graph with)."""
        with self._client_in_use():
            collection = self._collection(entity_id, create=False)
            if collection is None:
                return {}, 0
            got = collection.get(include=["metadatas"])
        copies: dict[str, MemoryItem] = {}
        unreadable = 0
        for memory_id, meta in zip(got["ids"], got["metadatas"] or [], strict=True):
            try:
                copies[memory_id] = MemoryItem.model_validate(json.loads(str(meta["item"])))
            except (ValueError, KeyError, TypeError):
                unreadable += 1
        return copies, unreadable

    @_asked_again
    def query(
        self,
        entity_id: str,
        embedding: Sequence[float],
        n: int,
        *,
        process_id: str | None = None,
        session_id: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest memories as ``(id, cosine similarity)``, best first; ``ids``: among
        those memories only.

        A query that meets a record deleted while it ran (a forget in another thread of
        this process) or written by another process since this client loaded the index
        is refused by Chroma ("Error finding id"): it is asked again, on a reopened client.
        """
        with self._client_in_use():
            collection = self._collection(entity_id, create=False)
            if collection is None:
                return []
            # n may exceed the collection's size: Chroma then returns what it has, and asking
            # for the count first would cost as much as the query itself.
            clauses: list[dict[str, Any]] = []
            if process_id is not None:
                clauses.append({"process_id": process_id})
            if session_id is not None:
                clauses.append({"session_id": session_id})
            where: dict[str, Any] | None = None
            if len(clauses) == 1:
                where = clauses[0]
            elif clauses:
                where = {"$and": clauses}
            result = collection.query(
                query_embeddings=[list(embedding)],
                n_results=n,
                where=where,
                ids=list(ids) if ids is not None else None,
                include=["distances"],
            )
            ids = result["ids"][0]
            distances = result["distances"][0] if result["distances"] else [1.0] * len(ids)
            return [(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def entity_ids(self) -> list[str]:
        """Entities that have a collection, read from collection metadata."""
        with self._client_in_use():
            found: list[str] = []
            for collection in self._client.list_collections():
                meta = collection.metadata or {}
                if meta.get("memtrellis") and "entity_id" in meta:
                    found.append(str(meta["entity_id"]))
            return found
