"""The relation rules on the labelled pairs (tests/data), the issue's examples, and what the
lifecycle does with each verdict on a real store (facts and fast-mode chat turns)."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memtrellis import EdgeKind, Memory, MemoryItem, MemoryType, Scope
from memtrellis.lifecycle import relate
from memtrellis.testing import HashingEmbedder, ScriptedLLM, store_of

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
PARTS = ("tuning", "tuning2", "tuning3", "tuning4", "tuning5")
#: Parts by writers who never saw the rules: the relation model's training data too.
WRITERS = ("w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8")
#: Supersessions the rules catch on each part (hashing embedder), held as floors: each
#: part was held out once and then used to change the rules (tests/data/README.md).
#: tuning5 was written by someone who never saw the rules; the rules as frozen for the
#: blind part heldout3 (0b7efb9) caught 38 of its 92, 34 since "now" alone no longer
#: replaces another slot of the same subject (relate.py; tuning2 lost one too).
CAUGHT = {"tuning": 0.98, "tuning2": 0.95, "tuning3": 0.95, "tuning4": 0.92, "tuning5": 0.36}
#: Non-change pairs the rules supersede, held as ceilings: tuning5's one is a duplicate
#: said with another spelling of the date ("expires at the end of 2025" / "runs until
#: Dec 31, 2025"); no extends or unrelated pair is superseded on any part.
WRONG = {"tuning": 0, "tuning2": 0, "tuning3": 0, "tuning4": 0, "tuning5": 1}
LABELS = {"duplicate", "supersedes", "contradicts", "extends", "unrelated"}
CATEGORIES = {
    "postponement",
    "date_change",
    "number_change",
    "increase_decrease",
    "reversal",
    "move",
    "new_job",
    "new_phone",
    "negation",
    "status_change",
    "conflict",
    "paraphrase",
    "compatible",
    "same_entity",
}
CJK = re.compile(r"[\u4e00-\u9fff]")
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "relations_bench", ROOT / "benchmarks/relations.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pairs(part: str) -> list[dict[str, str]]:
    data = json.loads((DATA / f"relation_pairs_{part}.json").read_text(encoding="utf-8"))
    assert data["part"] == part
    return list(data["pairs"])


def test_the_pair_files_are_well_formed() -> None:
    seen_ids: set[str] = set()
    seen_pairs: set[tuple[str, str]] = set()
    for part in (*PARTS, *WRITERS):
        rows = pairs(part)
        chinese = 0
        for row in rows:
            assert set(row) == {"id", "lang", "category", "label", "old", "new"}, row
            assert row["label"] in LABELS and row["category"] in CATEGORIES, row
            assert row["lang"] in {"en", "zh"} and row["old"].strip() and row["new"].strip()
            assert row["old"] != row["new"] or row["label"] == "duplicate", row
            assert bool(CJK.search(row["old"] + row["new"])) == (row["lang"] == "zh"), row
            assert row["id"] not in seen_ids
            seen_ids.add(row["id"])
            assert (row["old"], row["new"]) not in seen_pairs, row
            seen_pairs.add((row["old"], row["new"]))
            chinese += row["lang"] == "zh"
        if part in PARTS:
            assert 0.25 <= chinese / len(rows) <= 0.45, part  # about a third Chinese
        if part in ("w7", "w8"):  # other slots of one subject: no duplicate or conflict
            assert {r["label"] for r in rows} == {"supersedes", "extends", "unrelated"}, part
        else:
            assert {r["label"] for r in rows} == LABELS, part
    assert len(pairs("tuning")) >= 300
    assert len(seen_ids) >= 2800
    # The writers' parts: one all Chinese, three mixed; a quarter Chinese in all.
    written = [row for part in WRITERS for row in pairs(part)]
    assert 0.25 <= sum(row["lang"] == "zh" for row in written) / len(written) <= 0.45


def figures_of(parts: tuple[str, ...], name: str, **system: Any) -> dict[str, dict[str, Any]]:
    """Each part's figures for the rules alone (``part``) and with ``system`` (the
    benchmark's ``evaluate`` options, ``part + name``), hashing-embedder similarities."""
    module = bench()
    embed = HashingEmbedder().embed_documents
    out = {}
    for part in parts:
        rows = pairs(part)
        sims = module.similarities(rows, embed)
        out[part] = module.evaluate(rows, sims)
        out[part + name] = module.evaluate(rows, sims, **system)
    return out


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, Any]]:
    return figures_of(PARTS, "+judge", with_judge=True)


@pytest.mark.parametrize("part", PARTS)
def test_the_rules_meet_the_targets_on_every_part(
    figures: dict[str, dict[str, Any]], part: str
) -> None:
    result = figures[part]
    assert result["supersedes_caught"] >= CAUGHT[part]
    assert result["compatible_superseded_count"][0] == 0
    assert result["any_wrongly_superseded_count"][0] <= WRONG[part]
    if not WRONG[part]:
        assert result["per_label"]["supersedes"]["precision"] == 1.0


@pytest.mark.parametrize("part", PARTS)
def test_a_judge_where_the_rules_defer_keeps_them_safe(
    figures: dict[str, dict[str, Any]], part: str
) -> None:
    judged = figures[part + "+judge"]
    assert judged["supersedes_caught"] >= 0.95
    assert judged["compatible_superseded_count"][0] == 0
    assert judged["judge_asked"] > 0


def item(text: str, *entities: str) -> MemoryItem:
    return MemoryItem(text=text, entities=list(entities), scope=Scope(entity_id="u"))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "The project launch date is 2024-06-15.",
            "The project launch was postponed to 2024-07-10 after the compliance review.",
        ),
        ("项目上线日期为2024-06-15", "因合规审查，项目上线延期至2024-07-10"),
        ("The marketing budget is 200k.", "The marketing budget was cut by 30%."),
        ("The ticket price is 40 dollars.", "They raised the ticket price."),
        ("市场部的预算是200万。", "市场部的预算被削减了三成。"),
        ("周会时间是每周一上午十点。", "周会调整为每周二上午九点。"),
        ("我住在北京。", "我搬到上海了。"),
        ("我的手机号是13800001111。", "我换了手机号，新号码是13900002222。"),
        ("项目预算是50万元。", "项目预算改为80万元。"),
    ],
)
def test_the_issue_examples_supersede(old: str, new: str) -> None:
    relation = relate(item(new), item(old), similarity=0.5)
    assert relation.label == "supersedes", relation


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My daughter is 7 years old.", "My son is 4 years old."),
        ("我女儿七岁。", "我儿子四岁。"),
        ("Ana speaks French.", "Ana speaks Spanish too."),
        ("I visited Rome in 2019.", "I visited Paris in 2021."),
        ("我2016年去过西藏。", "我2020年去过新疆。"),
        # "Now" of the same subject, another slot: nothing replaced.
        (
            "The team dashboard pulls data from BigQuery.",
            "The team dashboard now refreshes hourly.",
        ),
        ("小林在学小提琴。", "小林现在住校了，周末才回家。"),
        ("Leo loves his dog.", "Leo is currently learning to dance."),
    ],
)
def test_compatible_additions_never_supersede(old: str, new: str) -> None:
    for similarity in (0.3, 0.7, 0.99):  # an embedder blind to a script says 0.99
        relation = relate(item(new), item(old), similarity=similarity)
        assert relation.label not in {"supersedes", "duplicate"}, (similarity, relation)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", entity_id="u", embedder=HashingEmbedder()) as m:
        yield m


def said(text: str, day: int, role: str = "user", speaker: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": text, "timestamp": T0 + timedelta(days=day)}
    if speaker is not None:
        message["name"] = speaker
    return message


def test_a_postponed_launch_supersedes_the_old_date_as_plain_facts(memory: Memory) -> None:
    for old_text, new_text in [
        (
            "The project launch date is 2024-06-15.",
            "The project launch was postponed to 2024-07-10 after the compliance review.",
        ),
        ("项目上线日期为2024-06-15", "因合规审查，项目上线延期至2024-07-10"),
    ]:
        [old] = memory.add([said(old_text, 0)], memory_type="fact")
        [new] = memory.add([said(new_text, 3)], memory_type="fact")
        assert memory.get(old.id).superseded_by == new.id
        assert memory.get(new.id).superseded_by is None
    current = [i.text for i in memory.list() if i.superseded_by is None]
    assert current == [
        "The project launch was postponed to 2024-07-10 after the compliance review.",
        "因合规审查，项目上线延期至2024-07-10",
    ]


def test_a_compatible_fact_is_stored_beside_the_old_one(memory: Memory) -> None:
    [daughter] = memory.add([said("My daughter is 7 years old.", 0)], memory_type="fact")
    [son] = memory.add([said("My son is 4 years old.", 5)], memory_type="fact")
    assert daughter.id != son.id
    assert all(i.superseded_by is None for i in memory.list())
    graph = store_of(memory).graph_of("u")
    assert graph.edges_of(son.id, EdgeKind.CONTRADICTS) == ([], [])


def test_a_contradiction_that_is_no_change_keeps_both(memory: Memory) -> None:
    [old] = memory.add([said("The shop accepts cash on weekdays.", 0)], memory_type="fact")
    [new] = memory.add([said("The shop doesn't accept cash.", 2)], memory_type="fact")
    graph = store_of(memory).graph_of("u")
    assert graph.edges_of(new.id, EdgeKind.CONTRADICTS)[0] == [old.id]
    assert graph.edges_of(new.id, EdgeKind.SUPERSEDES) == ([], [])
    assert {i.id for i in memory.list() if i.superseded_by is None} == {old.id, new.id}


def test_a_judge_saying_conflicts_keeps_both(tmp_path: Path) -> None:
    verdict = {"relations": [{"index": 0, "relation": "conflicts", "reason": "diet"}]}
    llm = ScriptedLLM([json.dumps(verdict)])
    with Memory(tmp_path / "s", entity_id="u", embedder=HashingEmbedder(), llm=llm) as m:
        [fish] = m.add("Ana eats fish on Fridays", memory_type="fact", mode="fast")
        [vegan] = m.add("Ana is vegan", memory_type="fact", mode="fast")
        assert m.get(fish.id).superseded_by is None
        graph = store_of(m).graph_of("u")
        assert graph.edges_of(vegan.id, EdgeKind.CONTRADICTS)[0] == [fish.id]
        assert graph.edges_of(vegan.id, EdgeKind.SUPERSEDES) == ([], [])
        assert len(llm.calls) == 1


def test_a_later_chat_turn_supersedes_an_earlier_one_claim_turn(memory: Memory) -> None:
    [lisbon, hello] = memory.add([said("I live in Lisbon.", 0), said("Nice!", 0, "assistant")])
    [porto] = memory.add([said("I moved to Porto!", 30)])
    graph = store_of(memory).graph_of("u")
    assert graph.edges_of(porto.id, EdgeKind.SUPERSEDES)[0] == [lisbon.id]
    assert graph.edges_of(porto.id, EdgeKind.CONTRADICTS)[0] == [lisbon.id]
    # The turns stay as they were said.
    assert [(i.text, i.memory_type, i.superseded_by) for i in memory.list()] == [
        ("I live in Lisbon.", MemoryType.EPISODE, None),
        ("Nice!", MemoryType.EPISODE, None),
        ("I moved to Porto!", MemoryType.EPISODE, None),
    ]
    now = memory.recall("Where do I live?")
    assert lisbon.id not in {r.memory.id for r in now.items}
    assert porto.id in {r.memory.id for r in now.items}
    assert [(s.id, s.reason, s.superseded_by) for s in now.skipped] == [
        (lisbon.id, "superseded", porto.id)
    ]
    [hit] = [r for r in now.items if r.memory.id == porto.id]
    assert hit.explanation.replaces == [lisbon.id]
    then = memory.recall("Where do I live?", as_of=T0 + timedelta(days=10))
    assert lisbon.id in {r.memory.id for r in then.items}
    both = memory.recall("Where do I live?", include_superseded=True)
    assert {lisbon.id, porto.id} <= {r.memory.id for r in both.items}
    assert [v.id for v in memory.versions(porto.id)] == [lisbon.id, porto.id]
    assert hello.id in {i.id for i in memory.list()}


def test_a_turn_saying_more_is_only_flagged(memory: Memory) -> None:
    [old] = memory.add([said("I live in Lisbon. I have a dog called Rex.", 0)])
    [new] = memory.add([said("We moved to Porto last week!", 30)])
    graph = store_of(memory).graph_of("u")
    assert graph.edges_of(new.id, EdgeKind.CONTRADICTS)[0] == [old.id]
    assert graph.edges_of(new.id, EdgeKind.SUPERSEDES) == ([], [])
    found = {r.memory.id for r in memory.recall("Where do I live? Do I have a dog?").items}
    assert {old.id, new.id} <= found


def test_turns_of_others_and_compatible_turns_are_not_linked(memory: Memory) -> None:
    [mine] = memory.add([said("I live in Lisbon.", 0, speaker="Caroline")])
    theirs = memory.add([said("I moved to Porto!", 1, speaker="Melanie")])
    bot = memory.add([said("You moved to Madrid, right?", 2, "assistant")])
    [daughter] = memory.add([said("My daughter is 7.", 3, speaker="Caroline")])
    [son] = memory.add([said("My son is 4.", 4, speaker="Caroline")])
    graph = store_of(memory).graph_of("u")
    for other in [*theirs, *bot, son]:
        assert graph.edges_of(other.id, EdgeKind.CONTRADICTS) == ([], [])
        assert graph.edges_of(other.id, EdgeKind.SUPERSEDES) == ([], [])
    assert mine.id in {r.memory.id for r in memory.recall("Where does Caroline live?").items}
    assert daughter.id in {r.memory.id for r in memory.recall("daughter age").items}


@pytest.mark.parametrize(
    "texts",
    [
        [f"fact {w}" for w in ("a", "i", "be", "ab", "bd")],  # function words for each other
        [f"Bo note {n}: the bees swarmed again." for n in range(60)],  # a numbered label
    ],
)
def test_texts_that_differ_in_a_word_or_a_number_are_never_merged(
    tmp_path: Path, texts: list[str]
) -> None:
    # A merge drops the new text: these are other memories (both once merged before).
    with Memory(tmp_path / "s", entity_id="bo", embedder=HashingEmbedder()) as memory:
        for text in texts:
            memory.add(text)
        assert sorted(i.text for i in memory.list(limit=1000)) == sorted(texts)
