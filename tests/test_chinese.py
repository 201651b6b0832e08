"""Chinese and mixed Chinese–English memory: the zh_recall set, keyword terms, the real Memory.

The set (tests/data/zh_recall/) is checked for shape here; its recall figures come from
benchmarks/chinese.py. Recall here runs through a real Memory on a tmp_path store with
the hashing embedder, and once with the real multilingual embedder.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memtrellis import Memory
from memtrellis.embeddings import (
    E5Embedder,
    MultilingualEmbedder,
    default_embedder,
    e5_embedder,
    multilingual_embedder,
)
from memtrellis.embeddings.catalog import EMBEDDERS, named_embedder
from memtrellis.errors import EmbeddingMismatchError, InvalidInputError
from memtrellis.store.keyword import KeywordIndex, index_terms, stem, tokenize
from memtrellis.testing import HashingEmbedder

DATA = Path(__file__).parent / "data" / "zh_recall"
TYPES = {"single-hop", "multi-session", "temporal", "speaker"}
DATE = "%I:%M %p on %d %B, %Y"


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _turns(sample: dict[str, Any]) -> dict[str, dict[str, Any]]:
    conversation = sample["conversation"]
    return {
        turn["dia_id"]: turn
        for key, value in conversation.items()
        if re.fullmatch(r"session_\d+", key)
        for turn in value
    }


# -- the data set ------------------------------------------------------------------------


def test_every_evidence_id_names_a_turn_or_section_of_its_own_conversation() -> None:
    conversations, documents = _load("conversations.json"), _load("documents.json")
    for sample in conversations:
        turns = _turns(sample)
        for qa in sample["qa"]:
            assert qa["evidence"], qa["question"]
            assert set(qa["evidence"]) <= set(turns), qa["question"]
    sections = {s["id"] for d in documents["documents"] for s in d["sections"]}
    for qa in documents["qa"]:
        assert qa["evidence"] and set(qa["evidence"]) <= sections, qa["question"]


def test_the_set_is_large_varied_and_partly_mixed_language() -> None:
    conversations, documents = _load("conversations.json"), _load("documents.json")
    questions = [qa for s in conversations for qa in s["qa"]] + documents["qa"]
    assert len(questions) >= 200
    assert len({qa["question"] for qa in questions}) == len(questions)  # no repeats
    types = Counter(qa["type"] for qa in questions)
    assert set(types) == TYPES and min(types.values()) >= 15
    assert {qa["category"] for qa in questions} <= {1, 2, 4}
    mixed = [qa for s in conversations if s["sample_id"].startswith("conv-mix") for qa in s["qa"]]
    english = [qa for qa in questions if qa["language"] == "en"]
    cross = [qa for qa in questions if qa["cross_lingual"]]
    assert len(mixed) / len(questions) >= 0.2
    assert len(english) >= 30 and len(cross) >= 30
    # an English question about a Chinese turn, and a Chinese question about an English one
    turns = {(s["sample_id"], d): t["text"] for s in conversations for d, t in _turns(s).items()}
    zh_about_en = [
        qa
        for s in conversations
        for qa in s["qa"]
        if qa["language"] == "zh"
        and any(
            not re.search(r"[\u4e00-\u9fff]{3}", turns[(s["sample_id"], e)]) for e in qa["evidence"]
        )
    ]
    assert zh_about_en
    assert any(qa["language"] == "en" and qa["cross_lingual"] for qa in questions)


def test_conversations_have_speakers_timestamps_and_several_sessions() -> None:
    for sample in _load("conversations.json"):
        conversation = sample["conversation"]
        speakers = {conversation["speaker_a"], conversation["speaker_b"]}
        sessions = sorted(
            int(m.group(1)) for k in conversation if (m := re.fullmatch(r"session_(\d+)", k))
        )
        assert len(sessions) >= 3
        dates = [datetime.strptime(conversation[f"session_{n}_date_time"], DATE) for n in sessions]
        assert dates == sorted(dates)
        for n in sessions:
            for index, turn in enumerate(conversation[f"session_{n}"], start=1):
                assert turn["dia_id"] == f"D{n}:{index}"
                assert turn["speaker"] in speakers and turn["text"].strip()
        if "assistant" in sample:
            assert sample["assistant"] in speakers


def test_the_benchmark_reads_the_conversations_with_the_locomo_loader() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    try:
        from _locomo import load_locomo
    finally:
        sys.path.pop(0)
    conversations = load_locomo(DATA / "conversations.json")
    assert len(conversations) == 6
    assert all(len(c.scored_questions) == len(c.questions) for c in conversations)
    first = conversations[0].sessions[0].messages[2]
    assert first["id"] == "D1:3" and first["speaker"] == "林晓"
    assert first["timestamp"] == "2023-03-05T21:10:00+00:00"


# -- keyword terms -----------------------------------------------------------------------


def test_code_switched_words_without_spaces_keep_their_english_words() -> None:
    assert tokenize("今天的meeting又delay了") == ["今天", "天的", "meeting", "又", "delay", "了"]
    assert tokenize("我新买了一台MacBook Air") == [
        "我新", "新买", "买了", "了一", "一台", "macbook", "air",
    ]  # fmt: skip
    assert tokenize("Ana moved to Porto!") == ["ana", "moved", "porto"]


def test_index_terms_add_content_characters_and_drop_function_words() -> None:
    terms = index_terms("我在深圳一家医院做夜班护士。")
    assert {"深圳", "医院", "夜班", "护士"} <= set(terms)
    assert {"深", "圳", "医", "院", "护", "士"} <= set(terms)
    assert not {"我", "在", "一"} & set(terms)
    assert "什么" not in index_terms("你想吃什么？") and "吃" in index_terms("你想吃什么？")
    # text without CJK is tokenized as before, each English word to its light stem
    for text in ["Ana moved to Porto!", "the cat and the rain", ""]:
        assert index_terms(text) == [stem(t) for t in tokenize(text)]


def test_keyword_index_finds_a_chinese_memory_by_words_it_does_not_repeat_whole() -> None:
    index = KeywordIndex()
    index.add("e", "nurse", "我在深圳一家医院做夜班护士。")
    index.add("e", "hike", "周末我们去爬山，看了日出。")
    index.add("e", "cat", "我家的猫叫豆豆。")
    # 护理 shares only the character 护 with 护士: bigrams alone found nothing
    assert index.search("e", "她做护理工作吗？", 3)[0][0] == "nurse"
    assert index.search("e", "爬过什么山", 3)[0][0] == "hike"
    assert index.search("e", "豆豆是谁", 3)[0][0] == "cat"
    assert index.search("e", "的了吗", 3) == []  # only function characters: no terms


# -- the real Memory ---------------------------------------------------------------------

MIXED_SESSION = [
    {
        "role": "user",
        "speaker": "王磊",
        "id": "D1:1",
        "timestamp": "2023-01-09T09:30:00+00:00",
        "content": "Emily，早！今天的stand-up改到十点了，老板临时有个call。",
    },
    {
        "role": "user",
        "speaker": "Emily",
        "id": "D1:2",
        "timestamp": "2023-01-09T09:31:00+00:00",
        "content": "OK 收到。I moved here from Seattle in March 2021，还不习惯上海的冬天。",
    },
    {
        "role": "user",
        "speaker": "王磊",
        "id": "D1:3",
        "timestamp": "2023-01-09T09:32:00+00:00",
        "content": "周末我带你去城隍庙附近吃小笼包。",
    },
    {
        "role": "user",
        "speaker": "Emily",
        "id": "D1:4",
        "timestamp": "2023-01-09T09:33:00+00:00",
        "content": "Deal! 我的狗Biscuit上周把我的AirPods咬坏了。",
    },
]


def test_a_mixed_chinese_english_chat_is_captured_whole_and_recalled(tmp_path: Path) -> None:
    with Memory(tmp_path / "store", embedder=HashingEmbedder()) as memory:
        stored = memory.add(MIXED_SESSION, entity_id="team", mode="fast")
        assert [item.text for item in stored] == [m["content"] for m in MIXED_SESSION]
        by_id = {item.sources[0].message_id: item for item in stored}
        assert set(by_id) == {"D1:1", "D1:2", "D1:3", "D1:4"}
        assert by_id["D1:4"].sources[0].speaker == "Emily"
        assert by_id["D1:3"].sources[0].timestamp == datetime.fromisoformat(
            "2023-01-09T09:32:00+00:00"
        )
        assert len(memory.list(entity_id="team")) == 4  # nothing duplicated or added

        def top(question: str) -> str | None:
            hits = memory.recall(question, entity_id="team", k=1).memories
            return hits[0].sources[0].message_id if hits else None

        assert top("What broke the AirPods?") == "D1:4"  # English word inside Chinese
        assert top("When did Emily move from Seattle?") == "D1:2"
        assert top("哪里的小笼包好吃") == "D1:3"  # Chinese question, Chinese turn
        assert top("stand-up meeting 几点开？") == "D1:1"  # no space before 改


def test_a_store_remembers_the_embedder_it_was_named_with(tmp_path: Path) -> None:
    path = tmp_path / "store"
    assert {"minilm", "multilingual", "multilingual-e5"} <= set(EMBEDDERS)
    assert named_embedder("minilm") is default_embedder()
    assert named_embedder("multilingual") is multilingual_embedder()
    assert named_embedder("multilingual-e5") is e5_embedder()
    with pytest.raises(InvalidInputError, match=r"known: 'minilm', .*'multilingual'"):
        Memory(path, embedder="klingon")
    assert not path.exists() or not any(path.iterdir())  # checked before anything is made
    with Memory(path, embedder="multilingual") as memory:
        assert memory.embedder.model_id == "use-multilingual-v3-numpy"
        memory.add(
            [
                {"role": "user", "id": "m1", "content": "我在深圳一家医院做夜班护士。"},
                {"role": "user", "id": "m2", "content": "周末我喜欢去爬山，看日出。"},
                {"role": "user", "id": "m3", "content": "My cat Doudou keeps waking me up."},
            ],
            mode="fast",
        )
        for question, expected in [
            ("我的工作是什么？", "m1"),  # no word in common with the answer
            ("What is my job?", "m1"),  # English question, Chinese memory
            ("What do I do on weekends?", "m2"),
            ("我养了什么宠物？", "m3"),  # Chinese question, English memory
        ]:
            hits = memory.recall(question, k=3).memories
            assert hits[0].sources[0].message_id == expected, question
    with pytest.raises(EmbeddingMismatchError, match="use-multilingual-v3-numpy"):
        Memory(path)  # the default MiniLM
    with pytest.raises(EmbeddingMismatchError):
        Memory(path, embedder="multilingual-e5")
    with Memory(path, embedder=MultilingualEmbedder()) as memory:
        assert len(memory.list()) == 3


def test_the_e5_embedder_recalls_across_languages_with_its_floor(tmp_path: Path) -> None:
    # e5's cosines sit between 0.7 and 1; read raw, the neighbour m2 took the first place.
    with Memory(tmp_path / "store", embedder=E5Embedder()) as memory:
        assert memory.embedder.similarity_floor == 0.7
        memory.add(
            [
                {"role": "user", "id": "m1", "content": "我在深圳一家医院做夜班护士。"},
                {"role": "user", "id": "m2", "content": "周末我喜欢去爬山，看日出。"},
                {"role": "user", "id": "m3", "content": "My cat Doudou keeps waking me up."},
            ],
            mode="fast",
        )
        for question, expected in [("我的工作是什么？", "m1"), ("What is my job?", "m1")]:
            hits = memory.recall(question, k=3).memories
            assert hits[0].sources[0].message_id == expected, question


class NarrowCosines:
    """Fake embedder with e5-like cosines: the same topic 1.0, any other topic 0.9."""

    TOPICS: ClassVar[dict[str, int]] = {"夜班护士": 1, "周末爬山": 2, "橘猫豆豆": 3, "我的工作": 1}

    def __init__(self, floor: float | None) -> None:
        if floor is not None:
            self.similarity_floor = floor

    model_id = "narrow-4"
    dimension = 4

    def embed_documents(self, texts: Any) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        vector = [3.0, 0.0, 0.0, 0.0]
        vector[self.TOPICS[text]] = 1.0
        return [x / 10**0.5 for x in vector]


@pytest.mark.parametrize(("floor", "first"), [(None, "m2"), (0.85, "m1")])
def test_a_declared_similarity_floor_keeps_narrow_cosines_from_drowning(
    tmp_path: Path, floor: float | None, first: str
) -> None:
    # m2 sits between m1 and m3, and takes a share of both neighbours' scores. Read raw,
    # cosines of 1.0 and 0.9 are nearly equal and the shares decide: m2 comes first.
    # With the floor the embedder declares, the answer m1 does.
    with Memory(tmp_path / "store", embedder=NarrowCosines(floor)) as memory:
        memory.add(
            [
                {"role": "user", "id": "m1", "content": "夜班护士"},
                {"role": "user", "id": "m2", "content": "周末爬山"},
                {"role": "user", "id": "m3", "content": "橘猫豆豆"},
            ],
            mode="fast",
        )
        hits = memory.recall("我的工作", k=3).items
        assert hits[0].memory.sources[0].message_id == first
        assert hits[0].explanation.keyword_score is None  # the vectors alone decided


def test_the_command_line_opens_a_multilingual_store(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memtrellis.cli import app
    from memtrellis.repair import _by_name
    from memtrellis.store._corrupt import embedder_flags
    from memtrellis.store.repair import recorded_embedder

    store = tmp_path / "store"
    runner = CliRunner()
    base = ["--path", str(store), "--embedder", "multilingual"]
    added = runner.invoke(app, [*base, "add", "我在深圳一家医院做夜班护士。"])
    assert added.exit_code == 0, added.output
    recalled = runner.invoke(app, [*base, "recall", "What is my job?", "-k", "1"])
    assert recalled.exit_code == 0 and "夜班护士" in recalled.output, recalled.output
    refused = runner.invoke(app, ["--path", str(store), "recall", "工作"])  # default MiniLM
    assert refused.exit_code != 0 and "use-multilingual-v3-numpy" in refused.output
    # repair and migrate find the embedder the manifest names
    recorded = recorded_embedder(store)
    assert recorded is not None and _by_name(recorded) is multilingual_embedder()
    assert embedder_flags(recorded.model_id) == ("--embedder", "multilingual")


class AnaFacts(NarrowCosines):
    """Two facts about Ana, 0.9 apart: close for a narrow model, far for MiniLM."""

    TOPICS: ClassVar[dict[str, int]] = {"Ana lives in Porto.": 1, "Ana plays the cello.": 2}


@pytest.mark.parametrize(("floor", "extends"), [(None, 1), (0.85, 0)])
def test_lifecycle_thresholds_are_read_on_the_embedders_scale(
    tmp_path: Path, floor: float | None, extends: int
) -> None:
    # related_similarity suits MiniLM; an embedder whose unrelated texts reach 0.9 would
    # make every fact about Ana extend every other one.
    with Memory(tmp_path / "store", embedder=AnaFacts(floor)) as memory:
        memory.add("Ana lives in Porto.", mode="fast")
        memory.add("Ana plays the cello.", mode="fast")
        assert len(memory.list()) == 2
        assert memory.health().edges_by_kind["extends"] == extends
        assert memory.lifecycle.support_similarity == 0.85  # the user's config is unchanged


class _EnglishOnly(HashingEmbedder):
    english_only = True


def test_an_english_only_store_says_once_that_chinese_text_is_found_by_its_words_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    notice = "reads English only"
    with Memory(tmp_path / "en", embedder=_EnglishOnly(), entity_id="li") as memory:
        with caplog.at_level("WARNING", logger="memtrellis"):
            memory.add("I work night shifts as a nurse.")
            assert notice not in caplog.text  # English text: nothing to say
            memory.add("我在深圳一家医院做夜班护士。")
            memory.add("周末我喜欢去爬山。")
            memory.capture([{"role": "user", "content": "こんにちは"}])
            memory.flush()
        assert caplog.text.count(notice) == 1
        assert "embedder='multilingual'" in caplog.text
        # nothing is refused: the Chinese memory is stored and found by its words
        assert memory.recall("夜班护士", k=1).memories[0].text == "我在深圳一家医院做夜班护士。"
    caplog.clear()
    with Memory(tmp_path / "ml", embedder=HashingEmbedder(), entity_id="li") as memory:
        with caplog.at_level("WARNING", logger="memtrellis"):
            memory.add("我在深圳一家医院做夜班护士。")
        assert notice not in caplog.text  # an embedder that reads Chinese: no notice


def test_the_english_models_say_they_read_english_only_and_the_multilingual_ones_do_not() -> None:
    from memtrellis.embeddings.minilm_l3 import MiniLML3Embedder

    assert default_embedder().english_only is True
    assert MiniLML3Embedder.english_only is True
    assert not getattr(multilingual_embedder(), "english_only", False)
    assert not getattr(e5_embedder(), "english_only", False)
