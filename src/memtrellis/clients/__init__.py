"""Memory for raw SDK clients: ``memory.register(client)``.

Registering a client patches its own methods (never the SDK's classes, never imported
here): each call recalls memories for the last user message, places the memory context
where the API reads instructions, calls the original method and captures the new turn
in the background, streams included; with session history on
(`session_history`, or ``memory.register(client, session_history=n)``), the session's
earlier turns the request lacks are placed too. See ``docs/sdk-clients.md``.

Modules: `matchers` (which SDK a client is),
`handlers` (the ``openai``, ``anthropic``, ``google_genai``, ``bedrock``, ``ollama`` and
``litellm`` entry points of `memtrellis.registry`),
`patch` (idempotent, reversible patching),
`calls` (one call's memory steps),
`streams` (pass-through streams captured at their end),
`payload` (what is captured; never secrets),
`endpoints` (which provider a client's address names),
and one module per provider's APIs: `openai`, `anthropic`, `google` (Google Gen AI),
`bedrock` (boto3's Converse), `ollama` and `litellm`.
"""

from memtrellis.clients.handlers import register_client
from memtrellis.clients.matchers import match_client, supported_clients
from memtrellis.clients.patch import registration_of
from memtrellis.session_history import session_history

__all__ = [
    "match_client",
    "register_client",
    "registration_of",
    "session_history",
    "supported_clients",
]
