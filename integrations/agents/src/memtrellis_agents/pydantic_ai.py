"""PydanticAI with memtrellis: a capability that recalls into instructions and captures.

* `MemtrellisCapability`: a PydanticAI capability (``Agent(capabilities=[...])``, or per
  run: ``agent.run(prompt, capabilities=[...])``). Its instructions recall for the run's
  prompt and add the memory-context block after the agent's own; after the run, the
  turn is read from the run's new messages (the user's prompt, the model's text answers,
  its tool calls and the tools' returns; never instructions, system prompts or the
  memory block) and captured: the answer's memory carries the calls and returns it came
  from as its sources.
* `turn_of`: that reading of a PydanticAI message history, as neutral message dicts.
* `register` (the ``memtrellis.integrations`` entry point ``pydantic_ai``):
  ``memory.register(pydantic_ai=agent, entity_id=...)`` returns a `MemtrellisCapability`
  for that agent's runs.

Examples:
    >>> import tempfile
    >>> from pydantic_ai import Agent
    >>> from pydantic_ai.models.test import TestModel
    >>> from memtrellis import Memory
    >>> from memtrellis.testing import HashingEmbedder
    >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
    >>> agent = Agent(TestModel(custom_output_text="Noted."))
    >>> memory_for_alice = memory.register(pydantic_ai=agent, entity_id="alice")
    >>> agent.run_sync("I moved to Porto", capabilities=[memory_for_alice]).output
    'Noted.'
    >>> memory.flush()
    True
    >>> memory_for_alice.binding.stats.captured
    1
    >>> memory.close()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memtrellis import InvalidInputError, Memory
from memtrellis.binding import (
    DEFAULT_K,
    DEFAULT_OPEN_ITEMS,
    DEFAULT_RECENT_TURNS,
    DEFAULT_TOKEN_BUDGET,
    AdapterOptions,
    Binding,
)
from memtrellis.context import strip_content
from memtrellis.tool_calls import mark_memory_tools, neutral_call
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.run import AgentRunResult

from memtrellis_agents._shared import DESCRIPTION, check_entity, relate_answer

__all__ = ["MemtrellisCapability", "register", "relate_tool", "turn_of"]

SOURCE = "pydantic_ai"
#: Whose memory: a fixed entity id, or one read from the run context (``ctx.deps``).
EntityOf = str | Callable[[RunContext[Any]], str | None] | None


def _prompt_text(content: str | Sequence[Any]) -> str:
    """A user prompt's text: the string, or its string parts (images and files left out)."""
    if isinstance(content, str):
        return content
    return "\n".join(part for part in content if isinstance(part, str) and part)


def _tool_result(part: ToolReturnPart | RetryPromptPart) -> dict[str, Any]:
    """A tool's return (or the retry PydanticAI asked for after a failed call) as a tool
    message answering its call."""
    failed = isinstance(part, RetryPromptPart) or part.outcome != "success"
    content = (
        part.model_response() if isinstance(part, RetryPromptPart) else part.model_response_str()
    )
    message: dict[str, Any] = {"role": "tool", "content": content, "name": part.tool_name}
    if part.tool_call_id:
        message["tool_call_id"] = part.tool_call_id
    return {**message, "status": "error"} if failed else message


def _request_messages(message: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    prompts: list[str] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            prompts.append(_prompt_text(part.content))
        elif isinstance(part, ToolReturnPart) or (
            isinstance(part, RetryPromptPart) and part.tool_name
        ):
            out.append(_tool_result(part))
    text = strip_content("\n".join(t for t in prompts if t)).strip()
    return [*out, {"role": "user", "content": text}] if text else out


def _response_message(message: ModelResponse) -> dict[str, Any] | None:
    texts = [part.content for part in message.parts if isinstance(part, TextPart)]
    calls = [
        neutral_call(part.tool_name, part.args_as_json_str(), part.tool_call_id)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    text = strip_content("\n".join(t for t in texts if t)).strip()
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text}
    return {**out, "tool_calls": calls} if calls else out


def turn_of(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """A PydanticAI message history as neutral message dicts: the user prompts, the
    model's answers and tool calls (``ToolCallPart``) and the tools' returns
    (``ToolReturnPart``; a ``RetryPromptPart`` after a failed call as a failed return),
    in order, without memory-context blocks. Instructions and system prompts are left
    out. A structured answer (PydanticAI's output tool) is its call, arguments whole.

    Examples:
        >>> from pydantic_ai.messages import (
        ...     ModelRequest, ModelResponse, SystemPromptPart, TextPart, UserPromptPart)
        >>> history = [
        ...     ModelRequest(parts=[SystemPromptPart("Be brief."), UserPromptPart("Hi, I'm Ana")],
        ...                  instructions="<memory_context>...</memory_context>"),
        ...     ModelResponse(parts=[TextPart("Hello Ana!")]),
        ... ]
        >>> turn_of(history)
        [{'role': 'user', 'content': "Hi, I'm Ana"}, {'role': 'assistant', 'content': 'Hello Ana!'}]
        >>> turn_of([ModelResponse(parts=[ToolCallPart("lookup", {"q": "tea"}, "c1")]),
        ...          ModelRequest(parts=[ToolReturnPart("lookup", "Tea house", "c1")])])[1]
        {'role': 'tool', 'content': 'Tea house', 'name': 'lookup', 'tool_call_id': 'c1'}
    """
    turn: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            turn.extend(_request_messages(message))
        elif isinstance(message, ModelResponse):
            found = _response_message(message)
            if found is not None:
                turn.append(found)
    return turn


def _query(ctx: RunContext[Any]) -> str | None:
    """What recall searches with: the run's prompt, else the history's last user prompt."""
    if ctx.prompt is not None:
        text = _prompt_text(ctx.prompt).strip()
        if text:
            return text
    for message in reversed(turn_of(ctx.messages)):
        if message["role"] == "user":
            return str(message["content"])
    return None


class MemtrellisCapability(AbstractCapability[Any]):
    """Memory for a PydanticAI agent: recalled into its instructions, each run captured.

    The instructions it adds are dynamic: before each model request they recall for the
    run's prompt (``ctx.prompt``, else the last user prompt of the history) and render a
    memory-context block within ``token_budget`` tokens; PydanticAI joins them after the
    agent's own instructions. After the run, `turn_of` the run's new messages is captured
    once (a run that raised captures nothing). A memory failure is counted in
    ``memory.health()`` and the run goes on without memory, unless ``strict``.

    Args:
        memory: The ``Memory`` to recall from and capture into.
        entity_id: Whose memory: an id, a callable of the run context (for one agent
            serving many users: ``lambda ctx: ctx.deps.user_id``), or None (the memory's
            default, or the active ``memory.scope(entity_id=...)`` block).
        process_id: Which app or agent (None: the memory's own).
        session_id: Session recorded on captured turns (recall spans sessions).
        k: Most memories recalled per request.
        token_budget: Most tokens of the memory-context block.
        capture_mode: ``"fast"``/``"fine"`` for captured turns (None: the memory's default).
        capture: False to only recall (capture turns yourself, or not at all).
        strict: Raise memory failures instead of going on without memory.
        recent_turns: Most messages of the block's recent-conversation stage (4; 0:
            none): only conversation the call does not carry, never a message of it.
        open_items: Most of the user's open decisions and action items the block keeps
            room for, recalled or not (10; 0: only those recall returns).
        context_hint: Let the conversation before the question steer recall (True).
        session_history: Read up to this many of the session's earlier messages that the
            call lacks for the recent stage (0: off; needs ``session_id``).

    Examples:
        >>> import tempfile
        >>> from pydantic_ai import Agent
        >>> from pydantic_ai.models.function import AgentInfo, FunctionModel
        >>> from pydantic_ai.messages import ModelResponse, TextPart
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> memory = Memory(tempfile.mkdtemp(), embedder=HashingEmbedder())
        >>> _ = memory.add("Alice is allergic to peanuts", entity_id="alice")
        >>> sent = []
        >>> def model(messages, info: AgentInfo) -> ModelResponse:
        ...     sent.append(info.instructions)
        ...     return ModelResponse(parts=[TextPart("Apple slices.")])
        >>> agent = Agent(FunctionModel(model), instructions="Be brief.")
        >>> capability = MemtrellisCapability(memory, entity_id="alice", capture=False)
        >>> agent.run_sync("A snack without peanuts?", capabilities=[capability]).output
        'Apple slices.'
        >>> sent[0].startswith("Be brief.") and "allergic to peanuts" in sent[0]
        True
        >>> memory.close()
    """

    def __init__(
        self,
        memory: Memory,
        *,
        entity_id: EntityOf = None,
        process_id: str | None = None,
        session_id: str | None = None,
        k: int = DEFAULT_K,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        capture_mode: str | None = None,
        capture: bool = True,
        strict: bool = False,
        recent_turns: int = DEFAULT_RECENT_TURNS,
        open_items: int = DEFAULT_OPEN_ITEMS,
        context_hint: bool = True,
        session_history: int = 0,
    ) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError(f"expected a memtrellis Memory, got {type(memory).__name__}")
        check_entity(entity_id)
        options = AdapterOptions(
            entity_id=entity_id if isinstance(entity_id, str) else None,
            process_id=process_id,
            session_id=session_id,
            k=k,
            token_budget=token_budget,
            capture_mode=capture_mode,
            strict=strict,
            recent_turns=recent_turns,
            open_items=open_items,
            context_hint=context_hint,
            session_history=session_history,
        )
        self.binding = Binding(memory, options, source=SOURCE)
        self.entity_id = entity_id
        self.capture = capture

    def _scope(self, ctx: RunContext[Any]) -> dict[str, str]:
        named: dict[str, str] = {}
        if callable(self.entity_id):
            entity = self.entity_id(ctx)
            if entity is not None:
                named["entity_id"] = entity
        return self.binding.scope(named)

    def get_instructions(self) -> Callable[[RunContext[Any]], Any]:
        """The dynamic instructions: the memory-context block for this request's query."""
        return self.instructions

    async def instructions(self, ctx: RunContext[Any]) -> str:
        """The memory-context block recalled for the run's prompt (``""``: nothing)."""
        self.binding.count("call")
        scope: dict[str, str] = {}
        with self.binding.guard("recall", what="resolving the entity"):
            scope = self._scope(ctx)
        query = _query(ctx)
        said = turn_of(ctx.messages)  # the history sent: it steers recall, never placed again
        if query and query not in [m["content"] for m in said if m["role"] == "user"][-1:]:
            said.append({"role": "user", "content": query})
        context = await self.binding.acontext(query, scope, messages=said)
        return context.text

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Capture the run's turn (its new messages), then return ``result`` unchanged."""
        if self.capture:
            scope: dict[str, str] | None = None
            with self.binding.guard("capture", what="resolving the entity"):
                scope = self._scope(ctx)
            if scope is not None:
                turn = turn_of(result.new_messages())
                await self.binding.acapture(turn, scope, what="a PydanticAI run")
        return result

    def __repr__(self) -> str:
        return f"MemtrellisCapability(entity_id={self.entity_id!r})"


def relate_tool(
    memory: Memory, *, entity_id: EntityOf = None, process_id: str | None = None
) -> Tool[Any]:
    """A ``relate_memories`` tool for a PydanticAI ``Agent``: how two things the user's
    memories mention are related (``Memory.relate``, no LLM), answered as every relate
    tool answers (`memtrellis.context.relations_text`). Its calls and results are left
    out of captured turns.

    Args:
        memory: The ``Memory`` to read.
        entity_id: Whose memory: an id, a callable of the run context
            (``lambda ctx: ctx.deps.user_id``), or None (the memory's default, or the
            active ``memory.scope(entity_id=...)`` block).
        process_id: Which app or agent (None: the memory's own).

    Examples:
        >>> import tempfile
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     relate_tool(memory, entity_id="alice").name
        'relate_memories'
    """
    check_entity(entity_id)

    async def relate_memories(ctx: RunContext[Any], a: str, b: str) -> str:
        """Find how two people, places or things are related through the user's memories.

        Args:
            a: A person, place or thing, e.g. "Hana", or a memory id.
            b: Another one, e.g. "Kyoto".
        """
        entity = entity_id(ctx) if callable(entity_id) else entity_id
        return await relate_answer(memory, a, b, entity_id=entity, process_id=process_id)

    mark_memory_tools(["relate_memories"])
    return Tool(relate_memories, takes_ctx=True, description=DESCRIPTION)


def register(memory: Memory, obj: Any, **options: Any) -> MemtrellisCapability:
    """Entry point of ``memtrellis.integrations``: a `MemtrellisCapability` for the runs of
    the PydanticAI agent ``obj`` (pass it in ``agent.run(..., capabilities=[...])``);
    options: those of `MemtrellisCapability`.

    Raises:
        InvalidInputError: ``obj`` is not a ``pydantic_ai.Agent``.

    Examples:
        >>> import tempfile
        >>> from pydantic_ai import Agent
        >>> from pydantic_ai.models.test import TestModel
        >>> from memtrellis import Memory
        >>> from memtrellis.testing import HashingEmbedder
        >>> with Memory(tempfile.mkdtemp(), embedder=HashingEmbedder()) as memory:
        ...     register(memory, Agent(TestModel()), entity_id="bob")
        MemtrellisCapability(entity_id='bob')
    """
    if not isinstance(obj, Agent):
        raise InvalidInputError(
            f"the pydantic_ai integration gives memory to pydantic_ai.Agent; "
            f"got {type(obj).__name__}"
        )
    return MemtrellisCapability(memory, **options)
