"""A question that names someone (even misspelt) brings what the user said about them
into the model's context through ChatMemoryWrapper: recall hops from the named subject,
and the retriever's documents carry the path in their explanation."""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from memtrellis import Memory, MemoryType
from memtrellis.context import OPEN_TAG

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper, MemoryRetriever

ERRANDS = (
    "renew the passport",
    "pay the heating bill",
    "book the dentist",
    "fix the bike",
    "buy tyres",
    "call the bank",
    "water the plants",
    "return the library books",
    "clean the oven",
    "pick up the dry cleaning",
)
DAYS = ("Monday", "Tuesday", "Wednesday")
CHORES = [f"On {day} I have to {errand}." for day in DAYS for errand in ERRANDS]
DINNER = "Had dinner with Kenji Watanabe at the ramen bar near the station."
QUESTION = "Anything to remember about Kenjii Watanabee?"


def test_a_misspelt_name_in_the_question_brings_its_memory_into_the_context(
    memory: Memory,
) -> None:
    replies = ["Nice!", *(["Noted."] * len(CHORES)), "You had ramen with him."]
    inner = FakeChat(messages=iter(replies))
    chat = ChatMemoryWrapper(inner, memory=memory)
    chat.invoke([HumanMessage(DINNER)])
    for chore in CHORES:
        chat.invoke([HumanMessage(chore)])
    assert memory.flush(30)

    chat.invoke([HumanMessage(QUESTION)])

    context = inner.sent()[0].content
    assert isinstance(context, str) and context.startswith(OPEN_TAG)
    assert DINNER in context
    assert inner.sent()[-1].content == QUESTION
    assert memory.flush(30)
    user_turns = [
        (i.scope.entity_id, i.text, i.memory_type)
        for i in memory.list(limit=100)
        if i.sources[0].role == "user"
    ]
    assert user_turns == [
        ("alice", text, MemoryType.EPISODE) for text in [DINNER, *CHORES, QUESTION]
    ]  # every turn stored once, as said, under the user's entity

    docs = MemoryRetriever(memory=memory, k=4).invoke(QUESTION)
    dinner = next(d for d in docs if d.page_content == DINNER)
    path = dinner.metadata["explanation"]["path"]
    assert [(s["kind"], s["text"], s["edge"]) for s in path["steps"]] == [
        ("subject", "Kenji Watanabe", "mentions"),
        ("memory", DINNER, None),
    ]
