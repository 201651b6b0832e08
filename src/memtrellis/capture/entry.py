"""A captured turn as it is spooled: JSON only, with every message given a stable id."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memtrellis.errors import InvalidInputError
from memtrellis.types import Scope

__all__ = ["build_entry"]


def _iso(value: Any) -> str:
    # Message timestamps may be datetimes; the spool keeps them as ISO text.
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _assign_ids(data: Any, prefix: str) -> None:
    """Give id-less messages ids derived from the capture id.

    A replay after a crash then extracts the very same message ids, so provenance and
    the derived memory ids do not change between the first attempt and the replay.
    """
    counter = 0

    def visit(node: Any) -> None:
        nonlocal counter
        if isinstance(node, dict):
            if "role" in node and not node.get("id") and not node.get("message_id"):
                node["id"] = f"{prefix}-{counter}"
                counter += 1
        elif isinstance(node, list):
            for child in node:
                visit(child)

    visit(data)


def build_entry(
    data: Any,
    scope: Scope,
    *,
    mode: str,
    at: datetime,
    tags: Sequence[str],
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The spool record for one capture; raises ``InvalidInputError`` if not JSON-able."""
    entry_id = uuid.uuid4().hex
    entry = {
        "id": entry_id,
        "at": at.isoformat(),
        "scope": scope.model_dump(),
        "mode": mode,
        "tags": list(tags),
        "metadata": dict(metadata or {}),
        "data": data,
    }
    try:
        # A round trip copies the caller's objects, so ids added below never touch them.
        copied: dict[str, Any] = json.loads(json.dumps(entry, default=_iso))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"capture() needs JSON-serialisable data: {exc}") from exc
    except RecursionError:
        raise InvalidInputError("capture() data is nested too deeply to spool") from None
    _assign_ids(copied["data"], entry_id[:16])
    return copied
