"""Staged memory context in a LlamaIndex agent across sessions (issue 22 item 4): the
prompt of a later session holds the facts of the first, their timestamped excerpts, the
user's open item that recall did not return and, only when the chat history the model is
sent lacks them, the session's earlier turns, in that order, within the block's token
budget. A turn the chat history carries is never repeated in the block. Only the LLM is
scripted."""

from __future__ import annotations

from datetime import datetime, timezone

from fakes import scripted_llm
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import Memory as ChatMemory
from memtrellis import Memory, MemoryItem, Scope
from memtrellis.context import CLOSE_TAG, OPEN_TAG
from memtrellis.tokens import count_tokens
from memtrellis.types import SourceKind, SourceRef

from llama_index.memory.memtrellis import MemtrellisMemoryBlock

STAGES = ["Facts:", "Sources:", "Open decisions and action items:", "Recent conversation:"]
TICKETS = "Buy the tickets for the Lisbon trip before Friday"
FIRST = "We are planning the museum trip with Bob."
FIRST_ANSWER = "Happy to help with the museum trip."
QUESTION = "Which museums did I visit in Porto?"
BUDGET = 400
K = 2


def _seed(memory: Memory) -> None:
    for museum, day in (("Serralves", 3), ("Soares dos Reis", 9)):
        memory.store(
            MemoryItem(
                text=f"Alice visited the {museum} museum in Porto.",
                scope=Scope(entity_id="alice", session_id="alice-1"),
                sources=[
                    SourceRef(
                        kind=SourceKind.CHAT,
                        role="user",
                        content=f"Guess what, I went to the {museum} museum in Porto today!",
                        timestamp=datetime(2026, 1, day, 10, tzinfo=timezone.utc),
                    )
                ],
            )
        )
    memory.add(TICKETS, memory_type="action_item", session_id="alice-1")


def _session(memory: Memory, session: str, **options: object) -> ChatMemory:
    block = MemtrellisMemoryBlock(
        memory=memory, mode="fast", k=K, token_budget=BUDGET, session_history=4, **options
    )
    return ChatMemory.from_defaults(session_id=session, memory_blocks=[block])  # type: ignore[list-item]


def _block(prompt: str) -> str:
    assert prompt.count(OPEN_TAG) == 1
    return prompt[prompt.index(OPEN_TAG) : prompt.index(CLOSE_TAG) + len(CLOSE_TAG)]


def _assert_staged(block: str, *, recent: bool) -> None:
    stages = STAGES if recent else STAGES[:-1]
    assert [s for s in STAGES if s in block] == stages
    positions = [block.index(s) for s in stages]
    assert positions == sorted(positions)
    assert "Alice visited the Serralves museum in Porto." in block.split("Sources:")[0]
    assert "- [2026-01-03 10:00, user] Guess what, I went to the Serralves" in block
    assert f"- Action item: {TICKETS} (no deadline" in block
    if recent:
        said = block.split("Recent conversation:\n")[1].splitlines()
        assert said[:2] == [f"- user: {FIRST}", f"- assistant: {FIRST_ANSWER}"]
    assert count_tokens(block) <= BUDGET


async def test_function_agent_later_session_gets_the_stages_and_no_turn_twice(
    memory: Memory,
) -> None:
    _seed(memory)
    recalled = memory.recall(QUESTION, k=K)
    assert TICKETS not in [h.memory.text for h in recalled.items]
    llm, script = scripted_llm(FIRST_ANSWER, "Serralves and Soares dos Reis.")
    agent = FunctionAgent(llm=llm, tools=[], system_prompt="Be brief.")
    session = _session(memory, "alice-2")

    await agent.run(FIRST, memory=session)
    reply = await agent.run(QUESTION, memory=session)

    assert str(reply) == "Serralves and Soares dos Reis."
    prompt = "\n".join(m.content or "" for m in script.calls[-1])
    block = _block(prompt)
    _assert_staged(block, recent=False)
    for text in (FIRST, FIRST_ANSWER):  # in the chat history sent, once, not in the block
        assert text not in block and prompt.count(text) == 1
    assert memory.flush(timeout=60)
    turns = sorted(
        (m.text, m.scope.session_id)
        for m in memory.list(limit=100)
        if m.scope.session_id == "alice-2"
    )
    assert turns == sorted(
        [
            (FIRST, "alice-2"),
            (FIRST_ANSWER, "alice-2"),
            (QUESTION, "alice-2"),
            ("Serralves and Soares dos Reis.", "alice-2"),
        ]
    )


async def test_a_fresh_chat_memory_per_request_gets_the_session_turns_it_lacks(
    memory: Memory,
) -> None:
    # A stateless app: each request builds a new LlamaIndex Memory for the session, so
    # the chat history sent holds only the question; session_history fills the gap.
    _seed(memory)
    llm, script = scripted_llm(FIRST_ANSWER, "Serralves and Soares dos Reis.")
    agent = FunctionAgent(llm=llm, tools=[], system_prompt="Be brief.")

    await agent.run(FIRST, memory=_session(memory, "alice-3"))
    await agent.run(QUESTION, memory=_session(memory, "alice-3"))

    prompt = "\n".join(m.content or "" for m in script.calls[-1])
    _assert_staged(_block(prompt), recent=True)
    for text in (FIRST, FIRST_ANSWER):
        assert prompt.count(text) == 1

    # recent_turns=0: the same request without the recent stage
    llm, script = scripted_llm(FIRST_ANSWER, "Serralves and Soares dos Reis.")
    agent = FunctionAgent(llm=llm, tools=[], system_prompt="Be brief.")
    await agent.run(FIRST, memory=_session(memory, "alice-4", recent_turns=0))
    await agent.run(QUESTION, memory=_session(memory, "alice-4", recent_turns=0))
    block = _block("\n".join(m.content or "" for m in script.calls[-1]))
    _assert_staged(block, recent=False)
