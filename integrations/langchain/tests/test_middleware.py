"""The LCEL step: prompt | memory_context(memory) | llm."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.prompts import ChatPromptTemplate
from memtrellis import Memory, StoreClosedError
from memtrellis.context import OPEN_TAG
from memtrellis.testing import HashingEmbedder

from fakes import FakeChat
from langchain_memtrellis import memory_context

PROMPT = ChatPromptTemplate.from_messages([("system", "Be brief."), ("human", "{q}")])


@pytest.fixture
def remembered(memory: Memory) -> Memory:
    memory.add("Alice is vegetarian")
    return memory


def test_prompt_value_in_chat_prompt_value_out(remembered: Memory) -> None:
    value = (PROMPT | memory_context(remembered)).invoke({"q": "Is Alice vegetarian?"})

    assert isinstance(value, ChatPromptValue)
    system, human = value.to_messages()
    assert system.content.startswith("Be brief.\n\n" + OPEN_TAG)
    assert "Alice is vegetarian" in system.content
    assert human.content == "Is Alice vegetarian?"


def test_a_list_of_messages_gets_a_system_message(remembered: Memory) -> None:
    out = memory_context(remembered, position="insert").invoke(
        [HumanMessage("What should Alice eat? She is vegetarian")]
    )

    assert isinstance(out[0], SystemMessage)
    assert "Alice is vegetarian" in out[0].content
    assert out[1].content == "What should Alice eat? She is vegetarian"


async def test_in_a_chain_before_the_model(remembered: Memory) -> None:
    llm = FakeChat(messages=iter(["Lentil soup."]))
    chain = PROMPT | memory_context(remembered) | llm

    assert (await chain.ainvoke({"q": "Dinner for a vegetarian?"})).content == "Lentil soup."
    assert "Alice is vegetarian" in llm.sent()[0].content


def test_nothing_recalled_leaves_the_prompt_as_it_was(memory: Memory) -> None:
    value = (PROMPT | memory_context(memory)).invoke({"q": "anything?"})

    assert [m.content for m in value.to_messages()] == ["Be brief.", "anything?"]


def test_recall_failure_passes_the_messages_through_unless_strict(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "s", embedder=HashingEmbedder())
    memory.close()
    step = memory_context(memory)

    value = (PROMPT | step).invoke({"q": "hello?"})

    assert [m.content for m in value.to_messages()] == ["Be brief.", "hello?"]
    assert step.stats.recall_failures == 1
    with pytest.raises(StoreClosedError):
        (PROMPT | memory_context(memory, strict=True)).invoke({"q": "hello?"})
