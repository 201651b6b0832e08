"""The extraction core through Memory: fine and fast modes, fallback, refine, documents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memtrellis import InvalidInputError, Memory, MemoryType
from memtrellis.extraction.pipeline import ExtractionConfig, Extractor
from memtrellis.testing import HashingEmbedder, ScriptedLLM, store_of
from memtrellis.types import EdgeKind, Scope

CHAT = [
    {
        "role": "user",
        "content": "Hi, I'm Priya. I just adopted a cat called Biscuit.",
        "id": "c1",
        "timestamp": "2026-05-02T09:00:00Z",
    },
    {
        "role": "assistant",
        "content": "Congratulations! How is Biscuit settling in?",
        "id": "c2",
        "timestamp": "2026-05-02T09:00:10Z",
    },
    {
        "role": "user",
        "content": "Well. I decided to switch my team to Rust next quarter.",
        "id": "c3",
        "timestamp": "2026-05-02T09:01:00Z",
    },
]

REPLY = json.dumps(
    {
        "memories": [
            {
                "key": "pet",
                "memory_type": "fact",
                "value": "Priya has a cat called Biscuit",
                "entities": ["Priya", "Biscuit"],
                "tags": ["pets"],
                "confidence": "high",
                "source_ids": ["c1"],
            },
            {
                "key": "team language",
                "memory_type": "decision",
                "value": "Priya decided to switch her team to Rust next quarter",
                "entities": ["Priya"],
                "confidence": 0.8,
                "source_ids": ["c3"],
            },
        ],
        "summary": "Priya adopted a cat and is moving her team to Rust.",
    }
)


def _memory(path: Path, llm: ScriptedLLM | None = None, **kwargs: object) -> Memory:
    return Memory(path, entity_id="priya", embedder=HashingEmbedder(), llm=llm, **kwargs)  # type: ignore[arg-type]


def test_fine_mode_memories_keep_their_sources(store_path: Path) -> None:
    llm = ScriptedLLM([REPLY])
    with _memory(store_path, llm) as memory:
        items = memory.add(CHAT)
        by_text = {i.text: i for i in items}
        pet = by_text["Priya has a cat called Biscuit"]
        assert [s.message_id for s in pet.sources] == ["c1"]
        assert pet.memory_type is MemoryType.FACT and pet.confidence == pytest.approx(0.9)
        assert "mode:fine" in pet.tags and {"Priya", "Biscuit"} <= set(pet.entities)
        decision = by_text["Priya decided to switch her team to Rust next quarter"]
        assert decision.memory_type is MemoryType.DECISION
        assert [s.message_id for s in decision.sources] == ["c3"]
        summary = [i for i in items if "summary" in i.tags]
        assert len(summary) == 1
        assert {s.message_id for s in summary[0].sources} == {"c1", "c2", "c3"}
        # the prompt carried the window with its message ids
        prompt = " ".join(m["content"] for m in llm.calls[0])
        assert "[c1]" in prompt and "[c3]" in prompt
        hit = memory.recall("what is the name of Priya's cat?").items[0]
        assert hit.memory.text == "Priya has a cat called Biscuit"
        # entities became graph nodes: the decision is one hop from the pet
        assert memory.health().edges_by_kind["mentions"] >= 3


def test_malformed_reply_falls_back_and_the_fallback_is_recallable(store_path: Path) -> None:
    """Regression: a parse failure must store the window, tagged, and recall must find it."""
    llm = ScriptedLLM(["Sure! Here are the memories: {{{ not json at all"])
    with _memory(store_path, llm) as memory:
        [fallback] = memory.add(CHAT)
        assert "extraction:fallback" in fallback.tags
        assert {s.message_id for s in fallback.sources} == {"c1", "c2", "c3"}
        assert memory.health().extraction_fallbacks == 1
    with _memory(store_path) as memory:  # and it is really in the store
        hits = memory.recall("Biscuit cat adopted", k=3).items
        assert hits and hits[0].memory.id == fallback.id


def test_repaired_json_in_fences_is_used(store_path: Path) -> None:
    sloppy = "```json\n{'memories': [{'value': 'Priya has a cat called Biscuit',}],}\n```"
    with _memory(store_path, ScriptedLLM([sloppy])) as memory:
        assert [i.text for i in memory.add(CHAT)] == ["Priya has a cat called Biscuit"]


def test_structured_output_is_requested_when_supported(store_path: Path) -> None:
    llm = ScriptedLLM([REPLY], structured=True)
    with _memory(store_path, llm) as memory:
        memory.add(CHAT)
    assert llm.schemas and "memories" in json.dumps(llm.schemas[0])


def test_chinese_conversation_uses_chinese_prompt(store_path: Path) -> None:
    llm = ScriptedLLM(['{"memories": [{"value": "小王下周去上海出差", "source_ids": ["z1"]}]}'])
    with _memory(store_path, llm) as memory:
        message = {"role": "user", "content": "我下周要去上海出差，记得提醒我。", "id": "z1"}
        [item] = memory.add([message])
    system = llm.calls[0][0]["content"]
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in system) > 20
    assert item.text == "小王下周去上海出差"


def test_fast_mode_is_the_default_without_llm(store_path: Path) -> None:
    with _memory(store_path) as memory:
        items = memory.add(CHAT)
        assert [i.sources[0].message_id for i in items] == ["c1", "c2", "c3"]
        assert all("mode:fast" in i.tags for i in items)
        with pytest.raises(InvalidInputError, match="fine mode needs an LLM"):
            memory.add(CHAT, mode="fine")
        with pytest.raises(InvalidInputError):
            memory.add(CHAT, mode="slow")


def test_list_of_conversations_and_tool_messages(store_path: Path) -> None:
    tool = {"role": "tool", "content": '{"temp": 21}', "id": "tool1"}
    with _memory(store_path) as memory:
        items = memory.add([CHAT[:1], [CHAT[2], tool]])
        assert [i.sources[0].message_id for i in items] == ["c1", "c3"]  # tool kept out


def test_documents_are_chunked_with_provenance(store_path: Path, tmp_path: Path) -> None:
    doc = tmp_path / "handbook.md"
    doc.write_text(
        "# Travel policy\n\nBook trains for trips under 500 km.\n\n"
        "# Expenses\n\nMeals are refunded up to 40 euros a day.\n"
    )
    with _memory(store_path) as memory:
        items = memory.add(doc)
        assert items and all(s.document == str(doc) for i in items for s in i.sources)
        hit = memory.recall("meal refund limit").items[0]
        assert "40 euros" in hit.memory.text
    with _memory(store_path) as memory, pytest.raises(InvalidInputError):
        memory.add(tmp_path / "missing.txt")


def test_refine_supersedes_fast_memories(store_path: Path) -> None:
    llm = ScriptedLLM([REPLY])
    with _memory(store_path, llm) as memory:
        fast = memory.add(CHAT, mode="fast")
        report = memory.refine()
        assert report.conversations == 1 and len(report.created) == 3
        by_id = {i.id: i for i in memory.list()}
        c1, c2, c3 = (by_id[f.id] for f in fast)
        # cited messages are superseded by the fine memory that cites them
        assert c1.superseded_by is not None and c3.superseded_by is not None
        assert "mode:fine" in by_id[c1.superseded_by].tags
        assert c2.superseded_by is not None  # the summary cites every message
        assert report.kept == 0
        assert memory.history(c1.id)[-1].action == "superseded"
        graph = store_of(memory).graph_of(memory.default_scope.entity_id).g
        assert graph.has_edge(c1.superseded_by, c1.id, key=EdgeKind.SUPERSEDES.value)
        recalled = {r.memory.id for r in memory.recall("cat Biscuit", k=10).items}
        assert c1.id not in recalled and c1.superseded_by in recalled
        assert c1.id in {
            r.memory.id for r in memory.recall("cat Biscuit", k=10, include_superseded=True).items
        }
        assert memory.refine().conversations == 0  # nothing fast is left active


def test_refine_needs_llm(store_path: Path) -> None:
    with _memory(store_path) as memory, pytest.raises(InvalidInputError):
        memory.refine()


class _CountingLLM:
    """An async model that records how many calls were in flight at once."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.calls = 0

    def complete(self, messages: list[dict[str, str]]) -> str:
        raise AssertionError("the async driver must use acomplete")

    async def acomplete(self, messages: list[dict[str, str]]) -> str:
        import asyncio

        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.05)
        self.active -= 1
        return '{"memories": []}'


async def test_async_extractor_runs_windows_concurrently() -> None:
    llm = _CountingLLM()
    conversation = [{"role": "user", "content": f"message number {i} " * 30} for i in range(40)]
    extractor = Extractor(llm, ExtractionConfig(max_messages=4, message_overlap=1, concurrency=3))
    result = await extractor.aextract(conversation, Scope(entity_id="a"), mode="fine")
    assert result.windows >= 10 and result.items == [] and result.fallbacks == 0
    assert llm.calls == result.windows
    assert llm.peak == 3  # concurrent, and bounded by the configured concurrency


def test_quality_passes_rewrite_then_judge(store_path: Path) -> None:
    extract = json.dumps(
        {
            "memories": [
                {"value": "She has a cat called Biscuit", "source_ids": ["c1"]},
                {"value": "Priya owns a spaceship", "source_ids": ["c3"]},
            ]
        }
    )
    rewrite = json.dumps({"rewrites": [{"index": 0, "value": "Priya has a cat called Biscuit"}]})
    judge = json.dumps(
        {
            "verdicts": [
                {"index": 0, "keep": True, "reason": "said in c1"},
                {"index": 1, "keep": False, "reason": "never said"},
            ]
        }
    )
    llm = ScriptedLLM([extract, rewrite, judge])
    config = ExtractionConfig(rewrite=True, judge=True)
    with _memory(store_path, llm, extraction=config) as memory:
        items = memory.add(CHAT)
    assert [i.text for i in items] == ["Priya has a cat called Biscuit"]
    assert [s.message_id for s in items[0].sources] == ["c1"]
    assert len(llm.calls) == 3


def test_quality_failures_keep_the_originals(store_path: Path) -> None:
    extract = json.dumps({"memories": [{"value": "Priya has a cat", "source_ids": ["c1"]}]})
    llm = ScriptedLLM([extract, "no idea", RuntimeError("judge down")] + [RuntimeError()] * 2)
    config = ExtractionConfig(rewrite=True, judge=True)
    with _memory(store_path, llm, extraction=config) as memory:
        assert [i.text for i in memory.add(CHAT)] == ["Priya has a cat"]


async def test_aadd_uses_the_async_extractor(store_path: Path) -> None:
    llm = _CountingLLM()
    conversation = [{"role": "user", "content": f"message number {i} " * 30} for i in range(40)]
    config = ExtractionConfig(max_messages=4, message_overlap=1, concurrency=3)
    async with _memory(store_path, llm, extraction=config) as memory:  # type: ignore[arg-type]
        assert await memory.aadd(conversation) == []
    assert llm.calls > 10 and llm.peak == 3  # acomplete, concurrently; complete would raise


def test_a_bad_llm_is_rejected_before_the_store_is_opened(store_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="complete"):
        Memory(store_path, embedder=HashingEmbedder(), llm=object())  # type: ignore[arg-type]
    assert not store_path.exists()  # nothing opened, nothing locked
