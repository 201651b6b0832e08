"""A whole tool loop through each patched client: the answer's memory carries the call
(name, id, arguments) and the tool's result as sources (issue 23).

Each test runs the real SDK over a mock transport (httpx's, botocore's hook): the first
call's reply is a tool call, the app runs the tool and sends its result back in the
SDK's own shape, the second call's reply answers from it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from memtrellis import Memory, MemoryItem, SourceKind
from memtrellis.context import tool_trail
from provider_fakes import (
    BedrockWire,
    GoogleWire,
    OllamaWire,
    bedrock_client,
    google_client,
    ollama_client,
)
from sdk_fakes import ANTHROPIC_KEY, CLAUDE_MODEL, OPENAI_KEY, captured, chat_completion, message
from sdk_fakes import response as responses_body
from test_attachments import B64, DIGEST, PIXELS

ARGS = {"city": "Porto"}
QUESTION = "What's the weather in Porto?"
ANSWER = "It is 18 °C in Porto."
CALL_TEXT = '[tool call] get_weather({"city": "Porto"})'


def _answers(*bodies: Any) -> Iterator[httpx2.Response]:
    yield from (httpx2.Response(200, json=body) for body in bodies)


def _recording(*bodies: Any) -> tuple[httpx2.MockTransport, list[dict[str, Any]]]:
    answers, sent = _answers(*bodies), []

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return next(answers)

    return httpx2.MockTransport(handle), sent


def _loop_memories(memory: Memory, result_text: str, call_id: str | None) -> MemoryItem:
    """The three memories of a tool loop; the answer's, with its tool sources checked."""
    items = captured(memory)
    assert [i.text for i in items] == [QUESTION, CALL_TEXT, ANSWER]
    call_memory, answer = items[1], items[2]
    assert [s.kind for s in call_memory.sources] == [SourceKind.CHAT, SourceKind.TOOL_CALL]
    assert [s.kind for s in answer.sources] == [
        SourceKind.CHAT,
        SourceKind.TOOL_CALL,
        SourceKind.TOOL_RESULT,
    ]
    call, result = answer.sources[1].tool, answer.sources[2].tool
    assert call is not None and result is not None
    assert (call.name, json.loads(call.arguments), call.call_id) == ("get_weather", ARGS, call_id)
    assert (result.name, result.call_id) == ("get_weather", call_id)
    assert result_text in answer.sources[2].content
    assert tool_trail(answer.sources)[0].startswith('get_weather({"city": "Porto"}) → ')
    return answer


def _openai_call(call_id: str) -> dict[str, Any]:
    body = chat_completion("")
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(ARGS)},
            }
        ],
    }
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def test_openai_chat_completions(memory: Memory) -> None:
    transport, sent = _recording(_openai_call("call_1"), chat_completion(ANSWER))
    client = memory.register(
        openai.OpenAI(api_key=OPENAI_KEY, http_client=httpx2.Client(transport=transport))
    )
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=history)
    history += [
        first.choices[0].message,  # the SDK's own object, as apps append it
        {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, sunny"},
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=history)
    assert sent[1]["messages"][-1]["tool_call_id"] == "call_1"  # sent on unchanged
    _loop_memories(memory, "18 °C, sunny", "call_1")


def test_openai_responses_function_call_items(memory: Memory) -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "get_weather",
            "arguments": json.dumps(ARGS), "status": "completed"}  # fmt: skip
    called = responses_body("")
    called["output"] = [item]
    transport, _ = _recording(called, responses_body(ANSWER))
    client = memory.register(
        openai.OpenAI(api_key=OPENAI_KEY, http_client=httpx2.Client(transport=transport))
    )
    first = client.responses.create(model="gpt-4.1-mini", input=QUESTION)
    [call] = first.output
    client.responses.create(
        model="gpt-4.1-mini",
        input=[
            {"role": "user", "content": QUESTION},
            call,  # the output item, passed back as input
            {"type": "function_call_output", "call_id": "call_9", "output": "18 °C, sunny"},
        ],
    )
    _loop_memories(memory, "18 °C, sunny", "call_9")


def test_anthropic_tool_use_and_parallel_results(memory: Memory) -> None:
    uses = [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": ARGS},
        {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {"tz": "WET"}},
    ]
    called = message("")
    called["content"], called["stop_reason"] = uses, "tool_use"
    transport, _ = _recording(called, message(ANSWER))
    client = memory.register(
        anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=httpx2.Client(transport=transport))
    )
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    first = client.messages.create(model=CLAUDE_MODEL, max_tokens=200, messages=history)
    results = [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 °C, sunny"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "09:15", "is_error": False},
    ]
    history += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": results},
    ]
    client.messages.create(model=CLAUDE_MODEL, max_tokens=200, messages=history)

    items = captured(memory)
    assert [i.text for i in items] == [
        QUESTION,
        f'{CALL_TEXT}\n[tool call] get_time({{"tz": "WET"}})',
        ANSWER,
    ]
    answer = items[2]
    assert [(s.kind.value, s.tool.call_id if s.tool else None) for s in answer.sources] == [
        ("chat", None),
        ("tool_call", "toolu_1"),
        ("tool_call", "toolu_2"),
        ("tool_result", "toolu_1"),
        ("tool_result", "toolu_2"),
    ]
    assert tool_trail(answer.sources) == [
        'get_weather({"city": "Porto"}) → 18 °C, sunny',
        'get_time({"tz": "WET"}) → 09:15',
    ]


def test_google_function_call_and_function_response_parts(memory: Memory) -> None:
    wire = GoogleWire({"call": "get_weather", "args": ARGS}, ANSWER)
    client = memory.register(google_client(wire))
    first = client.models.generate_content(model="gemini-3-flash", contents=QUESTION)
    contents = [
        {"role": "user", "parts": [{"text": QUESTION}]},
        first.candidates[0].content,  # the SDK's Content with its function_call part
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "get_weather", "response": {"output": "18 °C"}}}
            ],
        },
    ]
    client.models.generate_content(model="gemini-3-flash", contents=contents)
    # Gemini gives calls no id: the result names its function
    _loop_memories(memory, '{"output": "18 °C"}', None)


def test_bedrock_tool_use_and_tool_result_blocks(memory: Memory) -> None:
    wire = BedrockWire({"call": "get_weather", "args": ARGS}, ANSWER)
    client = memory.register(bedrock_client(wire))
    messages: list[Any] = [{"role": "user", "content": [{"text": QUESTION}]}]
    first = client.converse(modelId="anthropic.claude-v2", messages=messages)
    result = {"toolUseId": "tooluse_1", "content": [{"text": "18 °C, sunny"}]}
    messages += [
        first["output"]["message"],
        {"role": "user", "content": [{"toolResult": result}]},
    ]
    client.converse(modelId="anthropic.claude-v2", messages=messages)
    _loop_memories(memory, "18 °C, sunny", "tooluse_1")


@pytest.mark.parametrize("stream", [False, True])
def test_ollama_tool_calls_and_tool_messages(memory: Memory, stream: bool) -> None:
    wire = OllamaWire({"call": "get_weather", "args": ARGS}, ANSWER)
    client = memory.register(ollama_client(wire))
    messages: list[Any] = [{"role": "user", "content": QUESTION}]

    def chat() -> Any:
        reply = client.chat(model="llama3.2", messages=messages, stream=stream)
        if not stream:
            return reply.message
        chunks = list(reply)
        return next(c.message for c in chunks if c.message.tool_calls or c.message.content)

    called = chat()
    messages += [called, {"role": "tool", "content": "18 °C, sunny", "tool_name": "get_weather"}]
    chat()
    _loop_memories(memory, "18 °C, sunny", None)  # Ollama calls carry no id


@pytest.mark.filterwarnings("ignore::UserWarning:pydantic")
def test_litellm_completion(memory: Memory) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")
    transport, _ = _recording(_openai_call("call_5"), chat_completion(ANSWER))
    server = openai.OpenAI(
        api_key=OPENAI_KEY,
        base_url="http://localhost:8000/v1",
        http_client=httpx2.Client(transport=transport),
    )
    memory.register(litellm)
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    first = litellm.completion(model="openai/gpt-4o-mini", messages=history, client=server)
    call = first.choices[0].message.tool_calls[0]
    history += [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "18 °C, sunny"},
    ]
    litellm.completion(model="openai/gpt-4o-mini", messages=history, client=server)
    _loop_memories(memory, "18 °C, sunny", "call_5")


# -- a tool's result with an image: inside the result and beside it ------------------------
def _result_images(answer: MemoryItem) -> list[tuple[str, str | None]]:
    [result] = [s for s in answer.sources if s.kind is SourceKind.TOOL_RESULT]
    return [(a.kind, a.sha256) for a in result.attachments]


def test_google_function_response_with_an_image_in_it_and_beside_it(memory: Memory) -> None:
    from google.genai import types

    wire = GoogleWire({"call": "get_weather", "args": ARGS}, ANSWER)
    client = memory.register(google_client(wire))
    first = client.models.generate_content(model="gemini-3-flash", contents=QUESTION)
    radar = types.FunctionResponsePart.from_bytes(data=PIXELS, mime_type="image/png")
    response = types.Part.from_function_response(
        name="get_weather", response={"output": "18 °C"}, parts=[radar]
    )
    photo = types.Part.from_bytes(data=PIXELS[:500], mime_type="image/png")
    contents = [
        types.Content(role="user", parts=[types.Part.from_text(text=QUESTION)]),
        first.candidates[0].content,
        types.Content(role="user", parts=[response, photo]),
    ]
    client.models.generate_content(model="gemini-3-flash", contents=contents)

    answer = _loop_memories(memory, '{"output": "18 °C"}', None)
    photo_digest = hashlib.sha256(PIXELS[:500]).hexdigest()
    assert _result_images(answer) == [("image", DIGEST), ("image", photo_digest)]
    assert "[image]" in answer.sources[2].content


def test_bedrock_tool_result_with_an_image_in_it_and_beside_it(memory: Memory) -> None:
    wire = BedrockWire({"call": "get_weather", "args": ARGS}, ANSWER)
    client = memory.register(bedrock_client(wire))
    messages: list[Any] = [{"role": "user", "content": [{"text": QUESTION}]}]
    first = client.converse(modelId="anthropic.claude-v2", messages=messages)
    radar = {"image": {"format": "png", "source": {"bytes": PIXELS}}}
    result = {"toolUseId": "tooluse_1", "content": [{"text": "18 °C, sunny"}, radar]}
    photo = {"image": {"format": "png", "source": {"bytes": PIXELS[:500]}}}
    messages += [
        first["output"]["message"],
        {"role": "user", "content": [{"toolResult": result}, photo]},
    ]
    client.converse(modelId="anthropic.claude-v2", messages=messages)

    answer = _loop_memories(memory, "18 °C, sunny", "tooluse_1")
    photo_digest = hashlib.sha256(PIXELS[:500]).hexdigest()
    assert _result_images(answer) == [("image", DIGEST), ("image", photo_digest)]


def test_bedrock_tool_result_and_a_user_question_in_one_message(memory: Memory) -> None:
    """A user message holding a tool's result, a new question and a photo: the question
    and the photo are the user's; the tool's output is never stored as the user's words."""
    wire = BedrockWire({"call": "get_weather", "args": ARGS}, ANSWER)
    client = memory.register(bedrock_client(wire))
    messages: list[Any] = [{"role": "user", "content": [{"text": QUESTION}]}]
    first = client.converse(modelId="anthropic.claude-v2", messages=messages)
    result = {"toolUseId": "tooluse_1", "content": [{"text": "18 °C, sunny"}]}
    photo = {"image": {"format": "png", "source": {"bytes": PIXELS}}}
    follow_up = "Is that warm enough for the beach in this photo?"
    messages += [
        first["output"]["message"],
        {"role": "user", "content": [{"toolResult": result}, {"text": follow_up}, photo]},
    ]
    client.converse(modelId="anthropic.claude-v2", messages=messages)

    items = captured(memory)
    assert [i.text for i in items] == [QUESTION, CALL_TEXT, f"{follow_up}\n[image]", ANSWER]
    asked = items[2]
    assert [(s.role, s.content) for s in asked.sources] == [("user", f"{follow_up}\n[image]")]
    assert [(a.kind, a.sha256) for a in asked.sources[0].attachments] == [("image", DIGEST)]


def test_anthropic_tool_result_returning_an_image(memory: Memory) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": ARGS}
    called = message("")
    called["content"], called["stop_reason"] = [use], "tool_use"
    transport, _ = _recording(called, message(ANSWER))
    client = memory.register(
        anthropic.Anthropic(api_key=ANTHROPIC_KEY, http_client=httpx2.Client(transport=transport))
    )
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    first = client.messages.create(model=CLAUDE_MODEL, max_tokens=200, messages=history)
    radar = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "18 °C, sunny"}, radar],
    }
    history += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [result]},
    ]
    client.messages.create(model=CLAUDE_MODEL, max_tokens=200, messages=history)

    answer = _loop_memories(memory, "18 °C, sunny", "toolu_1")
    assert _result_images(answer) == [("image", DIGEST)]


# -- session history after a tool loop -----------------------------------------------------
def test_session_history_after_a_tool_loop_holds_each_message_once(memory: Memory) -> None:
    """A stateless caller asking on after a tool loop gets the loop's question, call and
    answer once each (the question the second call brought as context is the first
    call's), and the tool's output only as the answer's source, never as something said."""
    follow_up = chat_completion("Take a light jacket.")
    transport, sent = _recording(_openai_call("call_1"), chat_completion(ANSWER), follow_up)
    client = memory.register(
        openai.OpenAI(api_key=OPENAI_KEY, http_client=httpx2.Client(transport=transport)),
        session_history=6,
        entity_id="ana",
        session_id="s1",
        k=1,
    )
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=history)
    history += [
        first.choices[0].message,
        {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, sunny"},
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=history)
    memory.flush(30)

    later = [{"role": "user", "content": "Do I need a coat?"}]  # only the latest message
    client.chat.completions.create(model="gpt-4o-mini", messages=later)
    block = sent[2]["messages"][0]["content"]
    section = block.split("Recent conversation:\n", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    # the answer is recalled (k=1), so the recent section leaves it out: once each
    assert lines == [f"- user: {QUESTION}", f"- assistant: {CALL_TEXT}"]
    assert block.count(ANSWER) == 1 and block.count(QUESTION) == 1
    [output] = [line for line in block.splitlines() if "18 °C, sunny" in line]
    assert output.endswith('get_weather({"city": "Porto"}) → 18 °C, sunny')  # a source only
