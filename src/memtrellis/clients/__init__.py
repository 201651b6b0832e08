"""Memory for raw OpenAI and Anthropic SDK clients: ``memory.register(client)``.

Registering a client patches its own methods (never the SDK's classes, never imported
here): each call recalls memories for the last user message, places the memory context
where the API reads instructions, calls the original method and captures the new turn
in the background, streams included. See ``docs/sdk-clients.md``.

Modules: `matchers` (which SDK a client is),
`handlers` (the ``openai`` and ``anthropic`` entry points of `memtrellis.registry`),
`patch` (idempotent, reversible patching),
`calls` (one call's memory steps),
`streams` (pass-through streams captured at their end),
`payload` (what is captured; never secrets),
`openai` and `anthropic` (the APIs).
"""

from memtrellis.clients.handlers import register_client
from memtrellis.clients.matchers import match_client, supported_clients
from memtrellis.clients.patch import registration_of

__all__ = ["match_client", "register_client", "registration_of", "supported_clients"]
