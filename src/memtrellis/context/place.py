"""Placing a memory-context block where each API reads instructions, and taking it out.

* OpenAI-style chat messages (``[{"role": ..., "content": ...}]``):
  `place_in_messages` appends the block to the leading system (or developer)
  message, or inserts a system message of its own.
* Anthropic Messages: `place_in_anthropic_system` for the ``system`` field, a
  string or a list of text blocks.
* OpenAI Responses: `place_in_instructions` for ``instructions``.

Nothing is changed in place: each helper returns new values. `Placement`
records what was placed and where, and `strip_messages` takes every block back
out of a list of messages, so capture never stores placed context as something the user
or the model said.

Examples:
    >>> from memtrellis.context import MemoryContext
    >>> context = MemoryContext("<memory_context>\\n- x\\n</memory_context>", 9, 50)
    >>> placed = place_in_messages([{"role": "user", "content": "hi"}], context)
    >>> [m["role"] for m in placed.messages], placed.index, placed.inserted
    (['system', 'user'], 0, True)
    >>> strip_messages(placed.messages)
    [{'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memtrellis.context.escape import strip_blocks
from memtrellis.context.render import MemoryContext
from memtrellis.errors import InvalidInputError

__all__ = [
    "INSTRUCTION_ROLES",
    "Placement",
    "append_to_content",
    "place_in_anthropic_system",
    "place_in_instructions",
    "place_in_messages",
    "strip_content",
    "strip_messages",
]

#: Message roles that carry instructions; the block joins the first one at the start.
INSTRUCTION_ROLES = frozenset({"system", "developer"})
Position = Literal["append", "insert"]


@dataclass(frozen=True)
class Placement:
    """Messages with memory context placed, and where it went.

    Attributes:
        messages: The new message list (the input is left as it was).
        context: The block that was placed.
        index: Position of the message holding the block, ``None`` if nothing was placed.
        inserted: The block is a system message of its own (not appended to one).
        original: The messages as given, for capture.

    Examples:
        >>> from memtrellis.context import place_in_messages
        >>> note = "<memory_context>- a note</memory_context>"
        >>> placed = place_in_messages([{"role": "user", "content": "hi"}], note)
        >>> [m["role"] for m in placed.messages], placed.index, placed.inserted
        (['system', 'user'], 0, True)
    """

    messages: list[dict[str, Any]]
    context: MemoryContext
    index: int | None
    inserted: bool
    original: list[dict[str, Any]] = field(default_factory=list)


def check_messages(messages: Any, where: str) -> Sequence[Mapping[str, Any]]:
    """``messages`` if it is a list of message dicts, else `InvalidInputError`."""
    if (
        isinstance(messages, (str, bytes, bytearray))
        or not isinstance(messages, Sequence)
        or not all(isinstance(m, Mapping) for m in messages)
    ):
        raise InvalidInputError(
            f"{where} takes a list of message dicts ({{'role': ..., 'content': ...}}), "
            f"not {type(messages).__name__}"
        )
    return messages


def _is_model(value: Any) -> bool:
    return callable(getattr(value, "model_dump", None))


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _text_of(context: MemoryContext | str) -> str:
    if isinstance(context, MemoryContext):
        return context.text
    if isinstance(context, str):
        return context
    raise InvalidInputError(f"context must be a MemoryContext or str, not {type(context).__name__}")


def append_to_content(content: Any, block: str) -> str | list[Any]:
    """Message content with ``block`` after it: a string or a list of content parts.

    Examples:
        >>> append_to_content("Be brief.", "<memory_context>..</memory_context>")
        'Be brief.\\n\\n<memory_context>..</memory_context>'
        >>> append_to_content([{"type": "text", "text": "Be brief."}], "B")[-1]
        {'type': 'text', 'text': 'B'}
    """
    if content is None or content == "":
        return block
    if isinstance(content, str):
        return f"{content}\n\n{block}"
    if isinstance(content, Sequence):
        return [*content, {"type": "text", "text": block}]
    raise InvalidInputError(f"cannot add text to content of type {type(content).__name__}")


def strip_content(content: Any) -> Any:
    """Content without memory-context blocks; text parts left empty are dropped.

    Examples:
        >>> strip_content("Be brief.\\n\\n<memory_context>- a note</memory_context>")
        'Be brief.'
    """
    if isinstance(content, str):
        return strip_blocks(content)
    if isinstance(content, Sequence):
        parts: list[Any] = []
        for part in content:
            if isinstance(part, str):
                part = strip_blocks(part)
                if not part:
                    continue
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                text = strip_blocks(part["text"])
                if not text and part["text"]:
                    continue
                part = {**part, "text": text}
            parts.append(part)
        return parts
    return content


def place_in_messages(
    messages: Sequence[Mapping[str, Any]],
    context: MemoryContext | str,
    *,
    position: Position = "append",
    role: str = "system",
) -> Placement:
    """Place the block in OpenAI-style chat messages.

    Args:
        messages: ``{"role": ..., "content": ...}`` dicts; not modified.
        context: The block (an empty one places nothing).
        position: ``"append"`` adds it to the first message when that is a system or
            developer message (else inserts one at the start); ``"insert"`` always
            adds a message of its own after the leading system messages.
        role: Role of an inserted message (``"developer"`` for OpenAI reasoning models).

    Examples:
        >>> msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
        >>> place_in_messages(msgs, "<memory_context>\\n</memory_context>").messages[0]["content"]
        'Be brief.\\n\\n<memory_context>\\n</memory_context>'
    """
    if position not in ("append", "insert"):
        raise InvalidInputError(f"position must be 'append' or 'insert', not {position!r}")
    if not _is_list(messages):
        check_messages(messages, "place_in_messages()")  # raises
    # SDK message models (an OpenAI reply appended to the history) read as dicts too.
    given = [dict(m) if _is_model(m) and not isinstance(m, Mapping) else m for m in messages]
    check_messages(given, "place_in_messages()")
    block = _text_of(context)
    original = [dict(m) for m in given]
    out = [dict(m) for m in given]
    record = context if isinstance(context, MemoryContext) else MemoryContext(block, 0, 0)
    if not block:
        return Placement(out, record, None, False, original)
    lead = 0
    while lead < len(out) and out[lead].get("role") in INSTRUCTION_ROLES:
        lead += 1
    if position == "append" and lead:
        out[0]["content"] = append_to_content(out[0].get("content"), block)
        return Placement(out, record, 0, False, original)
    at = lead if position == "insert" else 0
    out.insert(at, {"role": role, "content": block})
    return Placement(out, record, at, True, original)


def strip_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages without memory-context blocks; a message that held only a block is dropped.

    Examples:
        >>> strip_messages([{"role": "system", "content": "<memory_context></memory_context>"}])
        []
    """
    out: list[dict[str, Any]] = []
    for message in check_messages(messages, "strip_messages()"):
        content = message.get("content")
        stripped = strip_content(content)
        if stripped != content and not stripped:
            continue
        out.append({**message, "content": stripped})
    return out


def place_in_anthropic_system(
    system: str | Sequence[Mapping[str, Any]] | None, context: MemoryContext | str
) -> str | list[dict[str, Any]] | None:
    """Anthropic's ``system`` field with the block added (a string, or a list of blocks).

    Examples:
        >>> place_in_anthropic_system([{"type": "text", "text": "Be brief."}], "B")
        [{'type': 'text', 'text': 'Be brief.'}, {'type': 'text', 'text': 'B'}]
    """
    block = _text_of(context)
    if system is None or isinstance(system, str):
        return str(append_to_content(system, block)) if block else system
    blocks = _system_blocks(system)
    return [*blocks, {"type": "text", "text": block}] if block else blocks


def _system_blocks(system: Any) -> list[dict[str, Any]]:
    # Any iterable of text blocks the SDK takes: dicts, or its pydantic block models.
    if isinstance(system, (bytes, bytearray, Mapping)) or not isinstance(system, Iterable):
        raise InvalidInputError(
            f"system must be text or a list of text blocks, not {type(system).__name__}"
        )
    blocks: list[dict[str, Any]] = []
    for part in system:
        if isinstance(part, Mapping):
            blocks.append(dict(part))
        elif callable(getattr(part, "model_dump", None)):
            blocks.append(part.model_dump(exclude_none=True))
        else:
            raise InvalidInputError(
                f"system must be text or a list of text blocks, not of {type(part).__name__}"
            )
    return blocks


def place_in_instructions(instructions: str | None, context: MemoryContext | str) -> str | None:
    """OpenAI Responses ``instructions`` with the block added after them.

    Examples:
        >>> place_in_instructions(None, "B"), place_in_instructions("Be brief.", "")
        ('B', 'Be brief.')
    """
    if instructions is not None and not isinstance(instructions, str):
        raise InvalidInputError(f"instructions must be text, not {type(instructions).__name__}")
    block = _text_of(context)
    if not block:
        return instructions
    return str(append_to_content(instructions, block))
