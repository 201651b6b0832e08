"""Scripted models: the only fakes. Everything else is the real framework."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents import Usage
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
)


def text_reply(text: str, item_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def tool_call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=arguments, call_id=call_id, id=f"fc_{call_id}"
    )


class ScriptedAgentsModel(Model):
    """An Agents SDK ``Model`` that answers from a script and records what it was sent:
    ``calls`` holds ``(system_instructions, input)`` of each call."""

    def __init__(self, script: list[list[ResponseOutputItem]]) -> None:
        self.script = list(script)
        self.calls: list[tuple[str | None, list[TResponseInputItem]]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        sent = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.calls.append((system_instructions, sent))  # type: ignore[arg-type]
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    async def stream_response(  # type: ignore[override]
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """The scripted reply as one completed response (what the SDK reads the answer from)."""
        reply = await self.get_response(system_instructions, input)
        response = Response(
            id=f"resp_{len(self.calls)}",
            created_at=0,
            model="scripted",
            object="response",
            output=reply.output,
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=False,
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )
