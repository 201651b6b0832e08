"""The story ``memtrellis demo`` tells, run against a real `Memory`; `_demo` renders it.

A chat app captures two conversations of one user, six months apart, turn by turn; two
of the user's turns state where she lives, and the app stores those as facts. Then
recall with reasons and sources, the fact that changed (superseded, kept as history),
and recall as of a day between the two conversations.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from importlib import resources
from typing import TYPE_CHECKING, Any

from memtrellis.cli._state import iter_all
from memtrellis.types import HistoryEvent, MemoryItem, MemoryType, RecallResult

if TYPE_CHECKING:
    from memtrellis.memory import Memory

__all__ = ["SAMPLE", "Story", "Turn", "load_sample", "run_story"]

SAMPLE = "sample_conversation.json"


def load_sample() -> dict[str, Any]:
    """The sample conversation shipped with the package (two sessions and the questions).

    Examples:
        >>> [session["session_id"] for session in load_sample()["sessions"]]
        ['s1', 's2']
    """
    text = (
        resources.files("memtrellis.cli")
        .joinpath("data")
        .joinpath(SAMPLE)
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data


@dataclass
class Turn:
    """One turn of the sample as the app handed it over, and the memory it became."""

    session_id: str
    message: dict[str, Any]
    fact: bool
    memory: MemoryItem | None = None


@dataclass
class Story:
    """Everything the demo shows, read back from the store."""

    title: str
    user: str
    entity_id: str
    turns: list[Turn]
    store_seconds: float
    recalls: list[RecallResult]
    recall_k: list[int]
    old_fact: MemoryItem
    new_fact: MemoryItem
    old_history: list[HistoryEvent]
    versions: list[MemoryItem]
    fact_query: str
    now: RecallResult
    as_of: datetime
    then: RecallResult
    memories: list[MemoryItem] = field(default_factory=list)

    @property
    def superseded_reason(self) -> str | None:
        """Why the rules said the newer fact replaces the older one (from its history)."""
        for event in self.old_history:
            if event.action == "superseded":
                reason = event.detail.get("reason")
                return str(reason) if reason else None
        return None


def _shift(sample: dict[str, Any], today: date) -> timedelta:
    """How far to move the sample's dates so that its ``today`` is today."""
    return timedelta(days=(today - date.fromisoformat(sample["today"])).days)


def _moved(stamp: str, shift: timedelta) -> str:
    return (datetime.fromisoformat(stamp.replace("Z", "+00:00")) + shift).isoformat()


def sample_turns(sample: dict[str, Any], today: date | None = None) -> list[Turn]:
    """The sample's turns in order, their dates moved so that the last chat was last week.

    Examples:
        >>> turns = sample_turns(load_sample(), date(2025, 9, 20))
        >>> turns[0].message["timestamp"], [t.message["id"] for t in turns if t.fact]
        ('2025-03-03T19:02:00+00:00', ['s1-m1', 's2-m1'])
    """
    shift = _shift(sample, today or datetime.now(timezone.utc).date())
    turns: list[Turn] = []
    for session in sample["sessions"]:
        for raw in session["messages"]:
            message = {key: value for key, value in raw.items() if key != "fact"}
            message["timestamp"] = _moved(message["timestamp"], shift)
            turns.append(Turn(session["session_id"], message, bool(raw.get("fact"))))
    return turns


def exchanges(turns: list[Turn]) -> list[list[Turn]]:
    """The turns cut into exchanges (a user's message and the replies to it, in one
    session), as a chat app captures them after each reply.

    Examples:
        >>> [[t.message["id"] for t in e] for e in exchanges(sample_turns(load_sample()))][:2]
        [['s1-m1', 's1-m2'], ['s1-m3', 's1-m4']]
    """
    cut: list[list[Turn]] = []
    for turn in turns:
        opens = turn.message["role"] == "user" or not cut
        if opens or cut[-1][0].session_id != turn.session_id:
            cut.append([turn])
        else:
            cut[-1].append(turn)
    return cut


def run_story(memory: Memory, sample: dict[str, Any], today: date | None = None) -> Story:
    """Capture the sample as a chat app would, then recall from it; returns what to show.

    Each exchange is handed to [`capture`][memtrellis.Memory.capture] after its reply (what
    the LangChain and LlamaIndex adapters and ``memory.register(client)`` do), except the
    turns marked ``fact``, which the app stores with ``memory_type="fact"``: fast mode
    keeps conversation turns as they were said and never supersedes them, while facts
    (distilled by fine mode's LLM, saved by an agent's tool, or stored so) go through the
    lifecycle.

    Examples:
        >>> from memtrellis.testing import temp_memory
        >>> with temp_memory() as memory:
        ...     story = run_story(memory, load_sample())
        ...     story.old_fact.superseded_by == story.new_fact.id
        True
    """
    today = today or datetime.now(timezone.utc).date()
    turns = sample_turns(sample, today)
    started = time.perf_counter()
    for exchange in exchanges(turns):
        said = [turn.message for turn in exchange if not turn.fact]
        for turn in exchange:
            if turn.fact:
                [turn.memory] = memory.add(
                    turn.message, session_id=turn.session_id, memory_type=MemoryType.FACT
                )
        if said:
            memory.capture(said, session_id=exchange[0].session_id)
    memory.flush()
    store_seconds = time.perf_counter() - started

    memories = iter_all(memory)
    by_message = {
        (item.scope.session_id, source.message_id): item
        for item in memories
        for source in item.sources
        if source.message_id
    }
    for turn in turns:
        turn.memory = by_message.get((turn.session_id, turn.message["id"]), turn.memory)
    facts = [turn.memory for turn in turns if turn.fact and turn.memory is not None]
    if len(facts) != 2:
        raise RuntimeError(f"the sample should hold two facts, not {len(facts)}")
    old_fact, new_fact = (memory.get(fact.id) for fact in facts)

    recall_k = [int(entry["k"]) for entry in sample["recalls"]]
    queries = [str(entry["query"]) for entry in sample["recalls"]]
    recalls = [memory.recall(query, k=k) for query, k in zip(queries, recall_k, strict=True)]
    query = str(sample["fact_query"])
    as_of = datetime.fromisoformat(_moved(sample["as_of"], _shift(sample, today)))
    return Story(
        title=str(sample.get("title", "")),
        user=str(sample.get("user", "the user")),
        entity_id=memory.current_scope().entity_id,
        turns=turns,
        store_seconds=store_seconds,
        recalls=recalls,
        recall_k=recall_k,
        old_fact=old_fact,
        new_fact=new_fact,
        old_history=memory.history(old_fact.id),
        versions=memory.versions(old_fact.id),
        fact_query=query,
        now=memory.recall(query, memory_types=[MemoryType.FACT]),
        as_of=as_of,
        then=memory.recall(query, memory_types=[MemoryType.FACT], as_of=as_of),
        memories=iter_all(memory),
    )
