"""The store builder of ``scale.py``: stores of N memories, built once and cached.

How a store is built and cached is told in ``scale.py``'s docstring. This module also
runs the benchmark's fresh child processes (:func:`run_child`), since a build is one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from _synth import UserStream

DIMENSION = 384
RESULT = "SCALE-RESULT "
#: The script every child process runs (``scale.py --child KIND SPEC``).
SCRIPT = Path(__file__).resolve().parent / "scale.py"


# -- the plan ------------------------------------------------------------------------------
def entity_name(index: int, namespace: str) -> str:
    """The entity id of the ``index``-th entity of a store."""
    return f"{namespace}user-{index:04d}"


def entity_sizes(size: int, per_entity: int) -> list[int]:
    """How many memories each entity of a store of ``size`` holds (the last takes the rest)."""
    full, rest = divmod(size, per_entity)
    return [per_entity] * full + ([rest] if rest else [])


def memory_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    """The backend arguments every ``Memory(...)`` of the run gets."""
    return {k: spec[k] for k in ("chroma_url", "postgres_url") if spec.get(k)}


def open_memory(path: str, spec: dict[str, Any], *, hashing: bool = True) -> Any:
    """``Memory(path, ...)`` with the run's backend (and the hashing embedder unless told)."""
    from memtrellis import Memory
    from memtrellis.testing import HashingEmbedder

    embedder = {"embedder": HashingEmbedder(DIMENSION)} if hashing else {}
    return Memory(path, **embedder, **memory_kwargs(spec))


# -- building ------------------------------------------------------------------------------
def prepare_entity(job: tuple[str, str, int, int]) -> tuple[str, list[Any], list[list[float]]]:
    """One entity's fast-mode memories and their vectors (run in a helper process).

    ``job`` is (entity id, namespace, memories, seed). Fast-mode extraction of the whole
    conversation, with each session's people and places as its memories' ``entities``
    (what an extracting model would tag), embedded with the hashing embedder.
    """
    from memtrellis import Scope
    from memtrellis.extraction import Extractor
    from memtrellis.testing import HashingEmbedder

    entity_id, namespace, count, seed = job
    messages = UserStream(entity_id.removeprefix(namespace), seed=seed).take(count)
    conversation = [m.as_dict() for m in messages]
    items = Extractor().extract(conversation, Scope(entity_id=entity_id), mode="fast").items
    tags = {m.id: list(m.entities) for m in messages}
    for item in items:
        item.entities = tags[item.sources[0].message_id]
    vectors = HashingEmbedder(DIMENSION).embed_documents([item.search_text() for item in items])
    return entity_id, items, vectors


def write_entity(memory: Any, items: list[Any], vectors: list[list[float]]) -> None:
    """Store one entity's prepared memories in one bulk write (one log append, one upsert).

    The only code here below the public ``Memory`` API: ``Store.put`` commits one entity's
    shard (one log append, its keyword index and one Chroma upsert), in either mode.
    """
    from memtrellis._engine.writer import conversation_edges
    from memtrellis.testing import store_of

    edges = conversation_edges(items)
    store_of(memory).put(items, vectors, "created", {"mode": "fast"}, edges=edges)


def prepared(jobs: list[tuple[str, str, int, int]], workers: int) -> Iterator[Any]:
    """``prepare_entity`` of each job in order: in ``workers`` helper processes (at most
    two entities ahead each, so memory stays bounded) or in this one with 0."""
    if workers < 1:
        yield from map(prepare_entity, jobs)
        return
    # spawn: this process already runs Chroma's threads, which a fork would not carry over
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        window: deque[Future[Any]] = deque()
        for job in jobs:
            window.append(pool.submit(prepare_entity, job))
            if len(window) > 2 * workers:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def build_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Write entities ``spec["first"]:`` of a store (in a process of its own)."""
    sizes = entity_sizes(spec["size"], spec["per_entity"])
    namespace = spec["namespace"]
    jobs = [
        (entity_name(index, namespace), namespace, sizes[index], spec["seed"])
        for index in range(spec["first"], len(sizes))
    ]
    memory = open_memory(spec["path"], spec)
    written, started, last = 0, time.perf_counter(), time.perf_counter()
    try:
        if spec["builder"] == "add":  # the public API: one call an entity, no session tags
            for entity_id, _, count, seed in jobs:
                stream = UserStream(entity_id.removeprefix(namespace), seed=seed)
                turns = [m.as_dict() for m in stream.take(count)]
                written += len(memory.add(turns, entity_id=entity_id, mode="fast"))
        else:
            for number, (_, items, vectors) in enumerate(prepared(jobs, spec["workers"])):
                write_entity(memory, items, vectors)
                written += len(items)
                if time.perf_counter() - last > 15:
                    last = time.perf_counter()
                    rate = written / (last - started)
                    done = spec["first"] + number + 1
                    print(f"  {done}/{len(sizes)} entities, {rate:,.0f} memories/s", flush=True)
        closing = time.perf_counter()
    finally:
        memory.close()
    seconds = time.perf_counter() - started
    return {
        "written": written,
        "build_s": round(seconds, 2),
        "close_s": round(time.perf_counter() - closing, 2),
        "memories_per_s": round(written / seconds, 1) if seconds else None,
        "per_entity_s": round(seconds / max(1, len(jobs)), 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "workers": spec["workers"],
    }


def store_key(size: int, args: argparse.Namespace) -> str:
    """The cache name of a store: its settings and the store schema that wrote it."""
    from memtrellis.store import SCHEMA_VERSION

    backend = "embedded" if not (args.chroma_url or args.postgres_url) else "server"
    settings = f"{args.per_entity}x-s{args.seed}-h{DIMENSION}-{args.builder}-{backend}"
    return f"scale-{size}-{settings}-v{SCHEMA_VERSION}"


def cached_sizes(cache: Path, args: argparse.Namespace) -> list[int]:
    """Sizes of the finished stores of this run's settings under ``cache``."""
    sizes = []
    for note in cache.glob("scale-*.json"):
        size = note.name.split("-")[1]
        if size.isdigit() and note.name == f"{store_key(int(size), args)}.json":
            sizes.append(int(size))
    return sizes


def ensure_store(size: int, args: argparse.Namespace, cache: Path) -> tuple[Path, dict[str, Any]]:
    """The cached store of ``size`` memories, built (or extended from a smaller one) if need be."""
    path, note = cache / store_key(size, args), cache / f"{store_key(size, args)}.json"
    if note.is_file() and path.is_dir():
        info = json.loads(note.read_text())
        print(f"{size:,} memories: cached at {path}", flush=True)
        return path, {**info, "cached": True}
    shutil.rmtree(path, ignore_errors=True)
    first, copied_s, source = 0, 0.0, None
    if not args.namespace:  # a server's collections cannot be copied with the directory
        for smaller in sorted(cached_sizes(cache, args), reverse=True):
            base = cache / store_key(smaller, args)
            if smaller < size and smaller % args.per_entity == 0 and base.is_dir():
                started = time.perf_counter()
                shutil.copytree(base, path)
                copied_s, source = time.perf_counter() - started, smaller
                first = smaller // args.per_entity
                break
    print(
        f"{size:,} memories: building {len(entity_sizes(size, args.per_entity)) - first} "
        f"entities" + (f" on a copy of the {source:,} store" if source else ""),
        flush=True,
    )
    spec = {
        **spec_base(args),
        "path": str(path),
        "size": size,
        "first": first,
        "namespace": args.namespace.format(size=size),
    }
    info = run_child("build", spec)
    info.update(memories=size, extended_from=source, copy_s=round(copied_s, 2))
    note.write_text(json.dumps(info, indent=2) + "\n")
    print(
        f"  built: {info['written']:,} memories in {info['build_s']:.1f} s "
        f"({info['memories_per_s']:,.0f}/s, {info['per_entity_s']:.3f} s an entity)",
        flush=True,
    )
    return path, {**info, "cached": False}


def peak_rss_mb() -> float:
    """The peak resident set of this process (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def spec_base(args: argparse.Namespace) -> dict[str, Any]:
    """What every child process of the run is told of its options."""
    return {
        "per_entity": args.per_entity,
        "seed": args.seed,
        "builder": args.builder,
        "workers": args.build_workers,
        "chroma_url": args.chroma_url,
        "postgres_url": args.postgres_url,
    }


def run_child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``kind`` ("build", "measure", ...) in a fresh process of ``scale.py``; its figures."""
    command = [sys.executable, str(SCRIPT), "--child", kind, json.dumps(spec)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    for line in done.stdout.splitlines():
        if not line.startswith(RESULT):
            print(line, flush=True)
    if done.returncode != 0 or not lines:
        sys.exit(f"the {kind} process failed (exit {done.returncode}); see its output above")
    figures: dict[str, Any] = json.loads(lines[-1].removeprefix(RESULT))
    return figures
