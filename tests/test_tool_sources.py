"""Tool calls and tool results as sources of the memories a turn makes (issue 23).

An answer made after tools ran carries each call (name, id, arguments) and each result
(excerpt, the call it answers) as sources; a call-only message an answer follows is no
memory of its own, one the turn ends on is; resent histories add nothing; export and
import keep the sources; the memory-context block shows what an answer came from.
"""

from __future__ import annotations

import json
from pathlib import Path

from memtrellis import Memory, SourceKind, ToolUse
from memtrellis.context import build_context, memory_line, new_turn, tool_trail
from memtrellis.testing import HashingEmbedder, ScriptedLLM
from memtrellis.tool_calls import mark_memory_tools

ARGUMENTS = '{"city": "Porto"}'


def _history() -> list[dict[str, object]]:
    """An agent's turn as an OpenAI app keeps it: question, call, result, answer."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": ARGUMENTS}}  # fmt: skip
    return [
        {"role": "user", "content": "What's the weather in Porto?", "id": "u1"},
        {"role": "assistant", "content": None, "tool_calls": [call], "id": "a1"},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, sunny", "id": "t1"},
        {"role": "assistant", "content": "It is 18 °C and sunny in Porto.", "id": "a2"},
    ]


def test_an_answer_carries_the_call_and_the_result_it_came_from(tmp_path: Path) -> None:
    with Memory(tmp_path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        items = memory.add(_history(), mode="fast")
        assert [i.text for i in items] == [
            "What's the weather in Porto?",
            "It is 18 °C and sunny in Porto.",
        ]  # the call-only message is a source of the answer, not a memory of its own
        answer = items[1]
        assert [(s.kind, s.message_id, s.role) for s in answer.sources] == [
            (SourceKind.CHAT, "a2", "assistant"),
            (SourceKind.TOOL_CALL, "a1", "assistant"),
            (SourceKind.TOOL_RESULT, "t1", "tool"),
        ]
        call, result = answer.sources[1], answer.sources[2]
        assert call.tool == ToolUse(name="get_weather", call_id="call_1", arguments=ARGUMENTS)
        assert call.content == 'get_weather({"city": "Porto"})'
        assert result.content == "18 °C, sunny" and result.tool == call.tool
        assert tool_trail(answer.sources) == ['get_weather({"city": "Porto"}) → 18 °C, sunny']

        # still one message as it was said (its tools do not make it a fact)
        assert memory_line(answer).endswith("assistant] It is 18 °C and sunny in Porto.")
        block = build_context(memory.recall("weather in Porto", k=4), token_budget=400)
        said, trail = block.text.split("Sources:\n")
        assert "assistant] It is 18 °C and sunny in Porto." in said
        assert 'tool] get_weather({"city": "Porto"}) → 18 °C, sunny' in trail
        assert memory.add(_history(), mode="fast") == []  # resent: nothing new


def test_a_call_the_turn_ends_on_is_a_memory_with_its_call(tmp_path: Path) -> None:
    with Memory(tmp_path, entity_id="ana", embedder=HashingEmbedder()) as memory:
        [_, call] = memory.add(_history()[:2], mode="fast")
        assert call.text == '[tool call] get_weather({"city": "Porto"})'
        assert [s.kind for s in call.sources] == [SourceKind.CHAT, SourceKind.TOOL_CALL]
        assert call.sources[1].tool is not None and call.sources[1].tool.call_id == "call_1"


def test_anthropic_shaped_blocks_and_a_failed_tool(tmp_path: Path) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "tea"}}
    failed = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
              "content": "search is down"}  # fmt: skip
    chat = [
        {"role": "user", "content": "Find me a tea shop", "id": "u1"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me look."}, use],
            "id": "a1",
        },
        {"role": "user", "content": [failed], "id": "t1"},
        {"role": "assistant", "content": "Sorry, search is down.", "id": "a2"},
    ]
    with Memory(tmp_path, entity_id="bo", embedder=HashingEmbedder()) as memory:
        items = memory.add(chat, mode="fast")
        texts = [i.text for i in items]
        # a message with words and a call stays a memory; the tool output is not the user's
        assert texts == [
            "Find me a tea shop",
            'Let me look.\n[tool call] search({"q": "tea"})',
            "Sorry, search is down.",
        ]
        result = items[2].sources[-1]
        assert result.kind is SourceKind.TOOL_RESULT and result.role == "tool"
        assert result.tool is not None and result.tool.failed and result.tool.name == "search"
        assert tool_trail(items[2].sources) == ['search({"q": "tea"}) → (failed) search is down']


def test_tool_sources_survive_export_and_import(tmp_path: Path) -> None:
    with Memory(tmp_path / "a", entity_id="ana", embedder=HashingEmbedder()) as memory:
        memory.add(_history(), mode="fast")
        exported = tmp_path / "ana.jsonl"
        memory.export(exported)
    lines = [json.loads(line) for line in exported.read_text("utf-8").splitlines()]
    kinds = [s["kind"] for line in lines for s in line["memory"]["sources"]]
    assert "tool_call" in kinds and "tool_result" in kinds
    with Memory(tmp_path / "b", embedder=HashingEmbedder()) as other:
        other.import_(exported)
        [answer] = [m for m in other.list(entity_id="ana") if m.text.startswith("It is")]
        assert tool_trail(answer.sources) == ['get_weather({"city": "Porto"}) → 18 °C, sunny']


def test_a_tool_loop_over_calls_carries_the_exchange_as_context() -> None:
    """The call that sends a tool's result captures the result and the answer, with the
    question and the call before them marked as context (stored by the earlier call)."""
    sent = _history()[:3]
    turn = new_turn(sent, {"role": "assistant", "content": "It is 18 °C."})
    assert [(m["role"], m.get("context", False)) for m in turn] == [
        ("user", True),
        ("assistant", True),
        ("tool", False),
        ("assistant", False),
    ]
    assert turn[1]["tool_calls"] == [
        {"name": "get_weather", "arguments": ARGUMENTS, "id": "call_1"}
    ]
    assert turn[2]["tool_call_id"] == "call_1"
    assert new_turn(sent[:1], None) == [{"role": "user", "content": sent[0]["content"], "id": "u1"}]


def test_memtrellis_own_memory_tools_are_left_out_of_a_captured_turn() -> None:
    mark_memory_tools(["save_memory"])
    call = {"id": "c9", "name": "save_memory", "arguments": {"content": "Ana is vegetarian"}}
    sent = [
        {"role": "user", "content": "I'm vegetarian"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c9", "content": "Saved memory m1: Ana is vegetarian"},
    ]
    assert new_turn(sent[:1], sent[1]) == [{"role": "user", "content": "I'm vegetarian"}]
    assert new_turn(sent, {"role": "assistant", "content": "Noted."}) == [
        {"role": "user", "content": "I'm vegetarian", "context": True},
        {"role": "assistant", "content": "Noted."},
    ]


def test_refine_gives_the_model_the_tool_messages_back(tmp_path: Path) -> None:
    """``Memory.refine`` rebuilds the conversation from fast memories, the calls and
    results of an answer's sources included, and the fine memory keeps them."""
    sent: list[str] = []

    def answer(messages: list[dict[str, str]]) -> str:
        sent.append(messages[-1]["content"])
        if "<trajectory>" in messages[-1]["content"]:
            return '{"succeeded": false}'
        memory = {"value": "Porto was 18 °C and sunny", "memory_type": "event",
                  "source_ids": ["a2"]}  # fmt: skip
        return json.dumps({"memories": [memory]})

    llm = ScriptedLLM(answer)
    with Memory(tmp_path, entity_id="ana", embedder=HashingEmbedder(), llm=llm) as memory:
        memory.add(_history(), mode="fast")
        report = memory.refine()
        assert len(report.created) == 1 and len(report.superseded) == 1
        lines = [line for line in sent[0].splitlines() if line.startswith("[")]
        assert [line.split()[0] for line in lines] == ["[u1]", "[a1]", "[t1]", "[a2]"]
        assert 'assistant: [tool call] get_weather({"city": "Porto"})' in lines[1]
        [refined] = [m for m in memory.list() if m.text == "Porto was 18 °C and sunny"]
        assert tool_trail(refined.sources) == ['get_weather({"city": "Porto"}) → 18 °C, sunny']
        assert len(sent) == 2  # the trajectory was shown for a skill too (not one here)
