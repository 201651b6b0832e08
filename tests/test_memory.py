"""The Memory facade: every public method, sync and async, on a real embedded Chroma."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtrellis import (
    EmbeddingMismatchError,
    InvalidInputError,
    Memory,
    MemoryItem,
    MemoryNotFoundError,
    MemoryType,
    Scope,
    StoreClosedError,
)
from memtrellis.store.shardfiles import shard_dir
from memtrellis.testing import HashingEmbedder, store_of

CHAT = [
    {
        "role": "user",
        "content": "My sister Clara lives in Lisbon.",
        "id": "m1",
        "timestamp": "2026-03-01T10:00:00Z",
        "name": "Alice",
    },
    {
        "role": "assistant",
        "content": "Lisbon is lovely in spring.",
        "id": "m2",
        "timestamp": "2026-03-01T10:00:05Z",
    },
    {
        "role": "user",
        "content": "I am allergic to peanuts.",
        "id": "m3",
        "timestamp": "2026-03-01T10:01:00Z",
    },
]


def test_add_messages_keeps_sources(memory: Memory) -> None:
    items = memory.add(CHAT)
    assert [i.text for i in items] == [m["content"] for m in CHAT]
    first = items[0]
    assert first.memory_type is MemoryType.EPISODE
    src = first.sources[0]
    assert (src.message_id, src.role, src.speaker) == ("m1", "user", "Alice")
    assert src.timestamp == datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)
    assert first.scope == Scope(entity_id="alice")
    assert memory.get(first.id) == first


def test_add_text_and_single_message(memory: Memory) -> None:
    [fact] = memory.add("Alice works at Acme", tags=["work"], entities=["Acme"])
    assert fact.memory_type is MemoryType.FACT
    assert fact.tags == ["work", "mode:fast"] and fact.entities == ["Acme"]
    [episode] = memory.add(
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi there"}, {"type": "image_url", "url": "x"}],
        }
    )
    assert episode.text == "hi there\n[image]"  # the image part is kept as an attachment
    assert [a.url for a in episode.sources[0].attachments] == ["x"]


def test_add_skips_unknown_roles_and_counts_them(memory: Memory) -> None:
    items = memory.add(
        [
            {"role": "robot", "content": "beep"},
            {"role": "user", "content": ""},
            {"role": "user", "content": "kept"},
        ]
    )
    assert [i.text for i in items] == ["kept"]
    assert memory.health().skipped_inputs == 2


@pytest.mark.parametrize(
    "bad",
    [None, 42, b"bytes", [], [42], "   ", {"role": "user", "content": "x", "timestamp": "soon"}],
)
def test_add_rejects_bad_input_with_typed_error(memory: Memory, bad: object) -> None:
    before = memory.health().total_memories
    with pytest.raises(InvalidInputError):
        memory.add(bad)  # type: ignore[arg-type]
    assert memory.health().total_memories == before


def test_bad_scope_and_memory_type(memory: Memory) -> None:
    with pytest.raises(InvalidInputError):
        memory.add("x", entity_id="")
    with pytest.raises(InvalidInputError):
        memory.add("x", entity_id="bad\x00id")
    with pytest.raises(InvalidInputError):
        memory.add("x", memory_type="gossip")


def test_recall_hybrid_with_explanations(memory: Memory) -> None:
    memory.add(CHAT)
    memory.add(["The quarterly report is due on 14 March.", "Bob likes jazz."])
    result = memory.recall("where does my sister live?", k=3)
    top = result.items[0]
    assert top.memory.text == "My sister Clara lives in Lisbon."
    assert top.explanation.dense_score is not None
    assert top.explanation.keyword_score is not None and top.explanation.keyword_score > 0
    assert top.score == top.explanation.final_score > 0
    assert result.tokens > 0 and not result.truncated
    assert len(result.items) <= 3


def test_recall_updates_recall_count(memory: Memory) -> None:
    [item] = memory.add("Peanut allergy noted")
    memory.recall("peanut allergy")
    memory.recall("peanut allergy")
    got = memory.get(item.id)
    assert got.recall_count == 2 and got.last_recalled_at is not None


def test_recall_token_budget_stops_before_exceeding(memory: Memory) -> None:
    # Episodes: thirty notes that differ only in their numbers would supersede each other
    # as facts (a changed value); this test is about the budget.
    notes = [f"Project note {i}: the widget ships in week {i}" for i in range(30)]
    memory.add(notes, memory_type="episode")
    full = memory.recall("widget ships", k=30)
    assert full.tokens > 60
    small = memory.recall("widget ships", k=30, token_budget=60)
    assert small.truncated and 0 < small.tokens <= 60
    assert len(small.items) < len(full.items)
    assert memory.recall("widget ships", k=30, token_budget=0).items == []
    # a flag is not a budget (True would read as 1 token), nor is a count of the wrong type
    for budget in (True, False, -1, 1.5, "60"):
        with pytest.raises(InvalidInputError, match="token_budget"):
            memory.recall("widget ships", token_budget=budget)  # type: ignore[arg-type]


def test_entity_hop_reaches_what_no_search_found(memory: Memory) -> None:
    from memtrellis.recall import RecallRequest, hybrid_recall
    from memtrellis.types import utcnow

    [band] = memory.add("Clara's favourite band is Radiohead", entities=["Clara"])
    [job] = memory.add("Clara is a nurse in Porto", entities=["Clara"])
    memory.add([f"favourite band number {i} radiohead" for i in range(12)])
    query = "favourite band radiohead"
    request = RecallRequest(
        query=query,
        embedding=memory.embedder.embed_query(query),
        entity_id="alice",
        process_id=None,
        session_id=None,
        k=20,
        token_budget=None,
        include_superseded=False,
        include_expired=False,
        now=utcnow(),
        fetch=8,  # twelve closer fillers keep the job out of both searches
    )
    items, _, _, _ = hybrid_recall(store_of(memory), request)
    reached = {r.memory.id: r for r in items}
    why = reached[job.id].explanation
    assert why.graph_path == [band.id, "subject:alice:clara", job.id]
    assert why.dense_score is None and why.keyword_score is None
    off, _, _, _ = hybrid_recall(store_of(memory), replace(request, graph_context=False))
    assert job.id not in {r.memory.id for r in off}


def test_entity_hop_leaves_found_memories_alone(memory: Memory) -> None:
    # Both found by the searches: sharing an entity with the best hit adds nothing, so a
    # weak match is not lifted above a stronger one by its entity.
    [band] = memory.add("Clara's favourite band is Radiohead", entities=["Clara"])
    [job] = memory.add("Clara is a nurse in Porto", entities=["Clara"])
    [song] = memory.add("Radiohead played a favourite song")
    result = memory.recall("favourite band radiohead", k=3)
    by_id = {r.memory.id: r for r in result.items}
    assert by_id[job.id].explanation.graph_path == []
    assert by_id[job.id].explanation.relevance == by_id[job.id].explanation.fused_score
    assert [r.memory.id for r in result.items][:2] == [band.id, song.id]


def test_recall_excludes_expired_and_superseded_unless_asked(memory: Memory) -> None:
    past = datetime.now(timezone.utc) - timedelta(days=1)
    [old] = memory.add("Office is on floor 3", memory_type="fact")
    memory.update(old.id, valid_from=past - timedelta(days=10), valid_until=past)
    [new] = memory.add("Office is on floor 5", memory_type="fact")
    assert memory.get(old.id).superseded_by == new.id  # a changed number: superseded
    assert memory.get(old.id).valid_until == past  # its own end, not lengthened
    assert [r.memory.id for r in memory.recall("office floor").items] == [new.id]
    both = memory.recall("office floor", include_superseded=True, include_expired=True)
    assert {r.memory.id for r in both.items} == {old.id, new.id}
    [note] = memory.add("Parking pass expired", memory_type="fact")
    memory.update(note.id, valid_from=past - timedelta(days=3), valid_until=past)
    assert note.id not in {r.memory.id for r in memory.recall("parking pass").items}
    assert note.id in {r.memory.id for r in memory.recall("parking", include_expired=True).items}
    memory.update(new.id, metadata={"note": "x"})
    assert (
        memory.recall("office floor", as_of=past - timedelta(days=1)).items[0].memory.id == old.id
    )


def test_list_paging_and_filters(memory: Memory) -> None:
    memory.add([f"note {i}" for i in range(5)], tags=["n"])
    memory.add("a decision", memory_type="decision")
    everything = memory.list()
    assert len(everything) == 6
    assert memory.list(limit=2, offset=1) == everything[1:3]
    assert [i.text for i in memory.list(filters={"memory_type": "decision"})] == ["a decision"]
    assert len(memory.list(filters={"tags": ["n"]})) == 5
    with pytest.raises(InvalidInputError):
        memory.list(filters={"colour": "red"})
    with pytest.raises(InvalidInputError):
        memory.list(limit=-1)


def test_update_and_history(memory: Memory) -> None:
    [item] = memory.add("Alice drinks tea")
    updated = memory.update(item.id, text="Alice drinks coffee", confidence=0.9)
    assert updated.text == "Alice drinks coffee" and updated.updated_at is not None
    assert memory.recall("coffee").items[0].memory.id == item.id
    assert [e.action for e in memory.history(item.id)] == ["created", "updated"]
    assert memory.history(item.id)[1].detail == {"fields": ["confidence", "text"]}
    with pytest.raises(InvalidInputError):
        memory.update(item.id, confidence=2.0)
    with pytest.raises(TypeError):
        memory.update(item.id, colour="red")  # type: ignore[call-arg]
    assert memory.get(item.id).confidence == 0.9


def test_forget_one_and_whole_entity(memory: Memory) -> None:
    [a, b] = memory.add(["first", "second"])
    memory.add("bob's", entity_id="bob")
    assert memory.forget(a.id) == 1
    with pytest.raises(MemoryNotFoundError):
        memory.get(a.id)
    assert [r.memory.id for r in memory.recall("first second").items] == [b.id]
    assert memory.forget(entity_id="alice") == 1
    assert memory.list() == [] and memory.recall("second").items == []
    assert len(memory.list(entity_id="bob")) == 1
    with pytest.raises(InvalidInputError):
        memory.forget()


def test_store_ready_made_item(memory: Memory) -> None:
    item = MemoryItem(
        id="fact-1",
        text="Bob is vegan",
        scope=Scope(entity_id="bob"),
        memory_type=MemoryType.PREFERENCE,
        confidence=0.95,
    )
    stored = memory.store(item)
    assert memory.get("fact-1", entity_id="bob") == stored
    with pytest.raises(MemoryNotFoundError):
        memory.get("fact-1")  # default entity is alice
    # Ids are per entity (each has its own shard and collection): another entity's item
    # with the same id is its own memory and leaves Bob's untouched.
    memory.store(MemoryItem(id="fact-1", text="hijack", scope=Scope(entity_id="eve")))
    assert memory.get("fact-1", entity_id="bob").text == "Bob is vegan"
    assert memory.get("fact-1", entity_id="eve").text == "hijack"
    assert [r.memory.text for r in memory.recall("hijack", entity_id="bob").items] == [
        "Bob is vegan"
    ]
    with pytest.raises(InvalidInputError):
        memory.store("not an item")  # type: ignore[arg-type]


def test_isolation_between_entities(memory: Memory) -> None:
    [secret] = memory.add("Bob's bank PIN hint is his dog", entity_id="bob")
    memory.add("Alice likes dogs")
    assert all(r.memory.scope.entity_id == "alice" for r in memory.recall("dog PIN bank").items)
    assert all(i.scope.entity_id == "alice" for i in memory.list())
    for call in (memory.get, memory.history, memory.forget):
        with pytest.raises(MemoryNotFoundError):
            call(secret.id)
    with pytest.raises(MemoryNotFoundError):
        memory.update(secret.id, text="changed")
    assert memory.get(secret.id, entity_id="bob").text == secret.text


def test_process_filter(store_path: Path) -> None:
    with Memory(store_path, entity_id="u", process_id="bot-a", embedder=HashingEmbedder()) as m:
        m.add("tea from bot a")
        m.add("tea from bot b", process_id="bot-b")
        assert [r.memory.text for r in m.recall("tea").items] == ["tea from bot a"]
        assert len(m.recall("tea", process_id="bot-b").items) == 1
        assert len(m.list()) == 1


def test_persistence_round_trip(store_path: Path) -> None:
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        m.add(CHAT)
        before = m.recall("sister lisbon")
        listed = m.list()
    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        after = m.recall("sister lisbon")
        assert [r.memory.id for r in after.items] == [r.memory.id for r in before.items]
        relevance = [r.explanation.relevance for r in after.items]
        assert relevance == [r.explanation.relevance for r in before.items]
        assert all(r.explanation.heat > 1.0 for r in after.items)  # recalled once before
        assert [i.id for i in m.list()] == [i.id for i in listed]
        assert m.get(listed[0].id).recall_count == 2  # one recall per session survived


def test_graph_file_is_plain_node_link_json(store_path: Path) -> None:
    import networkx as nx

    with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        [item] = m.add("Clara lives in Lisbon", entities=["Clara"])
    data = json.loads((shard_dir(store_path, "alice") / "graph.json").read_text())
    graph = nx.node_link_graph(data, edges="edges")
    assert graph.has_edge(item.id, "subject:alice:clara")
    assert graph.nodes[item.id]["item"]["text"] == "Clara lives in Lisbon"


def test_embedder_mismatch_refuses_to_open(store_path: Path) -> None:
    Memory(store_path, embedder=HashingEmbedder(dimension=64)).close()
    with pytest.raises(EmbeddingMismatchError, match="hashing-64"):
        Memory(store_path, embedder=HashingEmbedder(dimension=32))


def test_closed_memory_raises(store_path: Path) -> None:
    m = Memory(store_path, embedder=HashingEmbedder())
    m.close()
    m.close()  # idempotent
    with pytest.raises(StoreClosedError):
        m.add("late")


def test_health_figures(memory: Memory) -> None:
    [a, _] = memory.add(["Clara lives in Lisbon", "Clara likes fado"], entities=["Clara"])
    memory.update(
        a.id,
        valid_until=datetime.now(timezone.utc) - timedelta(seconds=1),
        valid_from=datetime.now(timezone.utc) - timedelta(days=1),
    )
    memory.recall("Clara")
    health = memory.health()
    assert health.total_memories == 2 and health.expired == 1 and health.active_memories == 1
    assert health.subjects == 1 and health.edges_by_kind["mentions"] == 2
    assert health.recalls == 1 and health.recall_latency_p95_ms > 0
    assert health.size_on_disk_bytes > 0 and health.vector_backend == "embedded"


def test_adapter_failures_are_counted_in_health_by_kind_and_source(memory: Memory) -> None:
    health = memory.health()
    assert (health.adapter_recall_failures, health.adapter_capture_failures) == (0, 0)
    assert health.adapter_context_failures == 0 and health.adapter_failures == {}
    memory.report_failure("recall", source="langchain", error=TimeoutError("slow store"))
    memory.report_failure("recall", source="llama_index")
    memory.report_failure("capture", source="langchain", error=RuntimeError("spool full"))
    memory.report_failure("context", source="mine")
    health = memory.health()
    assert health.adapter_recall_failures == 2 and health.adapter_capture_failures == 1
    assert health.adapter_context_failures == 1
    assert health.adapter_failures == {
        "langchain.capture": 1,
        "langchain.recall": 1,
        "llama_index.recall": 1,
        "mine.context": 1,
    }
    assert health.client_recall_failures == 0  # SDK clients keep their own figures


@pytest.mark.parametrize(
    ("what", "source", "error", "key"),
    [
        ("explode", "mine", None, "mine.other"),
        (None, "mine", None, "mine.other"),
        (["recall"], "mine", None, "mine.other"),
        ("recall", None, None, "unknown.recall"),
        ("recall", "  ", None, "unknown.recall"),
        ("recall", 42, "not an exception", "unknown.recall"),
        ("capture", "x" * 500, ValueError(), "x" * 64 + ".capture"),
    ],
)
def test_report_failure_never_raises_on_odd_input(
    memory: Memory, what: object, source: object, error: object, key: str
) -> None:
    memory.report_failure(what, source=source, error=error)  # type: ignore[arg-type]
    health = memory.health()
    assert health.adapter_failures == {key: 1}
    kinds = ("recall", "capture", "context")
    assert sum(getattr(health, f"adapter_{kind}_failures") for kind in kinds) == (
        0 if key.endswith(".other") else 1
    )


def test_report_failure_is_thread_safe_bounded_and_works_after_close(store_path: Path) -> None:
    import threading

    m = Memory(store_path, embedder=HashingEmbedder())
    threads = [
        threading.Thread(
            target=lambda: [m.report_failure("recall", source="t") for _ in range(200)]
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n in range(300):  # a source per call cannot grow the figures without end
        m.report_failure("capture", source=f"s{n}")
    health = m.health()
    assert health.adapter_failures["t.recall"] == 800 and health.adapter_recall_failures == 800
    assert len(health.adapter_failures) == 257 and health.adapter_failures["other.capture"] == 45
    assert health.adapter_capture_failures == 300
    m.close()
    m.report_failure("recall", source="late")  # a failure path after close must not raise


def test_memory_default_path_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMTRELLIS_HOME", str(tmp_path / "home"))
    with Memory(embedder=HashingEmbedder()) as m:
        m.add("x")
    assert (tmp_path / "home" / "manifest.json").exists()


async def test_async_surface(store_path: Path) -> None:
    async with Memory(store_path, entity_id="alice", embedder=HashingEmbedder()) as m:
        items = await m.aadd(CHAT)
        got = await m.aget(items[0].id)
        assert got.text == CHAT[0]["content"]
        result = await m.arecall("peanuts allergy")
        assert result.items[0].memory.text == "I am allergic to peanuts."
        assert len(await m.alist()) == 3
        updated = await m.aupdate(items[1].id, tags=["travel"])
        assert updated.tags == ["travel"]
        assert [e.action for e in await m.ahistory(items[1].id)] == ["created", "updated"]
        stored = await m.astore(MemoryItem(text="x", scope=Scope(entity_id="alice")))
        assert await m.aforget(stored.id) == 1
        assert (await m.ahealth()).total_memories == 3
        assert await m.aforget(entity_id="alice") == 3


async def test_async_calls_do_not_block_the_loop(store_path: Path) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    async with Memory(store_path, embedder=HashingEmbedder()) as m:
        task = asyncio.create_task(ticker())
        await asyncio.gather(*(m.aadd(f"note {i}") for i in range(20)))
        await asyncio.gather(*(m.arecall(f"note {i}") for i in range(20)))
        task.cancel()
    assert ticks > 5


def test_adjacent_messages_are_linked_and_lend_context(memory: Memory) -> None:
    chat = [
        {"role": "user", "content": "Guess what happened at the lake yesterday?", "id": "a1"},
        {"role": "assistant", "content": "Tell me!", "id": "a2"},
        {"role": "user", "content": "I finally caught a pike, twelve pounds.", "id": "a3"},
    ]
    filler = [{"role": "user", "content": f"Unrelated chatter {i} about weather"} for i in range(8)]
    items = memory.add(chat)
    memory.add(filler)
    graph = store_of(memory).graph_of("alice").g
    assert graph.has_edge(items[1].id, items[0].id, key="follows")
    assert graph.has_edge(items[2].id, items[1].id, key="follows")
    assert not graph.has_edge(memory.list()[3].id, items[2].id, key="follows")  # new add()
    hits = {r.memory.id: r for r in memory.recall("what happened at the lake?", k=3).items}
    # the answer is in the message after the one that matches the question
    assert items[2].id in hits
    assert hits[items[2].id].explanation.graph_path[1] == "follows"


def test_speaker_is_part_of_what_is_searched(memory: Memory) -> None:
    memory.add(
        [
            {"role": "user", "content": "I painted a sunrise last week", "name": "Melanie"},
            {"role": "user", "content": "I painted a sunset last week", "name": "Caroline"},
        ]
    )
    top = memory.recall("What did Melanie paint?", k=1).items[0]
    assert top.memory.text == "I painted a sunrise last week"  # the text stays the message
    assert top.explanation.keyword_score is not None


def test_hub_entities_are_not_walked(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    import memtrellis.store.graph as graph_module

    [seed] = memory.add("Zed's favourite band is Radiohead", entities=["Zed", "Common"])
    [other] = memory.add("Zed's sister lives in Porto", entities=["Zed"])
    memory.add([f"filler {i}" for i in range(3)], entities=["Common"])
    neighbours = {o for _, o in store_of(memory).graph_of("alice").neighbours_by_subject(seed.id)}
    assert other.id in neighbours and len(neighbours) == 4
    monkeypatch.setattr(graph_module, "HUB_MENTIONS", 2)
    neighbours = {o for _, o in store_of(memory).graph_of("alice").neighbours_by_subject(seed.id)}
    assert neighbours == {other.id}  # "Common" (4 mentions) is a hub now; "Zed" (2) is not


def test_recall_with_an_invalid_session_id_is_a_typed_error(memory: Memory) -> None:
    memory.add("Alice likes tea")
    with pytest.raises(InvalidInputError, match="session_id"):
        memory.recall("tea", session_id="\x0fbad")
