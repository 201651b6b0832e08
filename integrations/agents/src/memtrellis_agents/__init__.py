"""memtrellis for agent frameworks: one module per framework, each in its own extra.

* `memtrellis_agents.openai_agents` (``pip install "memtrellis-agents[openai-agents]"``):
  `MemtrellisSession`, the SDK's ``Session`` that captures each finished turn,
  `MemoryInstructions`, dynamic instructions that recall, and `relate_tool`, how two
  things the user's memories mention are related.
* `memtrellis_agents.pydantic_ai` (``pip install "memtrellis-agents[pydantic-ai]"``):
  `MemtrellisCapability`, a PydanticAI capability that places memory in the agent's
  instructions and captures each run's turn from its message history, and
  `relate_tool`.
* `memtrellis_agents.crewai` (``pip install "memtrellis-agents[crewai]"``):
  `MemtrellisMemory`, CrewAI's unified ``Memory`` answered by memtrellis (recall before a
  task, what the task found remembered after it).

Importing this package imports no framework; each module imports only its own. The core
finds them by the ``memtrellis.integrations`` entry points ``openai_agents`` and
``pydantic_ai`` and ``crewai`` (``memory.register(openai_agents=agent)``).

Examples:
    >>> import memtrellis_agents
    >>> memtrellis_agents.FRAMEWORKS["pydantic_ai"]
    'memtrellis_agents.pydantic_ai'
"""

from __future__ import annotations

__all__ = ["FRAMEWORKS", "__version__"]

__version__ = "0.1.0"

#: The entry-point name of each framework and the module that holds its integration.
FRAMEWORKS = {
    "openai_agents": "memtrellis_agents.openai_agents",
    "pydantic_ai": "memtrellis_agents.pydantic_ai",
    "crewai": "memtrellis_agents.crewai",
}
