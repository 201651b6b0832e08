"""The memory service: a JSON HTTP API and an MCP server over one shared ``Memory``.

Needs the ``service`` extra (``pip install ".[service]"`` in a clone, ``"memtrellis[service]"``
once published). Run it with
``memtrellis serve`` (HTTP) or ``memtrellis mcp`` (MCP over stdio); see docs/service.md.
Importing this package is cheap: FastAPI and the MCP SDK load with the modules that use
them (`memtrellis.service.app`, `memtrellis.service.mcp_server`).

Examples:
    >>> from memtrellis.service import KeyRing, Principal
    >>> Principal(entity_ids=("alice",)).entity_for(None)
    'alice'
"""

from memtrellis.service.auth import ApiKey, KeyRing, Principal, default_keys_path

__all__ = ["ApiKey", "KeyRing", "Principal", "default_keys_path"]
