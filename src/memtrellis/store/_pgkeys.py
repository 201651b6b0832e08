"""What the PostgreSQL backend and its shard storage share: the connection type and the
advisory lock keys (a module of its own, so that neither imports the other)."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

__all__ = ["Connection", "advisory_key", "entity_lock_key"]

Connection = psycopg.Connection[tuple[Any, ...]]


def advisory_key(namespace: str, name: str) -> int:
    """A signed 64-bit advisory lock key for ``name`` in ``namespace`` (a hash).

    Examples:
        >>> advisory_key("a", "b") == advisory_key("a", "b") != advisory_key("a", "c")
        True
    """
    digest = hashlib.blake2b(f"{namespace}\x00{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def entity_lock_key(entity_id: str) -> int:
    """The 64-bit advisory lock key of ``entity_id``'s writer lock (a hash of the id).

    Examples:
        >>> entity_lock_key("ana") == entity_lock_key("ana") != entity_lock_key("bob")
        True
        >>> -(2**63) <= entity_lock_key("ana") < 2**63
        True
    """
    return advisory_key("memtrellis-shard", entity_id)
