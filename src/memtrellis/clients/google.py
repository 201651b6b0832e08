"""Google Gen AI clients (``google.genai.Client``): ``models.generate_content`` and
``models.generate_content_stream``, sync and on ``client.aio``.

* The request's ``contents`` are read as Google gives them: a string, a list of strings
  and parts (one user message), or ``Content`` items with a ``role`` (``"model"`` is the
  assistant). Each ``function_response`` part is a tool's output (a tool message, with
  the images and files of its ``parts``; an image sent beside results alone goes with
  the last of them).
  ``inline_data`` and ``file_data`` parts (``Part.from_bytes``, ``Part.from_uri``, their
  dicts) and uploaded ``File`` objects are the message's attachments
  (`memtrellis.attachments`).
* The memory context is added to ``config.system_instruction`` (a string, a ``Content``,
  a part or a list of them; a dict or ``GenerateContentConfig`` config, or none).
* The reply is the first candidate's text parts and its ``function_call`` parts (tool
  calls, `memtrellis.tool_calls`); usage from ``usage_metadata``. A
  ``function_response`` part is a tool message answering the call of its ``id`` (or
  name).

Chat sessions (``client.chats.create(...).send_message``) call the patched
``generate_content`` of their client and so get memory through it. The SDK is never
imported: requests and responses are read as dicts or by attribute.

Examples:
    >>> google_conversation({"contents": ["I like tea", "and scones"]})
    [{'role': 'user', 'content': 'I like tea\\nand scones'}]
    >>> google_conversation({"contents": [
    ...     {"role": "user", "parts": [{"text": "Weather?"}]},
    ...     {"role": "model", "parts": [{"function_call": {"name": "w", "args": {}}}]},
    ... ]})[1]
    {'role': 'assistant', 'content': '', 'tool_calls': [{'name': 'w', 'arguments': '{}'}]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memtrellis.clients.calls import Api
from memtrellis.clients.payload import (
    Reply,
    TextCollector,
    arguments_text,
    field_of,
    given,
    tool_result,
    with_results,
)
from memtrellis.context import MemoryContext
from memtrellis.errors import InvalidInputError
from memtrellis.tool_calls import neutral_call

__all__ = ["GOOGLE_APIS", "google_conversation", "place_system_instruction"]

_ROLES = {"user": "user", "model": "assistant", "function": "tool", "tool": "tool"}


def _field(obj: Any, snake: str, camel: str) -> Any:
    """A field of a part or config: as the SDK's model attribute, or a dict's key
    (either spelling: the SDK takes both)."""
    found = field_of(obj, snake)
    return found if found is not None or not isinstance(obj, Mapping) else obj.get(camel)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if _field(part, "thought", "thought") is True:  # the model's hidden reasoning
        return ""
    text = field_of(part, "text")
    return text if isinstance(text, str) else ""


def _part_call(part: Any) -> dict[str, Any] | None:
    call = _field(part, "function_call", "functionCall")
    if call is None:
        return None
    return neutral_call(field_of(call, "name"), field_of(call, "args") or {}, field_of(call, "id"))


def _result_message(result: Any) -> dict[str, Any]:
    response = field_of(result, "response")
    failed = isinstance(response, Mapping) and "error" in response and "output" not in response
    parts = field_of(result, "parts")  # a multimodal function response: its images, files
    attached = [a for a in map(_attachment, parts if _is_list(parts) else ()) if a is not None]
    return tool_result(
        _json(response),
        field_of(result, "id"),
        name=field_of(result, "name"),
        failed=failed,
        attachments=attached,
    )


#: The fields of a ``Blob`` (``inline_data``) and a ``FileData`` (``file_data``), both
#: spellings, read from the SDK's objects into the dict `memtrellis.attachments` reads.
_PAYLOAD_FIELDS = ("data", "mime_type", "display_name", "file_uri")


def _attachment(part: Any) -> dict[str, Any] | None:
    """An image, file, audio or video part as a dict `memtrellis.attachments` reads: a
    part's ``inline_data`` or ``file_data`` (a dict in either spelling, or the SDK's
    ``Part`` as ``Part.from_bytes``/``from_uri`` make it), or an uploaded ``File`` given
    in ``contents`` (the SDK sends it as ``file_data``); None for any other part."""
    if isinstance(part, str):
        return None
    for snake, camel in (("inline_data", "inlineData"), ("file_data", "fileData")):
        payload = _field(part, snake, camel)
        if payload is None:
            continue
        if isinstance(payload, Mapping):
            return {snake: dict(payload)}
        fields = {name: field_of(payload, name) for name in _PAYLOAD_FIELDS}
        return {snake: {name: value for name, value in fields.items() if value is not None}}
    uri = None if isinstance(part, Mapping) else field_of(part, "uri")
    if type(part).__name__ == "File" and isinstance(uri, str):
        fields = {"file_uri": uri, "mime_type": field_of(part, "mime_type")}
        fields["display_name"] = field_of(part, "display_name")
        return {"file_data": {name: value for name, value in fields.items() if value}}
    return None


def _parts_messages(role: str, parts: Sequence[Any]) -> list[dict[str, Any]]:
    texts = [t for t in (_part_text(p) for p in parts) if t]
    calls = [c for c in (_part_call(p) for p in parts) if c]
    results = [
        r for p in parts if (r := _field(p, "function_response", "functionResponse")) is not None
    ]
    message: dict[str, Any] = {"role": role, "content": "\n".join(texts)}
    attached = [a for a in map(_attachment, parts) if a is not None]
    if attached:  # read by the core (memtrellis.attachments) when the turn is captured
        message["attachments"] = attached
    if calls:
        message["tool_calls"] = calls
    # tools' output, sent back as a user turn: a tool message per result
    return with_results([_result_message(r) for r in results], message)


def _content_messages(content: Any) -> list[dict[str, Any]]:
    role = _ROLES.get(str(field_of(content, "role") or "user"), "user")
    parts = field_of(content, "parts") or ()
    return _parts_messages(role, list(parts)) if _is_list(parts) else []


def _has_role(item: Any) -> bool:
    return field_of(item, "parts") is not None or field_of(item, "role") is not None


def google_conversation(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``contents`` as text messages, in order."""
    contents = given(kwargs.get("contents"))
    if contents is None:
        return []
    if not _is_list(contents):
        contents = [contents]
    messages: list[dict[str, Any]] = []
    loose: list[Any] = []  # strings and parts without a Content: one user message
    for item in contents:
        if _has_role(item) and not isinstance(item, str):
            if loose:
                messages.extend(_parts_messages("user", loose))
                loose = []
            messages.extend(_content_messages(item))
        else:
            loose.append(item)
    if loose:
        messages.extend(_parts_messages("user", loose))
    return messages


def _with_block(instruction: Any, block: str) -> Any:
    """``system_instruction`` with the block after it, in the form it was given."""
    if instruction is None or instruction == "":
        return block
    if isinstance(instruction, str):
        return f"{instruction}\n\n{block}"
    if _is_list(instruction):
        return [*instruction, block]
    parts = field_of(instruction, "parts")
    if parts is not None:  # a Content: one more text part
        if isinstance(instruction, Mapping):
            return {**instruction, "parts": [*parts, {"text": block}]}
        return instruction.model_copy(update={"parts": [*parts, {"text": block}]})
    if field_of(instruction, "text") is not None:  # a single Part
        return [instruction, block]
    raise InvalidInputError(
        f"system_instruction must be text, a Content or parts, not {type(instruction).__name__}"
    )


def place_system_instruction(kwargs: dict[str, Any], context: MemoryContext) -> dict[str, Any]:
    """``config`` with the block added to its ``system_instruction``.

    Examples:
        >>> from memtrellis.context import MemoryContext
        >>> config = {"temperature": 0.2, "system_instruction": "Be brief."}
        >>> placed = place_system_instruction(
        ...     {"contents": "Hi", "config": config}, MemoryContext("<mc>..</mc>", 5, 600)
        ... )
        >>> placed["config"]
        {'temperature': 0.2, 'system_instruction': 'Be brief.\\n\\n<mc>..</mc>'}
    """
    config = given(kwargs.get("config"))
    block = context.text
    if config is None:
        return {**kwargs, "config": {"system_instruction": block}}
    if isinstance(config, Mapping):
        key = "systemInstruction" if "systemInstruction" in config else "system_instruction"
        return {**kwargs, "config": {**config, key: _with_block(config.get(key), block)}}
    instruction = _with_block(field_of(config, "system_instruction"), block)
    return {**kwargs, "config": config.model_copy(update={"system_instruction": instruction})}


def _usage(metadata: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ours, theirs in (
        ("input_tokens", "prompt_token_count"),
        ("output_tokens", "candidates_token_count"),
        ("total_tokens", "total_token_count"),
        ("cache_read_input_tokens", "cached_content_token_count"),
    ):
        value = _field(metadata, theirs, "".join(w.title() for w in theirs.split("_")))
        if isinstance(value, int) and not isinstance(value, bool):
            counts[ours] = value
    return counts


def _candidate_parts(response: Any) -> tuple[list[Any], Any]:
    candidates = field_of(response, "candidates") or ()
    if not candidates:
        return [], None
    first = candidates[0]
    content = field_of(first, "content")
    return list(field_of(content, "parts") or ()), _field(first, "finish_reason", "finishReason")


def google_reply(response: Any) -> Reply | None:
    """A ``GenerateContentResponse``: the first candidate's text and function calls."""
    if field_of(response, "candidates") is None:
        return None
    parts, finish = _candidate_parts(response)
    text = "".join(_part_text(p) for p in parts)
    calls = [c for c in (_part_call(p) for p in parts) if c]
    return Reply(
        text=text,
        tool_calls=calls,
        model=_field(response, "model_version", "modelVersion"),
        usage=_usage(_field(response, "usage_metadata", "usageMetadata")),
        response_id=_field(response, "response_id", "responseId"),
        complete=finish is not None,
    )


class GoogleCollector(TextCollector):
    """Gathers the first candidate's text and calls from streamed responses."""

    def feed(self, chunk: Any) -> None:
        """Take one streamed ``GenerateContentResponse``."""
        parts, _ = _candidate_parts(chunk)
        for part in parts:
            self.parts.append(_part_text(part))
            call = _field(part, "function_call", "functionCall")
            if call is not None:  # a call arrives whole, in one chunk
                name, arguments = field_of(call, "name"), _json(field_of(call, "args"))
                self.call_part(None, name, arguments, field_of(call, "id"))
        self.gathered.model = _field(chunk, "model_version", "modelVersion") or self.gathered.model
        self.gathered.response_id = (
            _field(chunk, "response_id", "responseId") or self.gathered.response_id
        )
        self.gathered.usage.update(_usage(_field(chunk, "usage_metadata", "usageMetadata")))


def _json(value: Any) -> str:
    return arguments_text(value or {})


def google_endpoint(client: Any) -> tuple[str, str | None]:
    """``("google", None)`` for the Gemini API, ``("vertex", None)`` for Vertex AI."""
    return ("vertex" if getattr(client, "vertexai", False) is True else "google"), None


def _models(path: tuple[str, ...], is_async: bool) -> Api:
    return Api(
        provider="google",
        name="models",
        path=path,
        methods={"generate_content": "call", "generate_content_stream": "stream"},
        conversation=google_conversation,
        place=place_system_instruction,
        reply=google_reply,
        collector=GoogleCollector,
        is_async=is_async,
        endpoint=google_endpoint,
    )


#: The Google Gen AI APIs a registration patches: ``models`` and ``aio.models``.
GOOGLE_APIS = (_models(("models",), False), _models(("aio", "models"), True))
