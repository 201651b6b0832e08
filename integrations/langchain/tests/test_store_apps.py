"""MemtrellisStore inside the apps that use a LangGraph store: a StateGraph node reading
``runtime.store`` and a ``create_agent`` tool reading ``ToolRuntime.store``."""

from __future__ import annotations

import contextlib
import io
import json
import re
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from memtrellis import Memory

from fakes import FakeChat, reply
from langchain_memtrellis import ChatMemoryWrapper, MemtrellisStore


@dataclass
class UserContext:
    user_id: str


def _stored(memory: Memory) -> dict[str, list[tuple[str, Any]]]:
    """Per entity: every memory's text and the store item's key it holds."""
    assert memory.flush(30)
    return {
        entity: sorted(
            (item.text, item.metadata.get("langgraph_store", {}).get("key"))
            for item in memory.list(entity_id=entity)
        )
        for entity in memory.entities()
    }


def test_state_graph_node_reads_and_writes_runtime_store(memory: Memory) -> None:
    """A node that remembers what each user says and answers with what it recalls."""
    seen: list[list[str]] = []

    def remember(state: MessagesState, runtime: Runtime[UserContext]) -> dict[str, Any]:
        assert runtime.store is not None
        namespace = ("memories", runtime.context.user_id)
        said = str(state["messages"][-1].content)
        found = runtime.store.search(namespace, query=said, limit=3)
        seen.append([hit.value["content"] for hit in found])
        if said.startswith("Remember:"):
            fact = said.removeprefix("Remember:").strip()
            runtime.store.put(namespace, f"fact-{len(found)}", {"content": fact})
        recalled = "; ".join(hit.value["content"] for hit in found) or "nothing yet"
        return {"messages": [AIMessage(content=f"I recall: {recalled}")]}

    builder = StateGraph(MessagesState, context_schema=UserContext)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=MemtrellisStore(memory))

    def say(user: str, text: str) -> str:
        state = graph.invoke({"messages": [HumanMessage(text)]}, context=UserContext(user))
        return str(state["messages"][-1].content)

    assert say("ana", "Remember: my sister lives in Lisbon") == "I recall: nothing yet"
    assert say("ben", "Remember: I play the cello") == "I recall: nothing yet"
    assert say("ana", "Where does my sister live?") == "I recall: my sister lives in Lisbon"
    assert say("ben", "What do I play?") == "I recall: I play the cello"

    assert seen == [[], [], ["my sister lives in Lisbon"], ["I play the cello"]]
    assert _stored(memory) == {
        "ana": [("my sister lives in Lisbon", "fact-0")],
        "ben": [("I play the cello", "fact-0")],
    }


async def test_async_graph_with_the_store(memory: Memory) -> None:
    async def note(state: MessagesState, runtime: Runtime[UserContext]) -> dict[str, Any]:
        assert runtime.store is not None
        namespace = ("memories", runtime.context.user_id)
        await runtime.store.aput(namespace, "last", {"content": str(state["messages"][-1].content)})
        item = await runtime.store.aget(namespace, "last")
        assert item is not None
        return {"messages": [AIMessage(content=f"noted {item.value['content']}")]}

    builder = StateGraph(MessagesState, context_schema=UserContext)
    builder.add_node("note", note)
    builder.add_edge(START, "note")
    graph = builder.compile(store=MemtrellisStore(memory))

    state = await graph.ainvoke({"messages": [HumanMessage("tea")]}, context=UserContext("cy"))

    assert state["messages"][-1].content == "noted tea"
    assert _stored(memory) == {"cy": [("tea", "last")]}


@tool
def save_preference(preference: str, runtime: ToolRuntime[UserContext]) -> str:
    """Remember one of the user's preferences."""
    assert runtime.store is not None
    runtime.store.put(("preferences", runtime.context.user_id), "food", {"content": preference})
    return "saved"


@tool
def get_preference(runtime: ToolRuntime[UserContext]) -> str:
    """The user's saved food preference."""
    assert runtime.store is not None
    item = runtime.store.get(("preferences", runtime.context.user_id), "food")
    return item.value["content"] if item is not None else "none saved"


def test_create_agent_tools_use_the_store_across_sessions(memory: Memory) -> None:
    store = MemtrellisStore(memory)

    def session(user: str, calls: list[AIMessage], text: str) -> tuple[FakeChat, dict[str, Any]]:
        model = FakeChat(messages=iter(calls))
        agent = create_agent(
            model,
            tools=[save_preference, get_preference],
            context_schema=UserContext,
            store=store,
        )
        state = agent.invoke({"messages": [HumanMessage(text)]}, context=UserContext(user))
        return model, state

    for user, food in (("ana", "vegetarian"), ("ben", "loves spicy food")):
        session(
            user,
            [reply(name="save_preference", args={"preference": food}), reply("Noted.")],
            f"I am {food}",
        )
    answers = {}
    for user in ("ana", "ben"):
        model, state = session(
            user, [reply(name="get_preference", args={}), reply("Here you go.")], "What do I eat?"
        )
        [tool_message] = [m for m in model.sent(-1) if isinstance(m, ToolMessage)]
        answers[user] = tool_message.content
        assert state["messages"][-1].content == "Here you go."

    assert answers == {"ana": "vegetarian", "ben": "loves spicy food"}
    assert _stored(memory) == {
        "ana": [("vegetarian", "food")],
        "ben": [("loves spicy food", "food")],
    }


def test_store_items_reach_the_chat_wrapper_of_the_same_user(memory: Memory) -> None:
    """What an agent put in the store is memory: the wrapper recalls it for that user."""
    MemtrellisStore(memory).put(("memories", "ana"), "k", {"content": "Ana is allergic to nuts"})
    model = FakeChat(messages=iter(["Noted."]))

    ChatMemoryWrapper(model, memory=memory, entity_id="ana").invoke("Any allergies I have?")

    system = str(model.sent()[0].content)
    assert "Ana is allergic to nuts" in system


DOCS = Path(__file__).resolve().parents[3] / "docs" / "langchain.md"


@pytest.mark.parametrize(
    ("section", "printed"),
    [
        ("LangGraph store", ["my sister lives in Lisbon", "['my sister lives in Lisbon']"]),
        ("Memory tools for agents", ["['Ana is vegetarian']"]),
    ],
)
def test_the_docs_examples_run(
    section: str, printed: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = DOCS.read_text("utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "example.py"
    script.write_text(code, "utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # run_path gives the dataclasses a module
        runpy.run_path(str(script), run_name="docs_example")
    assert out.getvalue().splitlines() == printed


def test_langmems_own_memory_tools_on_the_store(memory: Memory) -> None:
    """LangMem's manage and search tools, unchanged, keep their memories in memtrellis."""
    from langmem import create_manage_memory_tool, create_search_memory_tool

    namespace = ("memories", "{langgraph_user_id}")
    tools = [create_manage_memory_tool(namespace), create_search_memory_tool(namespace)]
    store = MemtrellisStore(memory)

    def session(user: str, calls: list[AIMessage]) -> FakeChat:
        model = FakeChat(messages=iter(calls))
        agent = create_agent(model, tools=tools, store=store)
        config = {"configurable": {"langgraph_user_id": user}}
        agent.invoke({"messages": [HumanMessage("hello")]}, config)
        return model

    for user, fact in (("ana", "Ana is vegetarian"), ("ben", "Ben plays the cello")):
        create = {"content": fact, "action": "create"}
        session(user, [reply(name="manage_memory", args=create), reply("Noted.")])
    assert _stored(memory)["ana"] == [
        ("Ana is vegetarian", store.search(("memories", "ana"))[0].key)
    ]

    [ana] = store.search(("memories", "ana"))
    update = {"content": "Ana is vegan", "action": "update", "id": ana.key}
    session("ana", [reply(name="manage_memory", args=update), reply("Updated.")])
    model = session("ben", [reply(name="search_memory", args={"query": "cello"}), reply("Yes.")])

    [found] = [m for m in model.sent(-1) if isinstance(m, ToolMessage)]
    [hit] = json.loads(str(found.content))
    assert (hit["namespace"], hit["value"]) == (
        ["memories", "ben"],
        {"content": "Ben plays the cello"},
    )
    assert hit["score"] > 0
    stored = _stored(memory)
    assert stored == {
        "ana": [("Ana is vegan", ana.key)],
        "ben": [("Ben plays the cello", stored["ben"][0][1])],
    }
