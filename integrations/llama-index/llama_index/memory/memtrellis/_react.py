"""Detect the one LlamaIndex setup that silently drops memory context: a ``ReActAgent``
without a ``system_prompt`` reading a ``Memory`` that places its blocks in the system
message.

``ReActAgent.take_step`` removes the first message when it is a system message (it
expects the agent's own ``system_prompt`` there, already folded into the ReAct header).
Without a ``system_prompt`` that first message is the one ``Memory`` put its blocks
into, so the model never sees them. ``Memory(insert_method="user")`` (or any
``system_prompt``) avoids it.

Neither the memory block nor ``Memory`` is told which agent reads it, so the check looks
at the coroutines awaiting the read: the agent's step (``self``) and ``Memory.aget``
(``self``) are on that chain.
"""

from __future__ import annotations

import logging
import sys
import warnings
from types import FrameType
from typing import Any

__all__ = ["REACT_WARNING", "ReactCheck", "react_drops_system_message"]

log = logging.getLogger("llama_index.memory.memtrellis")

REACT_WARNING = (
    "A ReActAgent without a system_prompt drops the system message, and with it the "
    "memory context that llama_index.core.memory.Memory placed there: the model will not "
    "see what memtrellis recalled. Create the memory with "
    "Memory.from_defaults(..., insert_method='user'), or give the agent a system_prompt."
)

_MAX_FRAMES = 64


def _react_without_prompt(owner: Any) -> bool:
    from llama_index.core.agent.workflow import AgentWorkflow, ReActAgent

    if isinstance(owner, ReActAgent):
        return not owner.system_prompt
    if isinstance(owner, AgentWorkflow):
        return any(
            isinstance(agent, ReActAgent) and not agent.system_prompt
            for agent in owner.agents.values()
        )
    return False


def react_drops_system_message(into_system: bool | None = None) -> bool:
    """Whether the memory read in progress is for a ReAct agent that will drop it.

    True when a ``ReActAgent`` without a ``system_prompt`` (alone or in an
    ``AgentWorkflow``) is reading a memory that places its context in the system message:
    ``into_system``, or when it is ``None``, the ``insert_method`` of the LlamaIndex
    ``Memory`` being read.
    """
    from llama_index.core.agent.workflow import BaseWorkflowAgent
    from llama_index.core.agent.workflow.multi_agent_workflow import AgentWorkflow
    from llama_index.core.memory.memory import InsertMethod
    from llama_index.core.memory.memory import Memory as ChatMemory

    frame: FrameType | None = sys._getframe(1)
    insert_method: InsertMethod | None = None
    for _ in range(_MAX_FRAMES):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if isinstance(owner, ChatMemory) and insert_method is None:
            insert_method = owner.insert_method
        elif isinstance(owner, BaseWorkflowAgent | AgentWorkflow):
            if into_system is None:
                into_system = insert_method == InsertMethod.SYSTEM
            return into_system and _react_without_prompt(owner)
        frame = frame.f_back
    return False


class ReactCheck:
    """Warns once (a ``UserWarning`` and a log record) when a read is for a ReAct agent
    that will drop the memory context.

    Examples:
        >>> ReactCheck().check()  # not read by an agent: no warning
        False
    """

    def __init__(self) -> None:
        self.warned = False

    def check(self, into_system: bool | None = None) -> bool:
        """Look at the read in progress; True when it warned now."""
        if self.warned:
            return False
        try:
            dropped = react_drops_system_message(into_system)
        except Exception:  # a best-effort check: never the reason a read fails
            dropped = False
        if dropped:
            self.warned = True
            log.warning(REACT_WARNING)
            warnings.warn(REACT_WARNING, UserWarning, stacklevel=3)
        return dropped
