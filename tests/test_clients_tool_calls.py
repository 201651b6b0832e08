"""A turn that is a tool call, or a tool-forced structured answer, is captured from a
patched client: the real openai and anthropic SDKs over mock transports, real Chroma."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai

from memtrellis import Memory
from sdk_fakes import (
    ANTHROPIC_KEY,
    CLAUDE_MODEL,
    OPENAI_KEY,
    _sse,
    captured,
    chat_completion,
    message,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ARGUMENTS = '{"city": "Porto"}'


def _answers(*bodies: Any) -> Iterator[httpx2.Response]:
    for body in bodies:
        if isinstance(body, bytes):
            yield httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)
        else:
            yield httpx2.Response(200, json=body)


def _openai(*bodies: Any) -> tuple[Any, list[dict[str, Any]]]:
    answers, sent = _answers(*bodies), []

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return next(answers)

    transport = httpx2.MockTransport(handle)
    client = openai.OpenAI(api_key=OPENAI_KEY, http_client=httpx2.Client(transport=transport))
    return client, sent


def _tool_call_completion() -> dict[str, Any]:
    body = chat_completion("")
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ARGUMENTS},
            }
        ],
    }
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def _tool_call_chunks() -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-T1",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    head = {"index": 0, "id": "call_1", "type": "function"}
    events = [
        (None, chunk({"role": "assistant", "content": None})),
        (None, chunk({"tool_calls": [{**head, "function": {"name": "get_weather"}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Porto"}'}}]})),
        (None, chunk({}, "tool_calls")),
        (None, "[DONE]"),
    ]
    return _sse(events)


def test_a_tool_call_and_the_answer_after_its_result_are_captured(memory: Memory) -> None:
    client, sent = _openai(_tool_call_completion(), chat_completion("It is 21 °C in Porto."))
    memory.register(client)
    question = [{"role": "user", "content": "What's the weather in Porto?"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=question, tools=[WEATHER])
    [call] = first.choices[0].message.tool_calls  # what the user gets is the SDK's own
    assert call.function.arguments == ARGUMENTS
    follow_up = [
        *question,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_1", "content": "21 °C, sunny"},
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=follow_up)
    assert sent[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == ARGUMENTS

    items = captured(memory)
    assert [(i.sources[0].role, i.text) for i in items] == [
        ("user", "What's the weather in Porto?"),
        ("assistant", '[tool call] get_weather({"city": "Porto"})'),
        ("assistant", "It is 21 °C in Porto."),
    ]
    found = [h.memory.text for h in memory.recall("get_weather Porto").items]
    assert '[tool call] get_weather({"city": "Porto"})' in found  # the call is searchable


def test_a_streamed_tool_call_is_gathered_from_its_fragments(memory: Memory) -> None:
    client, _ = _openai(_tool_call_chunks())
    memory.register(client)
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Weather in Porto?"}],
        tools=[WEATHER],
        stream=True,
    )
    fragments = [
        c.choices[0].delta.tool_calls[0].function.arguments
        for c in stream
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert "".join(f or "" for f in fragments) == ARGUMENTS  # the user's stream, unchanged
    items = captured(memory)
    assert [i.text for i in items] == [
        "Weather in Porto?",
        '[tool call] get_weather({"city": "Porto"})',
    ]
    call = items[1].sources[1].tool  # gathered from the fragments, with the call's id
    assert call is not None and (call.name, call.call_id, call.arguments) == (
        "get_weather",
        "call_1",
        ARGUMENTS,
    )


def test_a_tool_forced_structured_answer_is_the_captured_reply(memory: Memory) -> None:
    answer = {"name": "Ana", "allergies": ["peanuts"]}
    body = message("")
    body["content"] = [
        {"type": "tool_use", "id": "toolu_1", "name": "record_profile", "input": answer}
    ]
    body["stop_reason"] = "tool_use"
    answers = _answers(body)
    transport = httpx2.MockTransport(lambda request: next(answers))
    client = memory.register(
        anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=httpx2.Client(transport=transport))
    )
    reply = client.messages.create(
        model=CLAUDE_MODEL,
        max_tokens=200,
        tool_choice={"type": "tool", "name": "record_profile"},
        tools=[{"name": "record_profile", "input_schema": {"type": "object"}}],
        messages=[{"role": "user", "content": "I'm Ana and I'm allergic to peanuts."}],
    )
    assert reply.content[0].input == answer
    assert [i.text for i in captured(memory)] == [
        "I'm Ana and I'm allergic to peanuts.",
        '[tool call] record_profile({"name": "Ana", "allergies": ["peanuts"]})',
    ]


def test_an_anthropic_tool_result_is_a_tool_message_not_the_users(memory: Memory) -> None:
    answers = _answers(message("Sunny, 21 °C."))
    transport = httpx2.MockTransport(lambda request: next(answers))
    client = memory.register(
        anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=httpx2.Client(transport=transport))
    )
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Porto"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 °C, sunny"}
    client.messages.create(
        model=CLAUDE_MODEL,
        max_tokens=100,
        messages=[
            {"role": "user", "content": "Weather in Porto?"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ],
    )
    items = captured(memory)
    # only what is new after the last assistant message: the tool's output (a tool turn,
    # kept out of memories by default) and the reply; never stored as something the user said
    assert [(i.sources[0].role, i.text) for i in items] == [("assistant", "Sunny, 21 °C.")]
    assert not any("21 °C, sunny" in i.text for i in memory.list())
