"""A user's state changes across chat turns captured by ChatMemoryWrapper (fast mode, no
LLM): the later turn holds, the earlier one is superseded in the graph and left out of
the context the model is given, and both stay stored as they were said."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import HumanMessage
from memtrellis import EdgeKind, Memory, MemoryType
from memtrellis.context import OPEN_TAG
from memtrellis.lifecycle import LifecycleConfig
from memtrellis.testing import HashingEmbedder, store_of

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper


def stored(memory: Memory) -> list[tuple[str, str, str, MemoryType]]:
    assert memory.flush(30)
    return [
        (i.scope.entity_id, i.sources[0].role or "", i.text, i.memory_type)
        for i in memory.list(limit=100)
    ]


def test_a_move_across_turns_leaves_the_new_city_current(memory: Memory) -> None:
    inner = FakeChat(messages=iter(["Noted.", "Congratulations on the move!", "In Porto."]))
    chat = ChatMemoryWrapper(inner, memory=memory)

    chat.invoke([HumanMessage("I live in Lisbon.")])
    chat.invoke([HumanMessage("I moved to Porto!")])

    assert stored(memory) == [
        ("alice", "user", "I live in Lisbon.", MemoryType.EPISODE),
        ("alice", "assistant", "Noted.", MemoryType.EPISODE),
        ("alice", "user", "I moved to Porto!", MemoryType.EPISODE),
        ("alice", "assistant", "Congratulations on the move!", MemoryType.EPISODE),
    ]
    by_text = {i.text: i for i in memory.list(limit=100)}
    lisbon, porto = by_text["I live in Lisbon."], by_text["I moved to Porto!"]
    graph = store_of(memory).graph_of("alice")
    assert graph.edges_of(porto.id, EdgeKind.SUPERSEDES)[0] == [lisbon.id]
    assert graph.edges_of(porto.id, EdgeKind.CONTRADICTS)[0] == [lisbon.id]
    for answer in ("Noted.", "Congratulations on the move!"):  # assistant turns: no claims
        assert graph.edges_of(by_text[answer].id, EdgeKind.SUPERSEDES) == ([], [])
    assert all(i.superseded_by is None for i in memory.list(limit=100))  # as said

    chat.invoke([HumanMessage("Where do I live now?")])

    context = inner.sent()[0].content
    assert context.startswith(OPEN_TAG)
    assert "I moved to Porto!" in context
    assert "I live in Lisbon." not in context
    recalled = memory.recall("Where do I live now?")
    assert [(s.id, s.superseded_by) for s in recalled.skipped] == [(lisbon.id, porto.id)]
    assert stored(memory)[-2:] == [
        ("alice", "user", "Where do I live now?", MemoryType.EPISODE),
        ("alice", "assistant", "In Porto.", MemoryType.EPISODE),
    ]
    question = {i.text: i for i in memory.list(limit=100)}["Where do I live now?"]
    assert graph.edges_of(question.id, EdgeKind.CONTRADICTS) == ([], [])  # asks, claims nothing


def test_a_rescheduled_meeting_in_words_no_cue_list_has_supersedes_the_old_time(
    memory: Memory,
) -> None:
    """The slot model (one subject, a time given as a change's target) reads a wording
    the cue lexicon never listed; a compatible statement about another subject stays."""
    replies = ["Noted.", "Got it.", "Sweet.", "Lovely.", "At 9:45."]
    inner = FakeChat(messages=iter(replies))
    chat = ChatMemoryWrapper(inner, memory=memory)

    for said in (
        "Standup is at 9:15.",
        "Standup moves to 9:45 starting next week.",
        "My daughter is 7.",
        "My son is 4 now.",
    ):
        chat.invoke([HumanMessage(said)])
    assert memory.flush(30)

    by_text = {i.text: i for i in memory.list(limit=100)}
    before = by_text["Standup is at 9:15."]
    after = by_text["Standup moves to 9:45 starting next week."]
    graph = store_of(memory).graph_of("alice")
    assert graph.edges_of(after.id, EdgeKind.SUPERSEDES)[0] == [before.id]
    son = by_text["My son is 4 now."]
    assert graph.edges_of(son.id, EdgeKind.SUPERSEDES) == ([], [])
    assert graph.edges_of(son.id, EdgeKind.CONTRADICTS) == ([], [])

    chat.invoke([HumanMessage("When is standup?")])

    context = inner.sent()[0].content
    assert "Standup moves to 9:45 starting next week." in context
    assert "Standup is at 9:15." not in context
    daughter = by_text["My daughter is 7."]
    assert daughter.id in {hit.memory.id for hit in memory.recall("How old is my daughter?").items}


def test_a_change_in_words_the_rules_miss_is_read_by_the_relation_model(
    tmp_path: Path,
) -> None:
    """No LLM, no cue the rules read as replacing the manager: the packaged relation model
    (memtrellis.lifecycle.relation_model), asked for, links the turns; without it (the
    default), the rules alone leave both turns current."""
    old_text = "Priya is our account manager at Acme."
    new_text = "Acme assigned us a new account manager, Tom Reyes."
    question = "Who is our account manager at Acme?"
    for with_model in (True, False):
        config = LifecycleConfig(relation_model=with_model)
        where = tmp_path / str(with_model)
        with Memory(where, entity_id="alice", embedder=HashingEmbedder(), lifecycle=config) as m:
            inner = FakeChat(messages=iter(["Noted.", "Good to know.", "Tom Reyes."]))
            chat = ChatMemoryWrapper(inner, memory=m)
            chat.invoke([HumanMessage(old_text)])
            chat.invoke([HumanMessage(new_text)])
            assert m.flush(30)
            by_text = {i.text: i for i in m.list(limit=100)}
            old, new = by_text[old_text], by_text[new_text]
            graph = store_of(m).graph_of("alice")
            assert all(i.superseded_by is None for i in m.list(limit=100))  # turns as said

            chat.invoke([HumanMessage(question)])
            context = inner.sent()[0].content
            skipped = [(s.id, s.superseded_by) for s in m.recall(question).skipped]
            if with_model:
                assert graph.edges_of(new.id, EdgeKind.SUPERSEDES)[0] == [old.id]
                assert graph.edges_of(new.id, EdgeKind.CONTRADICTS)[0] == [old.id]
                assert new_text in context and old_text not in context
                assert skipped == [(old.id, new.id)]
            else:
                assert graph.edges_of(new.id, EdgeKind.SUPERSEDES) == ([], [])
                assert new_text in context and old_text in context
                assert skipped == []
