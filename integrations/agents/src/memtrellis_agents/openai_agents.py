"""The OpenAI Agents SDK with memtrellis: a session that captures, instructions that recall.

* `MemtrellisSession`: the SDK's ``Session`` protocol (``get_items``, ``add_items``,
  ``pop_item``, ``clear_session``). The conversation's items are kept verbatim by an
  inner session (the SDK's own ``SQLiteSession``, in memory unless you pass another), and
  each finished turn (the user's messages, the assistant's tool calls and their output,
  and its answer) is captured into memtrellis, under the session's user, for every later
  session of that user: the answer's memory carries the calls and outputs it came from.
* `MemoryInstructions`: dynamic instructions (``Agent(instructions=...)``) that recall
  for the latest user message and add the memory-context block after the agent's own
  instructions. Memory reaches the model only there, never in the session's items, so it
  is never captured back.
* `register` (the ``memtrellis.integrations`` entry point ``openai_agents``):
  ``memory.register(openai_agents=agent, entity_id=...)`` returns a clone of the agent
  whose instructions are `MemoryInstructions` around its own.

Examples:
    >>> import tempfile
    >>> from agents import Agent
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
    >>> agent = memory.register(openai_agents=Agent(name="a", instructions="Be brief."))
    >>> type(agent.instructions).__name__
    'MemoryInstructions'
    >>> memory.close()
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from agents import (
    Agent,
    FunctionTool,
    RunContextWrapper,
    SQLiteSession,
    TResponseInputItem,
    function_tool,
)
from agents.memory import Session, SessionSettings
from agents.models.fake_id import FAKE_RESPONSES_ID
from memtrellis import InvalidInputError, Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
    AdapterOptions,
    Binding,
)
from memtrellis.context import (
    last_user_text,
    place_in_instructions,
    strip_content,
)
from memtrellis.tool_calls import mark_memory_tools, neutral_call

from memtrellis_agents._shared import DESCRIPTION, check_entity, relate_answer

__all__ = [
    "MemoryInstructions",
    "MemtrellisSession",
    "item_message",
    "register",
    "relate_tool",
    "turn_item",
]

SOURCE = "openai_agents"
#: What an agent's own instructions can be: text, or the SDK's dynamic instructions.
BaseInstructions = str | Callable[[RunContextWrapper[Any], Agent[Any]], str | Awaitable[str]] | None
#: Whose memory: a fixed entity id, or one read from the run context (``ctx.context``).
EntityOf = str | Callable[[RunContextWrapper[Any]], str | None] | None
_ROLES = {"user": "user", "assistant": "assistant"}


def _text(content: Any) -> str:
    """The text of an item's content: a string, or the text of its input/output parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        ]
        return "\n".join(text for text in texts if text)
    return ""


def item_message(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A session item as a neutral message dict; None for what is not a user or assistant
    message with text (instructions, tool calls and their output, reasoning).

    Memory-context blocks are stripped from the text. The item's ``id`` is kept, except
    the placeholder that models other than OpenAI's Responses API give every message
    (``__fake_id__``): as a message id it would make each answer look like a resent one.

    Examples:
        >>> item_message({"role": "user", "content": "I moved to Porto"})
        {'role': 'user', 'content': 'I moved to Porto'}
        >>> item_message({"id": "msg_1", "type": "message", "role": "assistant",
        ...               "content": [{"type": "output_text", "text": "Nice!"}]})
        {'role': 'assistant', 'content': 'Nice!', 'id': 'msg_1'}
        >>> item_message({"type": "function_call", "name": "lookup", "arguments": "{}"}) is None
        True
    """
    if not isinstance(item, Mapping):
        return None
    role = _ROLES.get(str(item.get("role", "")))
    if role is None or item.get("type", "message") != "message":
        return None
    text = strip_content(_text(item.get("content"))).strip()
    if not text:
        return None
    message: dict[str, Any] = {"role": role, "content": text}
    if isinstance(item.get("id"), str) and item["id"] and item["id"] != FAKE_RESPONSES_ID:
        message["id"] = item["id"]
    return message


def turn_item(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """A session item as a captured turn holds it: a user or assistant message
    (`item_message`), a ``function_call`` (the assistant's tool call) or a
    ``function_call_output`` (the tool's result, answering the call of its ``call_id``).

    Examples:
        >>> turn_item({"type": "function_call", "call_id": "c1", "name": "lookup",
        ...            "arguments": '{"q": "tea"}'})  # doctest: +NORMALIZE_WHITESPACE
        {'role': 'assistant', 'content': '',
         'tool_calls': [{'name': 'lookup', 'arguments': '{"q": "tea"}', 'id': 'c1'}]}
        >>> turn_item({"type": "function_call_output", "call_id": "c1", "output": "Tea house"})
        {'role': 'tool', 'content': 'Tea house', 'tool_call_id': 'c1'}
    """
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind == "function_call":
        call = neutral_call(item.get("name"), item.get("arguments"), item.get("call_id"))
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    if kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else _text(output) or str(output or "")
        message: dict[str, Any] = {"role": "tool", "content": text}
        if isinstance(item.get("call_id"), str) and item["call_id"]:
            message["tool_call_id"] = item["call_id"]
        return message
    return item_message(item)


def _binding(memory: Memory, **options: Any) -> Binding:
    if not isinstance(memory, Memory):
        raise InvalidInputError(f"expected a memtrellis Memory, got {type(memory).__name__}")
    return Binding(memory, AdapterOptions(**options), source=SOURCE)


class MemtrellisSession:
    """An Agents SDK ``Session`` whose finished turns are captured into memtrellis.

    ``Runner.run(agent, text, session=...)`` reads the history with `get_items` and saves
    new items with `add_items`: the user's input before the model runs, the answer after.
    The items are kept verbatim by ``history`` (any ``Session``; default: the SDK's
    ``SQLiteSession(session_id)`` in memory). A turn is captured once, when its answer
    arrives: the user messages saved since the last answer and the assistant's messages
    (text only; tool calls and their output stay in the history). Recall spans the
    sessions of one entity; put it in the instructions with `MemoryInstructions`.

    Args:
        session_id: The SDK's session id; captured turns record it as ``session_id``.
        memory: The ``Memory`` turns are captured into.
        entity_id: Whose memory (None: the memory's default, or the active
            ``memory.scope(entity_id=...)`` block).
        process_id: Which app or agent (None: the memory's own).
        history: Where the items live (default: a new in-memory ``SQLiteSession``).
        capture_mode: ``"fast"``/``"fine"`` for captured turns (None: the memory's default).
        strict: Raise memory failures instead of going on without memory.

    Examples:
        >>> import asyncio, tempfile
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> session = MemtrellisSession("s1", memory, entity_id="alice", capture_mode="fast")
        >>> asyncio.run(session.add_items([{"role": "user", "content": "I moved to Porto"}]))
        >>> answer = {"type": "message", "role": "assistant",
        ...           "content": [{"type": "output_text", "text": "Porto is lovely."}]}
        >>> asyncio.run(session.add_items([answer]))
        >>> memory.flush()
        True
        >>> sorted(item.text for item in memory.list(entity_id="alice"))
        ['I moved to Porto', 'Porto is lovely.']
        >>> len(asyncio.run(session.get_items()))
        2
        >>> memory.close()
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        entity_id: str | None = None,
        process_id: str | None = None,
        history: Session | None = None,
        capture_mode: str | None = None,
        strict: bool = False,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id must be a non-empty string")
        self.session_id = session_id
        self.history: Session = history if history is not None else SQLiteSession(session_id)
        self.session_settings = getattr(self.history, "session_settings", None)
        self.binding = _binding(
            memory,
            entity_id=entity_id,
            process_id=process_id,
            session_id=session_id,
            capture_mode=capture_mode,
            strict=strict,
        )
        # Messages saved since the last answer (the user's, tool steps): captured with it.
        self._pending: list[dict[str, Any]] = []

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first (the latest ``limit`` when given)."""
        return await self.history.get_items(limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Save ``items`` in the history; the assistant's answer captures the turn (the
        user messages saved since the last answer, the tool calls and their output, then
        the answer). A turn that ended on tool calls is captured when the next user
        message comes."""
        await self.history.add_items(items)
        answered = False
        for item in items:
            message = turn_item(cast(Mapping[str, Any], item))
            if message is None:
                continue
            steps = any(m["role"] != "user" for m in self._pending)
            if message["role"] == "user" and (answered or steps):
                await self._capture()  # a user message after an answer starts the next turn
                answered = False
            self._pending.append(message)
            answered = answered or (
                message["role"] == "assistant" and not message.get("tool_calls")
            )
        if answered:
            await self._capture()

    async def _capture(self) -> None:
        turn, self._pending = self._pending, []
        await self.binding.acapture(turn, self.binding.scope(), what="an Agents SDK turn")

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item of the history.

        A user message not yet answered is no longer captured; a turn already captured
        stays in memory (``memory.forget`` removes memories).
        """
        item = await self.history.pop_item()
        if item is not None and self._pending:
            message = turn_item(cast(Mapping[str, Any], item))
            if message is not None and message == self._pending[-1]:
                self._pending.pop()
        return item

    async def clear_session(self) -> None:
        """Clear the history (and what was not captured yet); memories stay."""
        self._pending = []
        await self.history.clear_session()

    def __repr__(self) -> str:
        return f"MemtrellisSession({self.session_id!r}, {type(self.history).__name__})"


class MemoryInstructions:
    """Dynamic instructions: the agent's own, then the memories recalled for the latest
    user message (a memory-context block within ``token_budget`` tokens).

    Pass it as ``Agent(instructions=MemoryInstructions(memory, "Be brief."))``; the SDK
    calls it before each model call with the run context, whose ``turn_input`` holds the
    conversation sent. A recall failure leaves the instructions as they were (counted in
    ``memory.health()``) unless ``strict``.

    Args:
        memory: The ``Memory`` to recall from.
        instructions: The agent's own instructions: text or a dynamic-instructions
            callable ``(ctx, agent) -> str`` (sync or async).
        entity_id: Whose memory: an id, a callable of the run context (for one agent
            serving many users: ``lambda ctx: ctx.context.user_id``), or None (the
            memory's default, or the active ``memory.scope(entity_id=...)`` block).
        process_id: Which app or agent (None: the memory's own).
        k: Most memories recalled.
        token_budget: Most tokens of the memory-context block.
        strict: Raise memory failures instead of going on without memory.
        recent_turns: Most messages of the block's recent-conversation stage (4; 0:
            none): only conversation the call does not carry, never a message of it.
        open_items: Most of the user's open decisions and action items the block keeps
            room for, recalled or not (10; 0: only those recall returns).
        context_hint: Let the conversation before the question steer recall (True).
        session_history: Read up to this many of the session's earlier messages that the
            call lacks for the recent stage (0: off; needs a session id: an active
            ``memory.scope(session_id=...)`` block's).

    Examples:
        >>> import asyncio, tempfile
        >>> from agents import Agent, RunContextWrapper
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is allergic to peanuts", entity_id="alice")
        >>> instructions = MemoryInstructions(memory, "Be brief.", entity_id="alice")
        >>> ctx = RunContextWrapper(context=None)
        >>> ctx.turn_input = [{"role": "user", "content": "A snack without peanuts?"}]
        >>> text = asyncio.run(instructions(ctx, Agent(name="a")))
        >>> text.startswith("Be brief.") and "allergic to peanuts" in text
        True
        >>> memory.close()
    """

    def __init__(
        self,
        memory: Memory,
        instructions: BaseInstructions = None,
        *,
        entity_id: EntityOf = None,
        process_id: str | None = None,
        k: int = DEFAULT_K,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        strict: bool = False,
        recent_turns: int = DEFAULT_RECENT_TURNS,
        open_items: int = DEFAULT_OPEN_ITEMS,
        context_hint: bool = True,
        session_history: int = 0,
    ) -> None:
        if isinstance(instructions, MemoryInstructions):
            instructions = instructions.own  # never recall twice
        if not (instructions is None or isinstance(instructions, str) or callable(instructions)):
            raise InvalidInputError("instructions must be text, a callable or None")
        check_entity(entity_id)
        #: The agent's own instructions (what ``base`` resolves).
        self.own: BaseInstructions = instructions
        self.entity_id = entity_id
        self.binding = _binding(
            memory,
            entity_id=entity_id if isinstance(entity_id, str) else None,
            process_id=process_id,
            k=k,
            token_budget=token_budget,
            strict=strict,
            recent_turns=recent_turns,
            open_items=open_items,
            context_hint=context_hint,
            session_history=session_history,
        )

    async def base(self, ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str | None:
        """The agent's own instructions for this call."""
        own = self.own
        if own is None or isinstance(own, str):
            return own
        value = own(ctx, agent)
        if inspect.isawaitable(value):
            value = await value
        return cast("str | None", value)

    def _scope(self, ctx: RunContextWrapper[Any]) -> dict[str, str]:
        # The session of an active memory.scope block: whose history session_history reads.
        named = {n: v for n, v in self.binding.memory.call_scope().items() if n == "session_id"}
        if callable(self.entity_id):
            entity = self.entity_id(ctx)
            if entity is not None:
                named["entity_id"] = entity
        return self.binding.scope(named)

    async def __call__(self, ctx: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        base = await self.base(ctx, agent)
        messages = [m for item in ctx.turn_input if (m := item_message(cast(Any, item)))]
        self.binding.count("call")
        scope: dict[str, str] = {}
        with self.binding.guard("recall", what="resolving the entity"):
            scope = self._scope(ctx)
        context = await self.binding.acontext(last_user_text(messages), scope, messages=messages)
        return place_in_instructions(base, context) or ""

    def __repr__(self) -> str:
        return f"MemoryInstructions({self.own!r})"


def relate_tool(
    memory: Memory, *, entity_id: EntityOf = None, process_id: str | None = None
) -> FunctionTool:
    """A ``relate_memories`` tool for an Agents SDK ``Agent``: how two things the user's
    memories mention are related (``Memory.relate``, no LLM), answered as every relate
    tool answers (`memtrellis.context.relations_text`). Its calls and results are left
    out of captured turns.

    Args:
        memory: The ``Memory`` to read.
        entity_id: Whose memory: an id, a callable of the run context, or None (the
            memory's default, or the active ``memory.scope(entity_id=...)`` block).
        process_id: Which app or agent (None: the memory's own).

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     tool = relate_tool(memory, entity_id="alice")
        >>> tool.name, sorted(tool.params_json_schema["properties"])
        ('relate_memories', ['a', 'b'])
    """
    check_entity(entity_id)

    async def relate_memories(ctx: RunContextWrapper[Any], a: str, b: str) -> str:
        """Find how two people, places or things are related through the user's memories.

        Args:
            a: A person, place or thing, e.g. "Hana", or a memory id.
            b: Another one, e.g. "Kyoto".
        """
        entity = entity_id(ctx) if callable(entity_id) else entity_id
        return await relate_answer(memory, a, b, entity_id=entity, process_id=process_id)

    mark_memory_tools(["relate_memories"])
    return function_tool(relate_memories, description_override=DESCRIPTION)


def register(memory: Memory, obj: Any, **options: Any) -> Agent[Any]:
    """Entry point of ``memtrellis.integrations``: a clone of an Agents SDK ``Agent`` whose
    instructions are `MemoryInstructions` around its own (options: those of
    `MemoryInstructions`).

    Raises:
        InvalidInputError: ``obj`` is not an ``agents.Agent``, or an option is one of a
            session's (``session_id``, ``capture_mode``: give them to `MemtrellisSession`,
            which captures; the instructions only recall, across sessions).

    Examples:
        >>> import tempfile
        >>> from agents import Agent
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     agent = register(memory, Agent(name="a", instructions="Hi."), entity_id="bob")
        >>> agent.instructions.own, agent.instructions.entity_id
        ('Hi.', 'bob')
    """
    if not isinstance(obj, Agent):
        raise InvalidInputError(
            f"the openai_agents integration wraps agents.Agent; got {type(obj).__name__}"
        )
    session_options = sorted({"session_id", "capture_mode"} & set(options))
    if session_options:
        raise InvalidInputError(
            f"{', '.join(session_options)}: an option of MemtrellisSession, which captures "
            "turns; the agent's instructions only recall (across sessions)"
        )
    return obj.clone(instructions=MemoryInstructions(memory, obj.instructions, **options))


def _is_a_session(session: MemtrellisSession) -> Session:
    """mypy --strict checks here that `MemtrellisSession` has the installed SDK's
    ``Session`` protocol, signatures included."""
    return session
