"""Structured-output answers from every patched SDK are captured as the assistant's reply
(issue 23): JSON mode and schemas (the JSON text the model wrote) and tool-forced answers
(the forced call, arguments whole). Real SDKs over mock transports."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx2
import openai
import pytest

from memtrellis import Memory
from provider_fakes import (
    BedrockWire,
    GoogleWire,
    OllamaWire,
    bedrock_client,
    google_client,
    ollama_client,
)
from sdk_fakes import OPENAI_KEY, ScriptedModel, Snack, captured, chat_completion, openai_client

QUESTION = "Is a rice cake a safe snack for me?"
ANSWER = {"name": "rice cake", "safe": True}
JSON_TEXT = json.dumps(ANSWER)


def _said(memory: Memory) -> list[str]:
    return [item.text for item in captured(memory)]


def test_openai_json_mode(memory: Memory) -> None:
    client = memory.register(openai_client(ScriptedModel(JSON_TEXT)))
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": QUESTION}],
        response_format={"type": "json_object"},
    )
    assert json.loads(reply.choices[0].message.content) == ANSWER
    assert _said(memory) == [QUESTION, JSON_TEXT]


def test_openai_tool_forced_answer(memory: Memory) -> None:
    body = chat_completion("")
    call = {"id": "call_3", "type": "function",
            "function": {"name": "record_snack", "arguments": JSON_TEXT}}  # fmt: skip
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=body))
    client = memory.register(
        openai.OpenAI(api_key=OPENAI_KEY, http_client=httpx2.Client(transport=transport))
    )
    client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": QUESTION}],
        tools=[{"type": "function", "function": {"name": "record_snack", "parameters": {}}}],
        tool_choice={"type": "function", "function": {"name": "record_snack"}},
    )
    assert _said(memory) == [QUESTION, f"[tool call] record_snack({JSON_TEXT})"]


def test_openai_responses_parse(memory: Memory) -> None:
    model = ScriptedModel(JSON_TEXT)
    client = memory.register(openai_client(model))
    parsed = client.responses.parse(model="gpt-4.1-mini", input=QUESTION, text_format=Snack)
    assert parsed.output_parsed == Snack(**ANSWER)
    assert _said(memory) == [QUESTION, JSON_TEXT]


def test_google_response_schema(memory: Memory) -> None:
    wire = GoogleWire(JSON_TEXT)
    client = memory.register(google_client(wire))
    reply = client.models.generate_content(
        model="gemini-3-flash",
        contents=QUESTION,
        config={"response_mime_type": "application/json", "response_schema": Snack},
    )
    assert reply.parsed == Snack(**ANSWER)
    assert wire.last["generationConfig"]["responseMimeType"] == "application/json"
    assert _said(memory) == [QUESTION, JSON_TEXT]


def test_bedrock_tool_forced_answer(memory: Memory) -> None:
    wire = BedrockWire({"call": "record_snack", "args": ANSWER})
    client = memory.register(bedrock_client(wire))
    tool = {
        "toolSpec": {"name": "record_snack", "inputSchema": {"json": Snack.model_json_schema()}}
    }
    client.converse(
        modelId="anthropic.claude-v2",
        messages=[{"role": "user", "content": [{"text": QUESTION}]}],
        toolConfig={"tools": [tool], "toolChoice": {"tool": {"name": "record_snack"}}},
    )
    assert _said(memory) == [QUESTION, f"[tool call] record_snack({JSON_TEXT})"]


def test_ollama_format_schema(memory: Memory) -> None:
    wire = OllamaWire(JSON_TEXT)
    client = memory.register(ollama_client(wire))
    reply = client.chat(
        model="llama3.2",
        messages=[{"role": "user", "content": QUESTION}],
        format=Snack.model_json_schema(),
    )
    assert Snack.model_validate_json(reply.message.content) == Snack(**ANSWER)
    assert wire.last["format"]["title"] == "Snack"
    assert _said(memory) == [QUESTION, JSON_TEXT]


@pytest.mark.filterwarnings("ignore::UserWarning:pydantic")
def test_litellm_response_format(memory: Memory) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")
    model = ScriptedModel(JSON_TEXT)
    http: Any = httpx2.Client(transport=httpx2.MockTransport(model))
    server = openai.OpenAI(
        api_key=OPENAI_KEY, base_url="http://localhost:8000/v1", http_client=http
    )
    memory.register(litellm)
    litellm.completion(
        model="openai/gpt-4o-mini",
        messages=[{"role": "user", "content": QUESTION}],
        response_format=Snack,
        client=server,
    )
    assert model.last["response_format"]["type"] == "json_schema"
    assert _said(memory) == [QUESTION, JSON_TEXT]
