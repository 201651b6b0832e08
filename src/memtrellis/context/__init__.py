"""Memory context: recalled memories rendered into a delimited, escaped, budgeted block.

Framework-free and shared by every adapter (LangChain, LlamaIndex, SDK clients). This
layer imports only [`memtrellis.types`][memtrellis.types], [`memtrellis.errors`][memtrellis.errors]
and `memtrellis.tokens`: never the store, never a framework.

Examples:
    >>> import tempfile
    >>> from memtrellis import Memory
    >>> from memtrellis.context import build_context, place_in_messages
    >>> from memtrellis.testing import HashingEmbedder
    >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
    ...     _ = memory.add("Alice is allergic to peanuts")
    ...     context = build_context(memory.recall("peanuts?"), token_budget=200)
    >>> messages = [{"role": "user", "content": "Suggest a snack"}]
    >>> placed = place_in_messages(messages, context)
    >>> placed.messages[0]["role"], "allergic to peanuts" in placed.messages[0]["content"]
    ('system', True)
"""

from memtrellis.context.escape import CLOSE_TAG, OPEN_TAG, escape_line, has_block, strip_blocks
from memtrellis.context.place import (
    INSTRUCTION_ROLES,
    Placement,
    append_to_content,
    place_in_anthropic_system,
    place_in_instructions,
    place_in_messages,
    strip_content,
    strip_messages,
)
from memtrellis.context.relations import path_line, relations_text
from memtrellis.context.render import (
    DEFAULT_TOKEN_BUDGET,
    MemoryContext,
    build_context,
    line_tokens,
    memory_line,
)
from memtrellis.context.tool_trail import tool_trail
from memtrellis.context.turn import (
    HINT_CHARS,
    conversation_hint,
    earlier_turns,
    exchange_start,
    last_user_text,
    new_turn,
)

__all__ = [
    "CLOSE_TAG",
    "DEFAULT_TOKEN_BUDGET",
    "HINT_CHARS",
    "INSTRUCTION_ROLES",
    "OPEN_TAG",
    "MemoryContext",
    "Placement",
    "append_to_content",
    "build_context",
    "conversation_hint",
    "earlier_turns",
    "escape_line",
    "exchange_start",
    "has_block",
    "last_user_text",
    "line_tokens",
    "memory_line",
    "new_turn",
    "path_line",
    "place_in_anthropic_system",
    "place_in_instructions",
    "place_in_messages",
    "relations_text",
    "strip_blocks",
    "strip_content",
    "strip_messages",
    "tool_trail",
]
