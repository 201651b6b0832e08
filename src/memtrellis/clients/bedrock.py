"""AWS Bedrock through boto3 (``boto3.client("bedrock-runtime")``): the Converse API.

* ``converse`` and ``converse_stream``: the memory context is one more text block at the
  end of ``system`` (a list of system content blocks, made when there is none).
* Messages are read from their content blocks: ``text`` blocks, ``toolUse`` blocks (an
  assistant's tool calls, `memtrellis.tool_calls`), ``toolResult`` blocks (the tools'
  output: one tool message per result, with its ``toolUseId``, whether its ``status`` is
  ``"error"`` and the images and documents it returned; an image sent beside results
  alone goes with the last of them) and ``image``, ``document``, ``video`` and ``audio``
  blocks (the message's attachments, from their ``bytes``, ``s3Location`` or a
  document's text: `memtrellis.attachments`).
* ``converse_stream`` returns a dict whose ``stream`` is botocore's ``EventStream``; it is
  handed back wrapped (`memtrellis.clients.streams`), so the turn is captured when the
  stream is used up or closed.

boto3 is synchronous: there is no async client to patch (aioboto3's are not matched).
The SDK is never imported: a Bedrock client is recognised by its class name
(``botocore.client.BedrockRuntime``), and requests and responses are plain dicts.

Examples:
    >>> bedrock_conversation({"messages": [
    ...     {"role": "user", "content": [{"text": "Weather in Porto?"}]},
    ...     {"role": "assistant", "content": [
    ...         {"toolUse": {"toolUseId": "t1", "name": "weather", "input": {"city": "Porto"}}}]},
    ...     {"role": "user", "content": [
    ...         {"toolResult": {"toolUseId": "t1", "content": [{"text": "Sunny"}]}}]},
    ... ]})[1:]  # doctest: +NORMALIZE_WHITESPACE
    [{'role': 'assistant', 'content': '',
      'tool_calls': [{'name': 'weather', 'arguments': '{"city": "Porto"}', 'id': 't1'}]},
     {'role': 'tool', 'content': 'Sunny', 'tool_call_id': 't1'}]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memtrellis.attachments import is_attachment_part
from memtrellis.clients.calls import Api
from memtrellis.clients.endpoints import endpoint_provider
from memtrellis.clients.payload import (
    Reply,
    TextCollector,
    field_of,
    tool_result,
    with_results,
)
from memtrellis.context import MemoryContext
from memtrellis.errors import InvalidInputError
from memtrellis.tool_calls import neutral_call

__all__ = ["BEDROCK_APIS", "CONVERSE", "bedrock_conversation", "place_bedrock_system"]


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return list(content)
    return []


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _result_text(result: Any) -> str:
    texts = []
    for block in _blocks(field_of(result, "content")):
        if isinstance(field_of(block, "text"), str):
            texts.append(field_of(block, "text"))
        elif field_of(block, "json") is not None:
            texts.append(_json(field_of(block, "json")))
    return "\n".join(t for t in texts if t)


def _messages(message: Any) -> list[dict[str, Any]]:
    role = field_of(message, "role")
    if not isinstance(role, str):
        return []
    blocks = _blocks(field_of(message, "content"))
    texts = [t for b in blocks if isinstance(t := field_of(b, "text"), str) and t]
    calls = [
        neutral_call(
            field_of(use, "name"), field_of(use, "input") or {}, field_of(use, "toolUseId")
        )
        for b in blocks
        if (use := field_of(b, "toolUse")) is not None
    ]
    results = [
        tool_result(
            _result_text(r),
            field_of(r, "toolUseId"),
            failed=field_of(r, "status") == "error",
            attachments=[b for b in _blocks(field_of(r, "content")) if is_attachment_part(b)],
        )
        for b in blocks
        if (r := field_of(b, "toolResult")) is not None
    ]
    out: dict[str, Any] = {"role": role, "content": "\n".join(texts)}
    attached = [b for b in blocks if is_attachment_part(b)]
    if attached:  # image, document, video and audio blocks: read by memtrellis.attachments
        out["attachments"] = attached
    if calls:
        out["tool_calls"] = calls
    return with_results(results, out)  # tools' output: a tool message per result


def bedrock_conversation(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``messages`` as text messages."""
    return [found for m in kwargs.get("messages") or () for found in _messages(m)]


def place_bedrock_system(kwargs: dict[str, Any], context: MemoryContext) -> dict[str, Any]:
    """``system`` with the block as one more text block after the caller's.

    Examples:
        >>> from memtrellis.context import MemoryContext
        >>> place_bedrock_system({"system": [{"text": "Be brief."}]}, MemoryContext("B", 1, 600))
        {'system': [{'text': 'Be brief.'}, {'text': 'B'}]}
    """
    system = kwargs.get("system")
    if system is None:
        system = []
    if isinstance(system, (str, bytes, bytearray, Mapping)) or not isinstance(system, Sequence):
        raise InvalidInputError(f"system must be a list of blocks, not {type(system).__name__}")
    return {**kwargs, "system": [*system, {"text": context.text}]}


def _usage(usage: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ours, theirs in (
        ("input_tokens", "inputTokens"),
        ("output_tokens", "outputTokens"),
        ("total_tokens", "totalTokens"),
        ("cache_read_input_tokens", "cacheReadInputTokens"),
        ("cache_creation_input_tokens", "cacheWriteInputTokens"),
    ):
        value = field_of(usage, theirs) if usage is not None else None
        if isinstance(value, int) and not isinstance(value, bool):
            counts[ours] = value
    return counts


def _request_id(response: Any) -> str | None:
    found = field_of(field_of(response, "ResponseMetadata"), "RequestId")
    return found if isinstance(found, str) else None


def converse_reply(response: Any) -> Reply | None:
    """A ``converse`` response: the output message's text and tool calls, and usage."""
    message = field_of(field_of(response, "output"), "message")
    if message is None:
        return None
    read: dict[str, Any] = next(iter(_messages(message)), {"content": ""})
    return Reply(
        text=read["content"],
        tool_calls=list(read.get("tool_calls", ())),
        usage=_usage(field_of(response, "usage")),
        response_id=_request_id(response),
        complete=field_of(response, "stopReason") is not None,
    )


class ConverseCollector(TextCollector):
    """Gathers text, tool calls and usage from ``converse_stream`` events."""

    def feed(self, event: Any) -> None:
        """Take one event (a dict of one key, the event's type)."""
        start = field_of(event, "contentBlockStart")
        if start is not None:
            use = field_of(field_of(start, "start"), "toolUse")
            if use is not None:
                index, name = field_of(start, "contentBlockIndex"), field_of(use, "name")
                self.call_part(index, name, None, field_of(use, "toolUseId"))
            return
        delta = field_of(event, "contentBlockDelta")
        if delta is not None:
            change = field_of(delta, "delta")
            if isinstance(field_of(change, "text"), str):
                self.parts.append(field_of(change, "text"))
            use = field_of(change, "toolUse")
            if use is not None:
                self.call_part(field_of(delta, "contentBlockIndex"), None, field_of(use, "input"))
            return
        metadata = field_of(event, "metadata")
        if metadata is not None:
            self.gathered.usage.update(_usage(field_of(metadata, "usage")))


def stream_in_response(response: Any, wrap: Callable[[Any], Any]) -> Any:
    """The ``converse_stream`` response with its ``stream`` wrapped."""
    if isinstance(response, Mapping) and response.get("stream") is not None:
        return {**response, "stream": wrap(response["stream"])}
    return response


def bedrock_endpoint(client: Any) -> tuple[str, str | None]:
    """``("bedrock", endpoint)``: the client's endpoint URL, scheme, host and port only."""
    meta = getattr(client, "meta", None)
    url = getattr(meta, "endpoint_url", None)
    return "bedrock", endpoint_provider("bedrock", url if isinstance(url, str) else None)[1]


CONVERSE = Api(
    provider="bedrock",
    name="converse",
    path=(),
    methods={"converse": "call", "converse_stream": "stream"},
    conversation=bedrock_conversation,
    place=place_bedrock_system,
    reply=converse_reply,
    collector=ConverseCollector,
    model_arg="modelId",
    stream_of=stream_in_response,
    endpoint=bedrock_endpoint,
)

#: The Bedrock Runtime APIs a registration patches.
BEDROCK_APIS = (CONVERSE,)
