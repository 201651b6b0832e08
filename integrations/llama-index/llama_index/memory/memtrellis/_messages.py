"""LlamaIndex chat messages as memtrellis turns, and memory context placed in and taken out.

Memory context is data the adapters put into a prompt; it must never come back as
something the user said. Every turn built here has its memory-context blocks stripped
([`strip_blocks`][memtrellis.context.strip_blocks]), and placement never changes the caller's
messages. What is new in a call and where the block goes are the core's rules
([`new_turn`][memtrellis.context.new_turn],
[`place_in_messages`][memtrellis.context.place_in_messages]), written once for every
adapter: this module only reads LlamaIndex's messages as the core's message dicts
(`said`) and writes the core's placement back into them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    ChatResponse,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index_instrumentation.dispatcher import active_instrument_tags, instrument_tags
from memtrellis.context import MemoryContext, place_in_messages, strip_blocks, turn
from memtrellis.tool_calls import calls_of, neutral_call

__all__ = [
    "INTERNAL_TAG",
    "StreamedReply",
    "internal_call",
    "is_internal",
    "latest_query",
    "new_turn",
    "place_context",
    "react_answer",
    "said",
    "text_of",
    "tool_calls_of",
    "tool_message",
]

#: Instrumentation tag on the events of LLM calls that memtrellis itself makes or
#: already captures (the wrapper's delegate, fine-mode extraction), so that the event
#: handler does not capture them a second time.
INTERNAL_TAG = "memtrellis.internal"


@contextmanager
def internal_call(kind: str) -> Iterator[None]:
    """Tag the LlamaIndex events fired inside this block with `INTERNAL_TAG`."""
    with instrument_tags({**active_instrument_tags.get(), INTERNAL_TAG: kind}):
        yield


def is_internal(tags: dict[str, Any]) -> bool:
    """Whether an event's tags mark it as fired inside `internal_call`."""
    return INTERNAL_TAG in tags


def _is_memory_template(text: str) -> bool:
    # llama_index.core.memory.Memory renders its memory blocks as one text block
    # "<memory>...</memory>" and puts it into the system or the latest user message.
    text = text.strip()
    return text.startswith("<memory>") and text.endswith("</memory>")


def text_of(message: ChatMessage | None) -> str:
    """The text of a message without memory context; ``""`` when it has none.

    Left out: memory-context blocks, and a whole text block that is the ``<memory>``
    section LlamaIndex's ``Memory`` renders from its memory blocks.
    """
    if message is None:
        return ""
    parts = [
        block.text
        for block in message.blocks
        if isinstance(block, TextBlock) and block.text and not _is_memory_template(block.text)
    ]
    return strip_blocks("\n".join(parts)).strip()


_THOUGHT = "Thought:"
_ANSWER = "Answer:"


def react_answer(text: str) -> str | None:
    """The final answer in a ReAct agent's reasoning text; ``None`` when it is not ReAct's.

    LlamaIndex's ``ReActAgent`` writes its whole reasoning ("Thought: … Action: …
    Observation: … Thought: … Answer: …") as the assistant's message; the user was told
    only the answer. A reasoning step with no answer yet (an action) gives ``""``.

    Examples:
        >>> react_answer("Thought: I know it.\\nAnswer: Porto.")
        'Porto.'
        >>> react_answer("Thought: look it up\\nAction: search\\nAction Input: {}")
        ''
        >>> react_answer("Porto.") is None
        True
    """
    stripped = text.strip()
    if not stripped.startswith(_THOUGHT):
        return None
    last_step = stripped[stripped.rfind(_THOUGHT) :]
    at = last_step.find(_ANSWER)
    return last_step[at + len(_ANSWER) :].strip() if at != -1 else ""


def latest_query(messages: Sequence[ChatMessage] | None) -> str:
    """The text of the latest user message, the question recall should answer."""
    users = [
        {"role": "user", "content": text}
        for m in messages or ()
        if m.role == MessageRole.USER and (text := text_of(m))
    ]
    return turn.last_user_text(users) or ""


def _is_react_action(message: ChatMessage) -> bool:
    return message.role == MessageRole.ASSISTANT and react_answer(text_of(message)) == ""


def tool_calls_of(message: ChatMessage | None) -> list[dict[str, Any]]:
    """The tool calls of an assistant message, as ``{"id", "name", "arguments"}``: its
    ``ToolCallBlock``\\ s, else the ``tool_calls`` an OpenAI-style LLM keeps in
    ``additional_kwargs``.

    Examples:
        >>> call = ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": 1})
        >>> tool_calls_of(ChatMessage(role="assistant", blocks=[call]))
        [{'name': 'lookup', 'arguments': '{"q": 1}', 'id': 'c1'}]
    """
    if message is None:
        return []
    found = [
        neutral_call(block.tool_name, block.tool_kwargs, block.tool_call_id)
        for block in message.blocks
        if isinstance(block, ToolCallBlock)
    ]
    if found:
        return found
    listed = {"tool_calls": list(message.additional_kwargs.get("tool_calls") or ())}
    return [neutral_call(c.name, c.arguments, c.call_id) for c in calls_of(listed)]


def tool_message(message: ChatMessage) -> dict[str, Any]:
    """A tool's output (a ``tool`` message) as the core's dict: its text, the call it
    answers (``tool_call_id``) and the tool's name when the message has them."""
    extra = message.additional_kwargs
    out: dict[str, Any] = {"role": "tool", "content": text_of(message)}
    for key, names in (
        ("tool_call_id", ("tool_call_id", "tool_id")),
        ("name", ("name", "tool_name")),
    ):
        found = next((extra[n] for n in names if isinstance(extra.get(n), str) and extra[n]), None)
        if found is not None:
            out[key] = found
    return out


def said(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The messages as the core's dicts: what people said, and the tools the assistant
    used.

    Kept: user messages, assistant messages with text (the replies) or tool calls
    (``tool_calls``), and tool results (``tool`` messages, with the call they answer).
    Left out: system messages and a ``ReActAgent``'s reasoning step that acts
    ("Thought: … Action: …") with the "Observation: …" message after it.

    Examples:
        >>> said([ChatMessage(role="system", content="Be brief."),
        ...       ChatMessage(role="user", content="hi")])
        [{'role': 'user', 'content': 'hi'}]
    """
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role == MessageRole.TOOL:
            out.append(tool_message(message))
            continue
        text = text_of(message)
        attached = attachments(message)
        calls = tool_calls_of(message) if message.role == MessageRole.ASSISTANT else []
        if not text and not attached and not calls:
            continue
        entry: dict[str, Any] = {"content": text}
        if attached:
            entry["attachments"] = attached
        if calls:
            entry["tool_calls"] = calls
        if message.role == MessageRole.ASSISTANT and not _is_react_action(message):
            out.append({"role": "assistant", **entry})
        elif message.role == MessageRole.USER and not (
            text.startswith("Observation:") and index and _is_react_action(messages[index - 1])
        ):
            out.append({"role": "user", **entry})
    return out


def attachments(message: ChatMessage) -> list[dict[str, Any]]:
    """The message's image, document and audio blocks as the core's attachment parts
    (`memtrellis.attachments`): URL, path name, media type, title, and the inline bytes
    for the core to hash (it keeps them only when the application opted in).

    Examples:
        >>> from llama_index.core.base.llms.types import ImageBlock
        >>> photo = ImageBlock(url="https://x.test/cat.png", image_mimetype="image/png")
        >>> attachments(ChatMessage(role="user", blocks=[TextBlock(text="my cat"), photo]))
        [{'type': 'image', 'url': 'https://x.test/cat.png', 'mime_type': 'image/png'}]
    """
    found: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, ImageBlock):
            part = _part("image", block.url, block.path, block.image, block.image_mimetype)
        elif isinstance(block, DocumentBlock):
            part = _part("file", block.url, block.path, block.data, block.document_mimetype)
            if block.title:
                part["title"] = block.title
        elif isinstance(block, AudioBlock):
            mime = f"audio/{block.format}" if block.format else None
            part = _part("audio", block.url, block.path, block.audio, mime)
        else:
            continue
        found.append(part)
    return found


def _part(kind: str, url: Any, path: Any, data: Any, mime: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": kind}
    if url is not None:
        part["url"] = str(url)
    if path is not None:
        part["name"] = Path(str(path)).name
    if isinstance(data, bytes) and data:  # LlamaIndex keeps a block's bytes base64-encoded
        part["base64"] = data.decode("ascii", "replace")
    if mime:
        part["mime_type"] = mime
    return part


def new_turn(
    messages: Sequence[ChatMessage], reply: str, calls: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """What one LLM call adds to a conversation: the new messages and the reply.

    The core's [`new_turn`][memtrellis.context.new_turn] on `said`: the new messages are
    those after the model's last reply; a reply that only calls tools (``calls``) is
    captured at once, as every adapter captures it, and the next call, which sends the
    tools' results, captures them and its answer with the question and the calls
    before them as context: the answer's memory carries the calls and results it came
    from.

    A ``ReActAgent``'s steps are read as text: a reasoning step that acts ("Thought: …
    Action: …") is no reply, the "Observation: …" message after it is not the user's,
    and only the answer of the final step is the reply.
    """
    answer = react_answer(reply)
    text = strip_blocks(answer if answer is not None else reply).strip()
    if not text and not calls:
        return []
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return turn.new_turn(said(messages), message)


def place_context(
    messages: Sequence[ChatMessage],
    block: MemoryContext | str,
    position: Literal["append", "insert"] = "append",
) -> list[ChatMessage]:
    """A copy of ``messages`` with the memory-context ``block`` in the system message.

    Where it goes is [`place_in_messages`][memtrellis.context.place_in_messages]'
    rule: appended to the first message when it is a system message (``"append"``),
    else a system message holding it is inserted (first, or after the leading system
    messages with ``"insert"``). An empty block changes nothing.
    """
    out = list(messages)
    text = block.text if isinstance(block, MemoryContext) else block
    if not text:
        return out
    views = [
        {"role": "system" if m.role == MessageRole.SYSTEM else "other", "content": ""} for m in out
    ]
    placed = place_in_messages(views, text, position=position)
    if placed.index is None:
        return out
    if placed.inserted:
        out.insert(placed.index, ChatMessage(role=MessageRole.SYSTEM, content=text))
    else:
        first = out[placed.index].model_copy(deep=True)
        first.blocks = [*first.blocks, TextBlock(text="\n\n" + text)]
        out[placed.index] = first
    return out


class StreamedReply:
    """The text of a streamed reply, from its chunks.

    Most LLMs put the message so far in each chunk and the new piece in ``delta``; some
    put only the new piece in both. The reply is whichever of the last message and the
    joined deltas says more.

    Examples:
        >>> reply = StreamedReply()
        >>> for piece in ("Hel", "lo"):
        ...     reply.add(ChatResponse(message=ChatMessage(role="assistant", content=piece),
        ...                            delta=piece))
        >>> reply.text()
        'Hello'
    """

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.last: ChatResponse | None = None

    def add(self, chunk: ChatResponse) -> None:
        """Record one streamed chunk."""
        if chunk.delta:
            self.deltas.append(chunk.delta)
        self.last = chunk

    def text(self, final: ChatResponse | None = None) -> str:
        """The reply's text; ``final`` is the response the stream ended with, if known."""
        response = final or self.last
        last = text_of(response.message) if response is not None else ""
        joined = "".join(self.deltas)
        return joined if len(joined) > len(last) else last

    def calls(self, final: ChatResponse | None = None) -> list[dict[str, Any]]:
        """The reply's tool calls, as the last response's message holds them."""
        response = final or self.last
        return tool_calls_of(response.message) if response is not None else []
