"""A group chat through ChatMemoryWrapper: a burst of one person's messages is one memory,
and a question about what someone said recalls that person's memory first (issue 21)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from memtrellis import Memory

from fakes import FakeChat
from langchain_memtrellis import ChatMemoryWrapper

BURST = [
    HumanMessage("omg", name="Ana"),
    HumanMessage("I got the job at the bakery!!", name="Ana"),
    HumanMessage("start monday", name="Ana"),
]


def stored(memory: Memory) -> list[tuple[str, list[tuple[str | None, str | None, str]]]]:
    assert memory.flush(30)
    return [
        (item.text, [(s.role, s.speaker, s.content) for s in item.sources])
        for item in memory.list(limit=100)
    ]


def test_a_burst_is_stored_as_one_memory_and_recalled_for_its_speaker(memory: Memory) -> None:
    inner = FakeChat(
        messages=iter(["Congratulations, Ana!", "It can be early mornings.", "She got it!"])
    )
    chat = ChatMemoryWrapper(inner, memory=memory)

    first = chat.invoke(BURST)
    history = [*BURST, first]
    second = chat.invoke([*history, HumanMessage("the bakery job sounds tiring tbh", name="Bo")])

    assert stored(memory) == [
        (
            "omg\nI got the job at the bakery!!\nstart monday",
            [
                ("user", "Ana", "omg"),
                ("user", "Ana", "I got the job at the bakery!!"),
                ("user", "Ana", "start monday"),
            ],
        ),
        ("Congratulations, Ana!", [("assistant", None, "Congratulations, Ana!")]),
        ("the bakery job sounds tiring tbh", [("user", "Bo", "the bakery job sounds tiring tbh")]),
        ("It can be early mornings.", [("assistant", None, "It can be early mornings.")]),
    ]
    [burst] = [item for item in memory.list() if len(item.sources) == 3]
    assert len({s.message_id for s in burst.sources}) == 3  # each message its own id
    # before the question below is itself captured (stored, it is the closest match to
    # itself: what is recalled after that depends on whether its capture has finished)
    result = memory.recall("What did Ana say about the bakery?", k=3)
    assert result.items[0].memory.id == burst.id
    assert result.items[0].explanation.boosts == ["speaker Ana"]

    question = HumanMessage("What did Ana say about the bakery?", name="Bo")
    answer = chat.invoke(
        [*history, HumanMessage("the bakery job sounds tiring tbh", name="Bo"), second, question]
    )

    assert answer.content == "She got it!"
    block = inner.sent()[0].content
    said = block.split("From earlier conversations:\n", 1)[1].splitlines()
    assert said[0].endswith(", Ana] omg I got the job at the bakery!! start monday")
    # Bo's message is in the prompt: the block does not show it again
    assert block.count("the bakery job sounds tiring tbh") == 0
    assert isinstance(first, AIMessage)
