"""Builds a store with release 0.1 of memtrellis (run with the 0.1 sources on PYTHONPATH).

``python tests/v01_store_builder.py full STORE OUT.json`` writes a store that uses every
part of the 0.1 layout and records, in ``OUT.json``, what each entity holds as the 0.1 API
reports it (memories, histories, versions, edges). It then leaves four changes pending:
the vector index refuses a metadata-only update, a delete and the forgetting of an
entity (the log holds them without their ``ok``), and the process kills itself with
SIGKILL in the middle of the vector write of a new memory, after its log record was made
durable and before its ``ok``.

``python tests/v01_store_builder.py many STORE OUT.json ENTITIES PER_ENTITY`` writes
many small entities in batches through the 0.1 ``Store.put`` (a store of many users).

``python tests/v01_store_builder.py check STORE OUT.json`` opens a store with 0.1 and
records what it holds the same way.

``python tests/v01_store_builder.py bulk STORE OUT.json MEMORIES`` writes a plain store
of about ``MEMORIES`` fast-mode memories (conversations of 50 messages over entities of
500 memories) and closes it cleanly, for timing the migration.

Only the 0.1 API is used (``Memory``, ``memory.store``, ``update``, ``forget``, ``recall``,
``capture``; typed edges that need an LLM judge through the 0.1 ``Store.add_edge``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import memtrellis
from memtrellis import Memory
from memtrellis.testing import HashingEmbedder
from memtrellis.types import EdgeKind, MemoryItem, MemoryType, Scope, utcnow

SOURCES = os.environ.get("V01_SOURCES", "")
#: ``full`` against a Chroma server: the 0.1 ``chroma_url=`` mode, entity ids prefixed so
#: that they never meet another test's collections on a shared server.
CHROMA_URL = os.environ.get("V01_CHROMA_URL") or None
P = os.environ.get("V01_PREFIX", "")


def _check_sources() -> None:
    where = Path(memtrellis.__file__).resolve()
    if SOURCES and not where.is_relative_to(Path(SOURCES).resolve()):
        raise SystemExit(f"memtrellis was imported from {where}, not from {SOURCES}")


def conversation(speakers: tuple[str, str], lines: list[str], start: int = 0) -> list[Any]:
    """A chat as message dicts, alternating speakers, with ids and timestamps."""
    base = utcnow() - timedelta(days=30)
    return [
        {
            "role": "user" if n % 2 == 0 else "assistant",
            "content": text,
            "name": speakers[n % 2],
            "id": f"msg-{start + n}",
            "timestamp": (base + timedelta(minutes=start + n)).isoformat(),
        }
        for n, text in enumerate(lines)
    ]


def snapshot(memory: Memory, entities: list[str]) -> dict[str, Any]:
    """What every entity holds, read through the 0.1 API (plus its graph's edges)."""
    graph = memory._store.graph
    out: dict[str, Any] = {}
    for entity in entities:
        ids = [i.id for i in memory.list(entity_id=entity, limit=10**9)]
        own = set(ids)
        edges = sorted([s, t, k] for s, t, k in graph.g.edges(keys=True) if s in own or t in own)
        out[entity] = {
            "ids": ids,
            "items": {i: memory.get(i, entity_id=entity).model_dump(mode="json") for i in ids},
            "history": {
                i: [e.model_dump(mode="json") for e in memory.history(i, entity_id=entity)]
                for i in ids
            },
            "versions": {i: [v.id for v in memory.versions(i, entity_id=entity)] for i in ids},
            "edges": edges,
            "entity_names": graph.entity_names(entity),
        }
    return out


def write_json(path: str, data: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True))


def session_one(memory: Memory) -> dict[str, str]:
    """Conversations, facts, a supersession, a merge, typed edges, forgets, recalls."""
    chat = [
        "I moved to Porto last spring",
        "How do you like Porto?",
        "I love the river and the bookshops",
        "Do you still work at the clinic?",
        "Yes, I am a nurse at the children's hospital",
        "That sounds rewarding",
    ]
    talk = memory.add(
        conversation(("Alice", "Bot"), chat), entity_id=P + "alice", session_id="s1", mode="fast"
    )
    memory.add(
        conversation(
            ("Alice", "Bot"), ["My daughter Mia starts school in September", "Great!"], 10
        ),
        entity_id=P + "alice",
        session_id="s2",
        mode="fast",
    )
    [lyon] = memory.add("Alice lives in Lyon", entity_id=P + "alice", memory_type="fact")
    memory.add("Alice moved to Porto", entity_id=P + "alice", memory_type="fact")  # supersedes
    memory.add("Alice is allergic to peanuts", entity_id=P + "alice", memory_type="fact")
    memory.add("Alice is allergic to peanuts", entity_id=P + "alice", memory_type="fact")  # merged
    ids: dict[str, str] = {"lyon": lyon.id, "talk": talk[2].id}
    fact = memory.store(
        MemoryItem(
            id="bob-vegan",
            text="Bob is vegan",
            scope=Scope(entity_id=P + "bob", process_id="kitchen", session_id="k1"),
            memory_type=MemoryType.FACT,
            key="diet",
            tags=["food", "health"],
            entities=["Bob"],
            confidence=0.9,
            metadata={"source": "form", "nested": {"a": [1, 2]}},
        )
    )
    # The first memory to name an entity gives its node the display name; that name stays
    # after the memory is forgotten while others still mention the entity.
    first = memory.store(
        MemoryItem(
            text="Bob had his first COFFEE in Rome",
            scope=Scope(entity_id=P + "bob"),
            entities=["COFFEE"],
        ),
        lifecycle=False,
    )
    pref = memory.store(
        MemoryItem(
            text="Bob prefers oat milk in his coffee",
            scope=Scope(entity_id=P + "bob"),
            memory_type=MemoryType.PREFERENCE,
            entities=["Bob", "oat milk"],
            valid_until=utcnow() + timedelta(days=365),
        )
    )
    note = memory.store(
        MemoryItem(
            text="Bob runs a cafe near the station",
            scope=Scope(entity_id=P + "bob"),
            entities=["coffee"],
        ),
        lifecycle=False,
    )
    memory._store.add_edge(pref.id, fact.id, EdgeKind.SUPPORTS)
    memory._store.add_edge(note.id, pref.id, EdgeKind.EXTENDS)
    memory._store.add_edge(note.id, fact.id, EdgeKind.CONTRADICTS)
    memory.update(note.id, entity_id=P + "bob", text="Bob runs a small cafe near the station")
    memory.update(pref.id, entity_id=P + "bob", tags=["drinks"])
    memory.add(
        conversation(("Bob", "Bot"), ["I opened the cafe in 2019", "Busy?", "Very busy"]),
        entity_id=P + "bob",
        mode="fast",
    )
    memory.add("Bob lives in Leeds", entity_id=P + "bob", memory_type="fact")
    memory.add("Bob moved to York", entity_id=P + "bob", memory_type="fact")
    memory.add("Bob now lives in Bath", entity_id=P + "bob", memory_type="fact")
    gone = memory.add("Bob used to smoke", entity_id=P + "bob", memory_type="fact")
    memory.forget(gone[0].id, entity_id=P + "bob")
    memory.forget(first.id, entity_id=P + "bob")
    odd = P + "Ana Lima/2:x%y"  # needs escaping in entity node ids, collection and shard names
    memory.add(
        conversation(("Ana", "Bot"), ["Ana teaches maths", "Where?", "At a school in Braga"]),
        entity_id=odd,
        mode="fast",
    )
    memory.store(
        MemoryItem(
            text="Ana speaks Portuguese and French",
            scope=Scope(entity_id=odd),
            entities=["Portuguese", "French"],
        )
    )
    memory.add("Dave keeps bees", entity_id=P + "dave", memory_type="fact")
    memory.forget(entity_id=P + "dave")
    memory.add("Erin plays the cello", entity_id=P + "erin", memory_type="fact")
    memory.add("Erin lives in Oslo", entity_id=P + "erin", memory_type="fact")
    for question, entity in (("Where does Alice live?", P + "alice"), ("coffee", P + "bob")):
        for _ in range(3):
            memory.recall(question, entity_id=entity)
    memory.capture("Carol likes hiking in the Alps", entity_id=P + "carol", mode="fast")
    memory.flush(timeout=60)
    ids.update(note=note.id, pref=pref.id, fact=fact.id)
    return ids


def full(store: str, out: str) -> None:
    embedder = HashingEmbedder()
    entities = [P + e for e in ("alice", "bob", "Ana Lima/2:x%y", "carol", "erin")]
    with Memory(store, entity_id=P + "alice", embedder=embedder, chroma_url=CHROMA_URL) as memory:
        ids = session_one(memory)
        clean = snapshot(memory, entities)
    # Session two: changes logged (with their ok) after the snapshot, recall counts in the
    # log, then changes the vector index never received.
    memory = Memory(store, entity_id=P + "alice", embedder=embedder, chroma_url=CHROMA_URL)
    memory.add(
        conversation(("Alice", "Bot"), ["We went to the beach on Sunday", "Nice"], 20),
        entity_id=P + "alice",
        mode="fast",
    )
    memory.recall("beach", entity_id=P + "alice")
    memory.recall("Porto", entity_id=P + "alice")
    memory.update(ids["fact"], entity_id=P + "bob", confidence=0.95)  # logged with its ok
    vectors = memory._store.vectors

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("index unavailable")

    vectors.update_metadata = refuse  # type: ignore[method-assign]
    vectors.delete = refuse  # type: ignore[method-assign]
    vectors.drop_entity = refuse  # type: ignore[method-assign]
    memory.recall("cafe", entity_id=P + "bob")
    memory.update(ids["pref"], entity_id=P + "bob", tags=["drinks", "morning"])  # pending, no embed
    memory.forget(ids["talk"], entity_id=P + "alice")  # pending del, inside a conversation
    memory.forget(entity_id=P + "erin")  # pending drop
    entities.remove(P + "erin")

    def die(*args: Any, **kwargs: Any) -> None:
        # Inside the vector write of the new memory: its log record is durable, no ok.
        assert not memory._store._touches
        write_json(
            out,
            {
                "entities": snapshot(memory, entities),
                "clean": clean,
                "forgotten": [P + "dave", P + "erin"],
                "pending": {
                    "put": "carol-pending",
                    "meta": ids["pref"],
                    "del": ids["talk"],
                    "drop": P + "erin",
                    "put_entity": P + "carol",
                },
                "pending_count": memory._store.pending_count,
                "dimension": embedder.dimension,
                "prefix": P,
            },
        )
        os.kill(os.getpid(), signal.SIGKILL)

    vectors.upsert = die  # type: ignore[method-assign]
    memory.store(
        MemoryItem(
            id="carol-pending",
            text="Carol's brother Tom lives in Faro",
            scope=Scope(entity_id=P + "carol"),
            entities=["Tom", "Faro"],
        ),
        lifecycle=False,
    )
    raise SystemExit("the pending write did not reach the vector index")


def bulk(store: str, out: str, memories: int) -> None:
    embedder = HashingEmbedder()
    per_entity, per_chat = 500, 50
    entities = [f"user-{n:04d}" for n in range(max(1, memories // per_entity))]
    words = [
        "river",
        "book",
        "school",
        "coffee",
        "garden",
        "music",
        "train",
        "city",
        "winter",
        "market",
    ]
    with Memory(store, embedder=embedder) as memory:
        for number, entity in enumerate(entities):
            for chat in range(per_entity // per_chat):
                lines = [
                    f"{entity} note {chat}-{m} about {words[(number + chat + m) % len(words)]}"
                    f" and {words[(number * 7 + m) % len(words)]}"
                    for m in range(per_chat)
                ]
                memory.add(
                    conversation((entity, "Bot"), lines, chat * per_chat),
                    entity_id=entity,
                    mode="fast",
                )
        counts = {e: len(memory._store.graph.tenant_ids(e)) for e in entities}
    write_json(out, {"counts": counts, "dimension": embedder.dimension})


def many(store: str, out: str, entities: int, per_entity: int) -> None:
    """Many small entities, stored in batches through the 0.1 ``Store.put``."""
    embedder = HashingEmbedder()
    counts: dict[str, int] = {}
    with Memory(store, embedder=embedder) as memory:
        batch: list[MemoryItem] = []
        for number in range(entities):
            entity = f"user-{number:05d}"
            counts[entity] = per_entity
            for m in range(per_entity):
                batch.append(
                    MemoryItem(
                        text=f"{entity} said note {m} about topic {m % 7}",
                        scope=Scope(entity_id=entity),
                        entities=[f"topic {m % 7}"],
                    )
                )
            if len(batch) >= 2000 or number == entities - 1:
                vectors = embedder.embed_documents([i.search_text() for i in batch])
                memory._store.put(batch, vectors, "created")
                batch = []
    write_json(out, {"counts": counts, "dimension": embedder.dimension})


def check(store: str, out: str) -> None:
    """Open a store with 0.1 and record what it holds (then close it, as 0.1 does)."""
    with Memory(store, embedder=HashingEmbedder()) as memory:
        write_json(out, {"entities": snapshot(memory, memory._store.graph.tenants())})


def main() -> None:
    _check_sources()
    kind, store, out = sys.argv[1:4]
    if kind == "full":
        full(store, out)
    elif kind == "check":
        check(store, out)
    elif kind == "many":
        many(store, out, int(sys.argv[4]), int(sys.argv[5]))
    else:
        bulk(store, out, int(sys.argv[4]))


if __name__ == "__main__":
    main()
