"""`memtrellis mcp` driven by the MCP SDK's own client over stdio, as an agent would."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from memtrellis import Memory
from memtrellis.testing import HashingEmbedder

SCRIPT = str(Path(sys.executable).with_name("memtrellis"))


def _server(store: Path, entity: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=SCRIPT,
        args=["--path", str(store), "--embedder", "hashing", "--entity", entity, "mcp"],
        env={
            "ANONYMIZED_TELEMETRY": "False",
            **{k: v for k, v in os.environ.items() if k.startswith("TIKTOKEN")},
        },
    )


def _data(result: CallToolResult) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    [content] = result.content
    assert isinstance(content, TextContent)
    return json.loads(content.text)


def _error(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    with Memory(path, embedder=HashingEmbedder()) as memory:
        memory.add("Bob's safe code is 4711", entity_id="bob")
    return path


async def test_an_agent_remembers_recalls_updates_and_forgets(store: Path) -> None:
    async with Client(_server(store, "alice"), read_timeout_seconds=120) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {
            "remember",
            "recall",
            "relate",
            "list_memories",
            "get_memory",
            "update_memory",
            "forget",
            "memory_history",
        }
        stored = _data(
            await client.call_tool(
                "remember",
                {
                    "messages": [
                        {"role": "user", "content": "My sister Clara moved to Lisbon.", "id": "m1"}
                    ]
                },
            )
        )["memories"]
        assert [m["sources"][0]["message_id"] for m in stored] == ["m1"]
        assert stored[0]["scope"]["entity_id"] == "alice"
        memory_id = stored[0]["id"]

        recalled = _data(await client.call_tool("recall", {"query": "Where does Clara live?"}))
        assert [h["memory"]["id"] for h in recalled["items"]] == [memory_id]
        assert "My sister Clara moved to Lisbon." in recalled["context"]
        assert recalled["items"][0]["explanation"]["final_score"] > 0
        related = _data(await client.call_tool("relate", {"a": "clara", "b": "Lisbon"}))
        [path] = related["paths"]
        assert [s["text"] for s in path["steps"]] == [
            "Clara",
            "My sister Clara moved to Lisbon.",
            "Lisbon",
        ]
        assert path["steps"][1]["memory"]["sources"][0]["message_id"] == "m1"
        bobs = _data(await client.call_tool("relate", {"a": "Bob", "b": "safe code"}))
        assert bobs["paths"] == []  # Bob's memories are not the server's entity's

        updated = _data(
            await client.call_tool(
                "update_memory", {"memory_id": memory_id, "text": "Clara lives in Porto now."}
            )
        )
        assert updated["text"] == "Clara lives in Porto now."
        history = _data(await client.call_tool("memory_history", {"memory_id": memory_id}))
        assert [e["action"] for e in history["events"]] == ["created", "updated"]
        listed = _data(await client.call_tool("list_memories", {}))
        assert [m["id"] for m in listed["items"]] == [memory_id]

        assert _data(await client.call_tool("forget", {"memory_id": memory_id})) == {"forgotten": 1}
        gone = await client.call_tool("get_memory", {"memory_id": memory_id})
        assert "no memory with id" in _error(gone)
    with Memory(store, embedder=HashingEmbedder()) as memory:
        assert memory.list(entity_id="alice") == []


async def test_tools_stay_in_the_servers_scope_and_report_bad_input(store: Path) -> None:
    with Memory(store, embedder=HashingEmbedder()) as memory:
        [bobs] = memory.list(entity_id="bob")
    async with Client(_server(store, "alice"), read_timeout_seconds=120) as client:
        for tool in ("get_memory", "forget", "memory_history"):
            assert "no memory with id" in _error(
                await client.call_tool(tool, {"memory_id": bobs.id})
            )
        await client.call_tool("remember", {"text": "Alice's safe code is 1234"})
        result = _data(await client.call_tool("recall", {"query": "Bob's safe code", "k": 50}))
        assert [h["memory"]["text"] for h in result["items"]] == ["Alice's safe code is 1234"]
        assert "4711" not in result["context"]
        # no tool takes an entity: one named anyway changes nothing
        sneaky = await client.call_tool("recall", {"query": "safe code", "entity_id": "bob"})
        texts = [] if sneaky.is_error else [h["memory"]["text"] for h in _data(sneaky)["items"]]
        assert texts in ([], ["Alice's safe code is 1234"])
        assert _error(await client.call_tool("recall", {"query": "x", "k": 0}))
        assert "exactly one" in _error(await client.call_tool("remember", {}))
        both = await client.call_tool("remember", {"text": "a", "messages": []})
        assert "exactly one" in _error(both)
    with Memory(store, embedder=HashingEmbedder()) as memory:
        assert [m.text for m in memory.list(entity_id="bob")] == ["Bob's safe code is 4711"]
        assert [m.text for m in memory.list(entity_id="alice")] == ["Alice's safe code is 1234"]
