"""Export and import of memories as JSON lines, streamed entity by entity.

One line per memory: ``{"memory": {...}, "history": [...], "edges": [...], "vector":
{...}}``, where ``memory`` is the [`MemoryItem`][memtrellis.types.MemoryItem] as JSON (id, scope,
provenance, validity, confidence, recall counts, ``superseded_by``...), ``history`` its
[`HistoryEvent`][memtrellis.types.HistoryEvent]s oldest first, ``edges`` the typed edges out of
it to other memories of its entity (``{"kind": "supersedes", "to": "<id>"}``; the
``mentions`` edges follow from ``memory.entities``) and ``vector`` its stored embedding
(``{"model": "<embedder model id>", "f32": "<base64 of little-endian float32>"}``). An
import into a store of the same embedder model and dimension reuses the vector (nothing is
embedded again, and recall ranks as it did); any other store embeds the text. A bare
``MemoryItem`` line, as the CLI wrote before, is read too (no history, edges or vector).

[`Memory.export`][memtrellis.Memory.export] and [`Memory.import_`][memtrellis.Memory.import_]
call the two functions here; the CLI's ``export`` and ``import`` commands call those.
Neither side holds more than one entity's ids and one batch of memories at a time.

Examples:
    >>> import io, tempfile
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> with Memory(tempfile.mkdtemp(), entity_id="ana", embedder=HashingEmbedder()) as old:
    ...     _ = old.add("Ana moved to Porto", memory_type="fact")
    ...     backup = io.StringIO()
    ...     old.export(backup)
    1
    >>> with Memory(tempfile.mkdtemp(), entity_id="ana", embedder=HashingEmbedder()) as new:
    ...     report = new.import_(io.StringIO(backup.getvalue()))
    ...     report.imported, [m.text for m in new.list()]
    (1, ['Ana moved to Porto'])
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, NamedTuple, Union

import numpy as np
from pydantic import ValidationError

from memtrellis._progress import bar, progress_arg
from memtrellis.embeddings.base import Embedder
from memtrellis.errors import InvalidInputError
from memtrellis.store import Store
from memtrellis.store._files import given_path
from memtrellis.store.graph import RESERVED_ID_PREFIXES, MemoryGraph
from memtrellis.store.shard import Shard
from memtrellis.store.store import Change
from memtrellis.types import EdgeKind, HistoryEvent, MemoryItem, Scope

__all__ = [
    "DEFAULT_BATCH",
    "Exported",
    "ImportReport",
    "SkippedLine",
    "export_store",
    "import_lines",
    "parse_line",
]

#: Memories embedded together and committed with one commit per entity during an import.
DEFAULT_BATCH = 256
#: Memories read under an entity's lock at a time during an export.
_EXPORT_CHUNK = 500
#: The history event an import adds after the memory's own past.
IMPORTED = "imported"
_LINKS = tuple(kind for kind in EdgeKind if kind is not EdgeKind.MENTIONS)

Edge = tuple[str, str, EdgeKind]


class Exported(NamedTuple):
    """One line of an export, read back.

    Examples:
        >>> line = '{"text": "Bob is vegan", "scope": {"entity_id": "b"}}'
        >>> parse_line(line).item.text, parse_line(line).vector
        ('Bob is vegan', None)
    """

    item: MemoryItem
    history: list[HistoryEvent]
    edges: list[tuple[EdgeKind, str]]
    #: ``(embedder model id, vector)``, when the line carries one.
    vector: tuple[str, list[float]] | None = None


def encode_vector(vector: Sequence[float]) -> str:
    """A vector as base64 of its little-endian float32 bytes (what Chroma stores).

    Examples:
        >>> decode_vector(encode_vector([0.5, -1.0]))
        [0.5, -1.0]
    """
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str) -> list[float]:
    """The vector `encode_vector` wrote.

    Examples:
        >>> decode_vector("AAAAPw==")
        [0.5]
    """
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) % 4:
        raise ValueError("not a whole number of float32 values")
    return np.frombuffer(raw, dtype="<f4").astype(float).tolist()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class SkippedLine:
    """A line an import could not store, and why (one short line).

    Examples:
        >>> SkippedLine(line=3, error="text: Value error, text must not be empty").line
        3
    """

    line: int
    error: str


@dataclass
class ImportReport:
    """What [`Memory.import_`][memtrellis.Memory.import_] stored and what it skipped.

    Attributes:
        imported: Memories stored (a memory whose id was there already is replaced).
        skipped: Lines not stored (invalid JSON or an invalid memory), by line number.
        edges: Edges between memories restored.
        dangling_edges: Edges left out because the memory they point to is in neither
            the file nor the store.
        entities: The entities memories were stored under, in order of first appearance.

    Examples:
        >>> report = ImportReport(imported=2, skipped=[SkippedLine(4, "not JSON")])
        >>> report.imported, report.complete
        (2, False)
    """

    imported: int = 0
    skipped: list[SkippedLine] = field(default_factory=list)
    edges: int = 0
    dangling_edges: int = 0
    entities: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every line was stored."""
        return not self.skipped


# -- export ------------------------------------------------------------------------------------
def _record(graph: MemoryGraph, memory_id: str) -> dict[str, object] | None:
    item = graph.item(memory_id)
    if item is None:  # deleted since its id was read
        return None
    edges = [
        {"kind": kind.value, "to": target}
        for kind in _LINKS
        for target in graph.edges_of(memory_id, kind)[0]
    ]
    return {
        "memory": item.model_dump(mode="json"),
        "history": [event.model_dump(mode="json") for event in graph.history(memory_id)],
        "edges": edges,
    }


def _shard_lines(store: Store, shard: Shard, model_id: str | None) -> Iterator[str]:
    """One entity's lines, read ``_EXPORT_CHUNK`` memories at a time under its lock (so
    that writers of the entity wait for a chunk at most, never for the whole export)."""
    tenant = shard.entity_id
    with shard.mu:
        ids = shard.graph.memory_ids(tenant)
    for start in range(0, len(ids), _EXPORT_CHUNK):
        chunk = ids[start : start + _EXPORT_CHUNK]
        with shard.mu:
            records = [_record(shard.graph, i) for i in chunk]
        vectors = store.vectors.embeddings(tenant, chunk) if model_id is not None else {}
        for memory_id, record in zip(chunk, records, strict=True):
            if record is None:
                continue
            vector = vectors.get(memory_id)
            if vector is not None:
                record["vector"] = {"model": model_id, "f32": encode_vector(vector)}
            yield json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _shards(store: Store, entity_id: str | None) -> Iterator[Shard]:
    if entity_id is None:
        yield from store.shards()  # one at a time; the resident ones stay as they are
        return
    store.refresh(entity_id)
    yield store.shard(entity_id)


def export_store(
    store: Store,
    stream: IO[str],
    *,
    entity_id: str | None = None,
    progress: bool | None = None,
    model_id: str | None = None,
) -> int:
    """Write one entity's memories (or, with ``entity_id=None``, every entity's) to
    ``stream`` as JSON lines; how many were written.

    Superseded and expired memories are written too: an export is a backup. With
    ``model_id`` (the store's embedder model), each line carries its stored vector.

    Examples:
        >>> import io, tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder, store_of
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     _ = memory.add("Bob is vegan", entity_id="bob")
        ...     out = io.StringIO()
        ...     export_store(store_of(memory), out, entity_id="bob")
        1
        >>> sorted(json.loads(out.getvalue()))
        ['edges', 'history', 'memory']
    """
    tenants = [entity_id] if entity_id is not None else store.entities()
    stats = store.stats()  # from the catalog: no shard is loaded for the total
    total = sum(stats[t].memories for t in tenants if t in stats)
    count = 0
    with bar(progress, desc="exporting", total=total or None, unit="memory") as shown:
        for shard in _shards(store, entity_id):
            for line in _shard_lines(store, shard, model_id):
                stream.write(line + "\n")
                count += 1
                shown.update(1)
    return count


# -- import ------------------------------------------------------------------------------------
def reason(exc: Exception) -> str:
    """The first problem of a rejected line, on one short line.

    Examples:
        >>> reason(InvalidInputError("bad\\n  id"))
        'bad id'
    """
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        if not errors:
            return str(exc).splitlines()[0]
        first = errors[0]
        where = ".".join(str(part) for part in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"{where + ': ' if where else ''}{first['msg']}{more}"
    return " ".join(str(exc).split())


def parse_line(line: str) -> Exported:
    """A line of an export: the memory, its history, its edges out and its vector.

    Raises:
        ValidationError: The memory or an event is not valid.
        InvalidInputError: The line is not a JSON object of the export format.

    Examples:
        >>> line = '{"text": "Bob is vegan", "scope": {"entity_id": "b"}}'
        >>> item, history, edges, vector = parse_line(line)
        >>> item.text, history, edges, vector
        ('Bob is vegan', [], [], None)
    """
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise InvalidInputError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError("not a JSON object")
    if "memory" not in data:  # a bare MemoryItem line (the CLI's format before)
        return Exported(MemoryItem.model_validate(data), [], [])
    unknown = set(data) - {"memory", "history", "edges", "vector"}
    if unknown:
        raise InvalidInputError(f"unknown keys {sorted(unknown)}")
    item = MemoryItem.model_validate(data["memory"])
    if item.id.startswith(RESERVED_ID_PREFIXES):
        raise InvalidInputError(f"memory id {item.id!r} is reserved for subject nodes")
    history = [HistoryEvent.model_validate(event) for event in data.get("history") or []]
    edges: list[tuple[EdgeKind, str]] = []
    for edge in data.get("edges") or []:
        if not isinstance(edge, dict) or not isinstance(edge.get("to"), str):
            raise InvalidInputError(f"edge {edge!r} is not {{'kind': ..., 'to': '<id>'}}")
        try:
            kind = EdgeKind(edge.get("kind"))
        except ValueError:
            raise InvalidInputError(f"unknown edge kind {edge.get('kind')!r}") from None
        if kind is not EdgeKind.MENTIONS:
            edges.append((kind, edge["to"]))
    vector: tuple[str, list[float]] | None = None
    given = data.get("vector")
    if given is not None:
        if not isinstance(given, dict) or not isinstance(given.get("model"), str):
            raise InvalidInputError("vector is not {'model': ..., 'f32': ...}")
        try:
            vector = (given["model"], decode_vector(str(given.get("f32"))))
        except ValueError as exc:
            raise InvalidInputError(f"vector is not base64 float32: {exc}") from None
    return Exported(item, history, edges, vector)


class _Importer:
    """Batches of parsed lines, embedded together and committed one commit per entity."""

    def __init__(self, store: Store, embedder: Embedder, report: ImportReport, size: int) -> None:
        self.store = store
        self.embedder = embedder
        self.report = report
        self.size = size
        self.batch: list[tuple[MemoryItem, list[HistoryEvent], list[float] | None]] = []
        self.batch_ids: set[tuple[str, str]] = set()
        self.edges: list[Edge] = []
        # Edges to a memory not read yet, by (entity, target id): added with the target.
        self.waiting: dict[tuple[str, str], list[Edge]] = {}

    def known(self, tenant: str, memory_id: str) -> bool:
        if (tenant, memory_id) in self.batch_ids:
            return True
        with self.store.reading(tenant) as shard:
            return memory_id in shard.graph

    def add(self, line: Exported) -> None:
        item, history, edges, given = line
        tenant = item.scope.entity_id
        if (tenant, item.id) in self.batch_ids:  # the same id twice: the later line wins
            self.flush()
        # The exported vector, when it is of this store's embedder; else the text is embedded.
        vector = None
        if given is not None and given[0] == self.embedder.model_id:
            vector = given[1] if len(given[1]) == self.embedder.dimension else None
        self.batch.append((item, history, vector))
        self.batch_ids.add((tenant, item.id))
        self.edges.extend(self.waiting.pop((tenant, item.id), ()))
        for kind, target in edges:
            edge = (item.id, target, kind)
            if self.known(tenant, target):
                self.edges.append(edge)
            else:
                self.waiting.setdefault((tenant, target), []).append(edge)
        if tenant not in self.report.entities:
            self.report.entities.append(tenant)
        if len(self.batch) >= self.size:
            self.flush()

    def flush(self) -> None:
        if not self.batch:
            return
        missing = [item.search_text() for item, _, given in self.batch if given is None]
        embedded = iter(self.embedder.embed_documents(missing) if missing else [])
        vectors = [given if given is not None else next(embedded) for _, _, given in self.batch]
        changes: list[Change] = []
        for tenant in {item.scope.entity_id for item, _, _ in self.batch}:
            self.store.refresh(tenant)
        for (item, history, _), vector in zip(self.batch, vectors, strict=True):
            with self.store.reading(item.scope.entity_id) as shard:
                replaced = item.id in shard.graph
            # A memory already there keeps its own past; a new one gets the exported one.
            past = () if replaced else tuple(history)
            changes.append(Change(item, vector, IMPORTED, history=past))
        self.store.apply(changes, self.edges)
        self.report.imported += len(self.batch)
        self.report.edges += len(self.edges)
        self.batch, self.batch_ids, self.edges = [], set(), []

    def finish(self) -> None:
        self.flush()
        self.report.dangling_edges += sum(len(edges) for edges in self.waiting.values())


def import_lines(
    store: Store,
    embedder: Embedder,
    lines: Iterable[str],
    *,
    entity_id: str | None = None,
    process_id: str | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: bool | None = None,
) -> ImportReport:
    """Store the memories of exported lines exactly as they were (no lifecycle), in batches.

    Each batch of ``batch_size`` memories is committed with one commit per entity; the
    memories of a batch whose line carries no vector of ``embedder``'s model are embedded
    in one call. ``entity_id`` (and ``process_id``) store every memory under that
    entity (process) instead of the one recorded in the line. Invalid lines are skipped
    and reported; blank lines are ignored.

    Examples:
        >>> import tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder, store_of
        >>> line = '{"id": "n1", "text": "Bob is vegan", "scope": {"entity_id": "bob"}}'
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     report = import_lines(store_of(memory), memory.embedder, [line, "{oops"])
        ...     memory.get("n1", entity_id="bob").text
        'Bob is vegan'
        >>> report.imported, report.skipped[0].line
        (1, 2)
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError("batch_size must be a positive integer")
    report = ImportReport()
    importer = _Importer(store, embedder, report, batch_size)
    with bar(progress, desc="importing", unit="memory") as shown:
        for number, raw in enumerate(lines, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            try:
                exported = parse_line(line)
                if entity_id is not None or process_id is not None:
                    item = exported.item
                    scope = Scope(
                        entity_id=entity_id or item.scope.entity_id,
                        process_id=process_id or item.scope.process_id,
                        session_id=item.scope.session_id,
                    )
                    exported = exported._replace(item=item.model_copy(update={"scope": scope}))
            except (ValidationError, InvalidInputError) as exc:
                report.skipped.append(SkippedLine(number, reason(exc)))
                continue
            importer.add(exported)
            shown.update(1)
        importer.finish()
    return report


PathOrFile = Union[str, "os.PathLike[str]", IO[str]]


@contextlib.contextmanager
def opened(target: PathOrFile, mode: str) -> Iterator[IO[str]]:
    """A text stream for ``target``: a path opened (UTF-8) and closed, or the stream given."""
    if isinstance(target, (str, os.PathLike)):
        path = given_path(target, "the export file" if mode == "w" else "the import file")
        with path.open(mode, encoding="utf-8", newline="" if mode == "r" else None) as f:
            yield f
        return
    if not hasattr(target, "write" if mode == "w" else "read"):
        raise InvalidInputError(
            f"expected a path or a text file open for {'writing' if mode == 'w' else 'reading'}, "
            f"not {type(target).__name__}"
        )
    yield target


def _entity_arg(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str, not {type(value).__name__}")
    try:
        Scope(entity_id=value)  # the checks of a scope id
    except ValidationError as exc:
        raise InvalidInputError(f"invalid {name}: {reason(exc)}") from None
    return value


def export_to(
    store: Store,
    embedder: Embedder,
    target: PathOrFile,
    entity_id: str | None,
    progress: bool | None,
) -> int:
    """[`Memory.export`][memtrellis.Memory.export]: its arguments checked, then `export_store`."""
    tenant = _entity_arg("entity_id", entity_id)
    shown = progress_arg(progress)
    with opened(target, "w") as stream:
        return export_store(
            store, stream, entity_id=tenant, progress=shown, model_id=embedder.model_id
        )


def import_from(
    store: Store,
    embedder: Embedder,
    source: PathOrFile,
    progress: bool | None,
    entity_id: str | None,
    process_id: str | None,
    batch_size: int,
) -> ImportReport:
    """[`Memory.import_`][memtrellis.Memory.import_]: its arguments checked, then
    `import_lines` over the lines of ``source``."""
    tenant = _entity_arg("entity_id", entity_id)
    process = _entity_arg("process_id", process_id)
    shown = progress_arg(progress)
    with opened(source, "r") as stream:
        return import_lines(
            store,
            embedder,
            stream,
            entity_id=tenant,
            process_id=process,
            batch_size=batch_size,
            progress=shown,
        )
