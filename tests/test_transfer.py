"""Memory.export and Memory.import_: JSON lines that restore memories, history and edges."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memtrellis import InvalidInputError, Memory, MemoryItem, Scope
from memtrellis.testing import HashingEmbedder, store_of
from memtrellis.transfer import ImportReport
from memtrellis.types import EdgeKind, SourceKind, SourceRef

WHEN = datetime(2026, 1, 5, 9, 30, tzinfo=timezone.utc)


class CountingEmbedder(HashingEmbedder):
    """Counts the embedding calls (the batching of an import shows in them)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return super().embed_documents(texts)


def _memory(path: Path, **options: Any) -> Memory:
    options.setdefault("embedder", HashingEmbedder())
    return Memory(path, **options)


def _fill(memory: Memory) -> None:
    """Ana: a fast-mode conversation (follows edges), a superseded fact, an expiring state.
    Bob: one fact."""
    memory.add(
        [
            {"role": "user", "content": "I adopted a cat", "id": "c1", "timestamp": WHEN},
            {"role": "assistant", "content": "What is its name?", "id": "c2"},
            {"role": "user", "content": "Miso", "id": "c3"},
        ],
        entity_id="ana",
        session_id="s1",
        mode="fast",
        tags=["pets"],
    )
    memory.add("Ana lives in Lyon", entity_id="ana", memory_type="fact")
    memory.add("Ana moved to Porto", entity_id="ana", memory_type="fact")
    memory.store(
        MemoryItem(
            id="state-1",
            text="Ana is on holiday",
            memory_type="state",
            scope=Scope(entity_id="ana", process_id="travel-bot"),
            valid_from=WHEN,
            valid_until=WHEN + timedelta(days=7),
            confidence=0.42,
            metadata={"source": "calendar"},
            sources=[SourceRef(kind=SourceKind.DOC, document="cal.ics", content="holiday")],
        ),
        lifecycle=False,
    )
    memory.add("Bob is vegan", entity_id="bob", memory_type="preference")


def _snapshot(memory: Memory, entity_id: str) -> dict[str, Any]:
    """Everything of an entity an export must keep, by memory id."""
    graph = store_of(memory).graph_of(entity_id)
    out = {}
    for item in memory.list(entity_id=entity_id, limit=1000):
        links = {
            kind.value: sorted(graph.edges_of(item.id, kind)[0])
            for kind in EdgeKind
            if kind is not EdgeKind.MENTIONS
        }
        history = [e.model_dump() for e in memory.history(item.id, entity_id=entity_id)]
        out[item.id] = (item.model_dump(), history, links)
    return out


def test_a_round_trip_keeps_ids_provenance_history_validity_and_edges(tmp_path: Path) -> None:
    with _memory(tmp_path / "a") as source:
        _fill(source)
        before = {e: _snapshot(source, e) for e in ("ana", "bob")}
        assert source.export(tmp_path / "all.jsonl") == 7

    with _memory(tmp_path / "b") as target:
        report = target.import_(tmp_path / "all.jsonl")
        assert (report.imported, report.skipped, report.dangling_edges) == (7, [], 0)
        assert report.entities == ["ana", "bob"]
        after = {e: _snapshot(target, e) for e in ("ana", "bob")}

    for entity, memories in before.items():
        assert after[entity].keys() == memories.keys()
        for memory_id, (item, history, links) in memories.items():
            got_item, got_history, got_links = after[entity][memory_id]
            assert got_item == item
            assert got_links == links
            # The memory's own past, then the import.
            assert got_history[:-1] == history
            assert got_history[-1]["action"] == "imported"
    ana = before["ana"]
    assert sum(len(links["follows"]) for _, _, links in ana.values()) == 2
    assert sum(len(links["supersedes"]) for _, _, links in ana.values()) == 1
    assert any(item["superseded_by"] for item, _, _ in ana.values())


def test_imported_memories_are_recalled_and_superseded_ones_stay_out(tmp_path: Path) -> None:
    with _memory(tmp_path / "a") as source:
        _fill(source)
        dump = io.StringIO()
        source.export(dump, entity_id="ana")
    with _memory(tmp_path / "b", entity_id="ana") as target:
        target.import_(io.StringIO(dump.getvalue()))
        texts = [m.text for m in target.recall("where does Ana live?", k=10).memories]
    assert "Ana moved to Porto" in texts and "Ana lives in Lyon" not in texts


def test_export_of_one_entity_and_of_all(tmp_path: Path) -> None:
    with _memory(tmp_path / "a") as memory:
        _fill(memory)
        bob, everything = io.StringIO(), io.StringIO()
        assert memory.export(bob, entity_id="bob") == 1
        assert memory.export(everything) == 7
    [line] = bob.getvalue().splitlines()
    record = json.loads(line)
    assert record["memory"]["text"] == "Bob is vegan"
    assert [e["action"] for e in record["history"]] == ["created"]
    scopes = {
        json.loads(x)["memory"]["scope"]["entity_id"] for x in everything.getvalue().splitlines()
    }
    assert scopes == {"ana", "bob"}


def test_import_batches_embedding_calls_and_replaces_a_memory_it_already_has(
    tmp_path: Path,
) -> None:
    lines = [
        json.dumps({"id": f"n{n}", "text": f"note number {n}", "scope": {"entity_id": "e"}})
        for n in range(10)
    ]
    embedder = CountingEmbedder()
    with _memory(tmp_path / "a", embedder=embedder, entity_id="e") as memory:
        report = memory.import_(io.StringIO("\n".join(lines)), batch_size=4)
        assert report.imported == 10
        assert embedder.calls == [4, 4, 2]
        again = memory.import_(io.StringIO(lines[0].replace("note number 0", "note zero")))
        assert again.imported == 1
        assert memory.get("n0").text == "note zero"
        assert len(memory.list(limit=100)) == 10
        assert [e.action for e in memory.history("n0")] == ["imported", "imported"]


def test_the_same_id_twice_in_one_batch_keeps_the_later_line(tmp_path: Path) -> None:
    first = {"id": "x", "text": "first", "scope": {"entity_id": "e"}}
    second = {**first, "text": "second"}
    with _memory(tmp_path / "a", entity_id="e") as memory:
        text = json.dumps(first) + "\n" + json.dumps(second) + "\n"
        assert memory.import_(io.StringIO(text)).imported == 2
        assert [m.text for m in memory.list()] == ["second"]


def test_an_edge_to_a_later_line_is_restored_and_a_dangling_one_is_counted(
    tmp_path: Path,
) -> None:
    def line(memory_id: str, *edges: tuple[str, str]) -> str:
        item = {"id": memory_id, "text": f"memory {memory_id}", "scope": {"entity_id": "e"}}
        links = [{"kind": kind, "to": to} for kind, to in edges]
        return json.dumps({"memory": item, "history": [], "edges": links})

    text = "\n".join(
        [line("a", ("supports", "b"), ("extends", "ghost")), line("b"), line("c", ("follows", "b"))]
    )
    with _memory(tmp_path / "s", entity_id="e") as memory:
        report = memory.import_(io.StringIO(text), batch_size=1)
        graph = store_of(memory).graph_of("e")
        assert graph.edges_of("a", EdgeKind.SUPPORTS)[0] == ["b"]
        assert graph.edges_of("c", EdgeKind.FOLLOWS)[0] == ["b"]
    assert (report.edges, report.dangling_edges) == (2, 1)


def test_rescope_and_invalid_lines(tmp_path: Path) -> None:
    good = MemoryItem(id="g", text="Ines cooks paella", scope=Scope(entity_id="old"))
    text = "\n".join(
        [
            good.model_dump_json(),  # a bare MemoryItem line, as the CLI wrote before
            "{not json",
            json.dumps({"text": "x", "scope": {"entity_id": "old"}, "confidence": 7}),
            "",
            json.dumps({"memory": good.model_dump(mode="json"), "extra": 1}),
            "[1, 2]",
        ]
    )
    with _memory(tmp_path / "a") as memory:
        report = memory.import_(io.StringIO(text), entity_id="ines", process_id="kitchen")
        [item] = memory.list(entity_id="ines")
    assert (item.id, item.scope.entity_id, item.scope.process_id) == ("g", "ines", "kitchen")
    assert report.imported == 1 and not report.complete
    assert [s.line for s in report.skipped] == [2, 3, 5, 6]
    assert "confidence" in report.skipped[1].error
    assert isinstance(report, ImportReport)


def test_bad_arguments_are_typed_errors(tmp_path: Path) -> None:
    with _memory(tmp_path / "a") as memory:
        with pytest.raises(InvalidInputError, match="batch_size"):
            memory.import_(io.StringIO(""), batch_size=0)
        with pytest.raises(InvalidInputError, match="progress"):
            memory.export(io.StringIO(), progress="yes")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="text file"):
            memory.export(42)  # type: ignore[arg-type]


def test_progress_bar_on_stderr_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _memory(tmp_path / "a") as memory:
        _fill(memory)
        memory.export(io.StringIO())
        assert capsys.readouterr().err == ""  # stderr is not a terminal here
        memory.export(io.StringIO(), progress=True)
        assert "exporting" in capsys.readouterr().err


async def test_async_export_and_import(tmp_path: Path) -> None:
    async with _memory(tmp_path / "a", entity_id="bob") as memory:
        await memory.astore(MemoryItem(id="v", text="Bob is vegan", scope=Scope(entity_id="bob")))
        assert await memory.aexport(tmp_path / "bob.jsonl") == 1
    async with _memory(tmp_path / "b", entity_id="bob") as other:
        report = await other.aimport_(tmp_path / "bob.jsonl")
        assert report.imported == 1 and (await other.aget("v")).text == "Bob is vegan"


def test_the_same_embedder_reuses_the_exported_vectors_and_another_embeds(
    tmp_path: Path,
) -> None:
    with _memory(tmp_path / "a") as source:
        _fill(source)
        source.export(tmp_path / "all.jsonl")
        stored = store_of(source).vectors.embeddings("bob", [source.list(entity_id="bob")[0].id])

    same = CountingEmbedder()
    with _memory(tmp_path / "b", embedder=same) as target:
        assert target.import_(tmp_path / "all.jsonl").imported == 7
        assert same.calls == []  # nothing embedded again
        restored = store_of(target).vectors.embeddings("bob", list(stored))
        assert {i: pytest.approx(v) for i, v in stored.items()} == restored

    class Wider(CountingEmbedder):
        @property
        def model_id(self) -> str:
            return "another-model"

    other = Wider()
    with _memory(tmp_path / "c", embedder=other, entity_id="bob") as target:
        assert target.import_(tmp_path / "all.jsonl").imported == 7
        assert other.calls == [7]
        assert target.recall("vegan").memories[0].text == "Bob is vegan"


def test_a_broken_vector_skips_its_line(tmp_path: Path) -> None:
    item = {"id": "v", "text": "Bob is vegan", "scope": {"entity_id": "bob"}}
    line = json.dumps({"memory": item, "vector": {"model": "hashing-64", "f32": "@@@"}})
    with _memory(tmp_path / "a") as memory:
        report = memory.import_(io.StringIO(line))
    assert report.imported == 0 and "vector" in report.skipped[0].error
