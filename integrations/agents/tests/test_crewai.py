"""CrewAI: a real Crew whose agent's LLM is scripted (CrewAI's ``BaseLLM`` subclassed),
with `MemtrellisMemory` as its memory; two users, each with memory of their own; no
network (an audit hook refuses every connection while the crews run)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
crewai = pytest.importorskip("crewai")

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.crews.crew_output import CrewOutput  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from memtrellis import Memory  # noqa: E402
from memtrellis.registry import integration_names  # noqa: E402

from memtrellis_agents.crewai import MemtrellisMemory, MemtrellisStorage  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
_OFFLINE = threading.local()


def _no_network(event: str, args: Any) -> None:
    if getattr(_OFFLINE, "on", False) and event in ("socket.connect", "socket.getaddrinfo"):
        raise ConnectionRefusedError(f"the test is offline: {event} {args!r}"[:200])


sys.addaudithook(_no_network)


@pytest.fixture
def offline() -> Iterator[None]:
    _OFFLINE.on = True
    try:
        yield
    finally:
        _OFFLINE.on = False


class ScriptedLLM(BaseLLM):
    """CrewAI's LLM answering from a script, keeping every prompt it was sent."""

    def __init__(self, *answers: str) -> None:
        super().__init__(model="scripted")
        self._answers = list(answers)
        self.prompts: list[str] = []

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        shown = messages if isinstance(messages, str) else [m["content"] for m in messages]
        self.prompts.append("\n".join(shown) if isinstance(shown, list) else shown)
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        return f"Final Answer: {answer}"

    def supports_function_calling(self) -> bool:
        return False


def _crew(memory: Memory, user: str, llm: ScriptedLLM, question: str) -> Crew:
    agent = Agent(role="Concierge", goal="Help the user", backstory="You know the user.", llm=llm)
    task = Task(description=question, expected_output="One short answer.", agent=agent)
    return Crew(agents=[agent], tasks=[task], memory=MemtrellisMemory(memory, entity_id=user))


def test_each_user_s_crew_recalls_only_their_own_memory(memory: Memory, offline: None) -> None:
    alice_llm = ScriptedLLM("Alice drinks green tea every morning.", "Green tea for Alice.")
    bob_llm = ScriptedLLM("Bob drinks black coffee with no sugar.", "Coffee for Bob.")

    _crew(memory, "alice", alice_llm, "Find out what Alice drinks in the morning.").kickoff()
    _crew(memory, "bob", bob_llm, "Find out what Bob drinks in the morning.").kickoff()
    answer = _crew(memory, "alice", alice_llm, "Suggest a morning drink for Alice.").kickoff()

    assert isinstance(answer, CrewOutput) and answer.raw == "Green tea for Alice."
    prompt = alice_llm.prompts[-1]  # what the agent was sent for the second task
    assert "Alice drinks green tea every morning." in prompt  # recalled into the task
    assert "coffee" not in prompt.lower()
    memory.flush(30)
    alice = [m.text for m in memory.list(entity_id="alice")]
    bob = [m.text for m in memory.list(entity_id="bob")]
    assert any("Alice drinks green tea" in t for t in alice)
    assert any("Bob drinks black coffee" in t for t in bob)
    assert not any("coffee" in t for t in alice) and not any("tea" in t for t in bob)
    assert memory.health().adapter_counts.get("crewai.capture", 0) >= 3


def test_register_gives_a_crew_memtrellis_memory(memory: Memory, offline: None) -> None:
    assert "crewai" in integration_names()
    llm = ScriptedLLM("Ana's cat is called Miso.")
    agent = Agent(role="Helper", goal="Help", backstory="Kind.", llm=llm)
    task = Task(description="Name Ana's cat.", expected_output="A name", agent=agent)
    crew = Crew(agents=[agent], tasks=[task])

    crew_memory = memory.register(crewai=crew, entity_id="ana")

    assert isinstance(crew_memory, MemtrellisMemory) and crew.memory is crew_memory
    crew.kickoff()
    crew_memory.drain_writes()
    assert crew_memory.recall("cat")[0].record.content.endswith("Miso.")
    assert crew_memory.info().record_count == len(memory.list(entity_id="ana")) >= 1
    crew.reset_memories(command_type="memory")
    assert memory.list(entity_id="ana") == []


def test_records_scopes_and_forgetting(memory: Memory) -> None:
    crew_memory = MemtrellisMemory(memory, entity_id="ana", root_scope="/crew/trip")
    kept = crew_memory.remember("Ana flies to Lisbon on Friday", categories=["travel"])
    crew_memory.remember("Ana's passport expires in May", scope="documents")
    assert kept is not None and kept.scope == "/crew/trip" and kept.categories == ["travel"]
    assert crew_memory.list_records()[0].content == "Ana's passport expires in May"
    assert crew_memory.list_scopes() == ["/crew/trip/documents"]
    assert crew_memory.list_categories() == {"travel": 1}
    updated = crew_memory.update(kept.id, content="Ana flies to Lisbon on Saturday")
    assert memory.get(kept.id, entity_id="ana").text == updated.content
    assert crew_memory.forget(scope="documents") == 1
    assert [r.content for r in crew_memory.list_records()] == ["Ana flies to Lisbon on Saturday"]
    assert MemtrellisMemory(memory, entity_id="bob").list_records() == []


def test_a_failing_memory_never_fails_the_task(memory: Memory, offline: None) -> None:
    crew_memory = MemtrellisMemory(memory, entity_id="ana")
    llm = ScriptedLLM("Done.")
    agent = Agent(role="Helper", goal="Help", backstory="Kind.", llm=llm)
    task = Task(description="Say done.", expected_output="done", agent=agent)
    memory.close()  # every read and write of memory now fails
    answer = Crew(agents=[agent], tasks=[task], memory=crew_memory).kickoff()
    assert isinstance(answer, CrewOutput) and answer.raw == "Done."
    assert crew_memory.recall("anything") == []
    assert crew_memory.stats.recall_failures >= 2 and crew_memory.stats.capture_failures >= 1


def test_the_storage_refuses_vector_search(memory: Memory) -> None:
    with pytest.raises(NotImplementedError, match="recalls by text"):
        MemtrellisStorage(memory, {"entity_id": "ana"}).search([0.1, 0.2])


def test_the_guide_s_crewai_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: None
) -> None:
    # the page's CrewAI example is a ``py`` block: the dev environment, which runs the
    # page's ``python`` blocks, has no CrewAI
    page = (ROOT / "docs" / "agent-frameworks.md").read_text("utf-8")
    [block] = re.findall(r"```py\n(.*?)```", page.split("## CrewAI\n", 1)[1], re.DOTALL)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "agent-frameworks.md#crewai", "exec", dont_inherit=True), {})
    assert out.getvalue().splitlines() == ["True"]


def test_public_names_have_a_docstring_with_an_example() -> None:
    import memtrellis_agents.crewai

    lacking = runpy.run_path(str(ROOT / "tools" / "docstring_examples.py"))["lacking_examples"]
    assert lacking([memtrellis_agents.crewai]) == []
