"""Registration with the [`Memory`][memtrellis.Memory] facade: SDK clients patched in place and
framework objects wrapped by the integration of their name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memtrellis.clients import register_client
from memtrellis.errors import InvalidInputError
from memtrellis.registry import register as register_integration

if TYPE_CHECKING:
    from memtrellis.memory import Memory


def register(
    memory: Memory, client: Any, named: Mapping[str, Any], options: Mapping[str, Any]
) -> Any:
    """``Memory.register``: the patched client, one wrapped object, or several by name."""
    if client is not None:
        if named:
            raise InvalidInputError("register() takes a client or name=object, not both")
        return register_client(memory, client, **options)
    if not named:
        raise InvalidInputError(
            "register() takes a client, or integration=object, e.g. langchain=llm"
        )
    wrapped = {
        name: register_integration(memory, name, obj, **options) for name, obj in named.items()
    }
    return next(iter(wrapped.values())) if len(wrapped) == 1 else wrapped
