"""Staged memory context in a LlamaIndex agent across sessions (issue 22 item 4): the
prompt of the second session holds the facts of the first, their timestamped excerpts,
the user's open item that recall did not return and the session's recent turns, in that
order, within the block's token budget. Only the LLM is scripted."""

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


def _session(memory: Memory, session: str) -> ChatMemory:
    block = MemtrellisMemoryBlock(memory=memory, mode="fast", k=K, token_budget=BUDGET)
    return ChatMemory.from_defaults(session_id=session, memory_blocks=[block])  # type: ignore[list-item]


async def test_function_agent_second_session_prompt_shows_the_stages(memory: Memory) -> None:
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
    assert prompt.count(OPEN_TAG) == 1
    block = prompt[prompt.index(OPEN_TAG) : prompt.index(CLOSE_TAG) + len(CLOSE_TAG)]
    assert [s for s in STAGES if s in block] == STAGES
    positions = [block.index(s) for s in STAGES]
    assert positions == sorted(positions)
    assert "Alice visited the Serralves museum in Porto." in block.split("Sources:")[0]
    assert "- [2026-01-03 10:00, user] Guess what, I went to the Serralves" in block
    assert f"- Action item: {TICKETS} (no deadline" in block
    recent = block.split("Recent conversation:\n")[1].splitlines()
    assert recent[:2] == [f"- user: {FIRST}", f"- assistant: {FIRST_ANSWER}"]
    assert count_tokens(block) <= BUDGET
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
