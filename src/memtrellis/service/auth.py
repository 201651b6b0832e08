"""API keys: made once, stored hashed, each bound to the entities and process it may touch.

A key reads ``mtk_<key id>_<secret>``. The keys file keeps the key id, the SHA-256 of the
whole key and its scope, never the key itself: ``memtrellis keys add`` prints a new key
once and nobody can print it again. The secret is 256 random bits, so a plain SHA-256 is
enough (a slow password hash protects guessable passwords, which these are not), and the
comparison uses `hmac.compare_digest`.

A [`Principal`][memtrellis.service.Principal] is what a request may do once its key is checked:
which entities it may name, the process it is pinned to (if any), and whether it may read
``/health`` and ``/metrics`` (a *monitor* key). Naming another entity is refused with 403 before
anything is looked up; a memory id of another tenant is simply not found (404).

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> ring = KeyRing(Path(tempfile.mkdtemp()) / "keys.json")
    >>> record, key = ring.add(entity_ids=["alice"])
    >>> ring.authenticate(key).entity_ids
    ('alice',)
    >>> ring.authenticate(key + "x") is None
    True
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from memtrellis.errors import InvalidInputError
from memtrellis.service.errors import ForbiddenScopeError
from memtrellis.store._files import atomic_write_bytes
from memtrellis.types import Scope, utcnow

__all__ = ["KEYS_FILE", "ApiKey", "KeyRing", "Principal", "default_keys_path"]

log = logging.getLogger("memtrellis.service")

#: The keys file's name inside the store directory.
KEYS_FILE = "service-keys.json"
_PREFIX = "mtk"
_FORMAT = 1


def default_keys_path(store: str | os.PathLike[str]) -> Path:
    """Where the keys of the store at ``store`` live: ``<store>/service-keys.json``.

    Examples:
        >>> default_keys_path("/srv/memtrellis").name
        'service-keys.json'
    """
    return Path(store) / KEYS_FILE


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """One stored key: its id, the hash of the key and what it may touch.

    Attributes:
        key_id: The public part of the key (shown by ``memtrellis keys list``).
        sha256: Hex SHA-256 of the whole key.
        entity_ids: The entities (tenants) the key may read and write.
        process_id: When set, the key writes as this process and sees only its memories.
        monitor: The key may read ``/health`` and ``/metrics`` (store-wide figures).
        label: A note for the operator.
        created_at: ISO 8601 time the key was made.

    Examples:
        >>> key = ApiKey(key_id="k1", sha256="0" * 64, entity_ids=("alice",))
        >>> key.public()["entity_ids"]
        ['alice']
    """

    key_id: str
    sha256: str
    entity_ids: tuple[str, ...] = ()
    process_id: str | None = None
    monitor: bool = False
    label: str = ""
    created_at: str = ""

    def public(self) -> dict[str, Any]:
        """The record without its hash, for listings."""
        return {
            "key_id": self.key_id,
            "entity_ids": list(self.entity_ids),
            "process_id": self.process_id,
            "monitor": self.monitor,
            "label": self.label,
            "created_at": self.created_at,
        }


class KeyRing:
    """The keys file of a service: add, list, revoke and check keys.

    The file is re-read when it changes on disk, so keys added or revoked while the
    service runs take effect on the next request.

    Args:
        path: The keys file (see [`default_keys_path`][memtrellis.service.default_keys_path]);
            created by the first ``add``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> ring = KeyRing(Path(tempfile.mkdtemp()) / "keys.json")
        >>> record, key = ring.add(entity_ids=["alice"], label="support bot")
        >>> ring.authenticate(key) == record, ring.authenticate(key + "x")
        (True, None)
        >>> ring.revoke(record.key_id), ring.list()
        (True, [])
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._keys: dict[str, ApiKey] = {}

    # -- the file --------------------------------------------------------------------------
    def _file_lock(self) -> FileLock:
        return FileLock(str(self.path.with_name(self.path.name + ".lock")), timeout=30)

    def _read(self) -> dict[str, ApiKey]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"cannot read the keys file {self.path}: {exc}") from exc
        keys: dict[str, ApiKey] = {}
        try:
            for entry in raw["keys"]:
                entry["entity_ids"] = tuple(entry.get("entity_ids", ()))
                record = ApiKey(**entry)
                keys[record.key_id] = record
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidInputError(
                f"the keys file {self.path} is not a memtrellis keys file"
            ) from exc
        return keys

    def _write(self, keys: dict[str, ApiKey]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": _FORMAT,
            "keys": [{**record.public(), "sha256": record.sha256} for record in keys.values()],
        }
        atomic_write_bytes(self.path, (json.dumps(payload, indent=2) + "\n").encode("utf-8"))
        self.path.chmod(0o600)

    def _current(self) -> dict[str, ApiKey]:
        try:
            info = self.path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._keys = self._read() if stamp is not None else {}
                except InvalidInputError as exc:
                    # A file being edited by hand or half-copied: keep the keys last read
                    # (none at first, so every request is refused) and try again next time.
                    log.error("%s; keeping the keys read before", exc)
                    return self._keys
                self._stamp = stamp
            return self._keys

    # -- operations ------------------------------------------------------------------------
    def add(
        self,
        *,
        entity_ids: Sequence[str] = (),
        process_id: str | None = None,
        monitor: bool = False,
        label: str = "",
    ) -> tuple[ApiKey, str]:
        """Make a key; returns its record and the key itself (shown once, never stored).

        Raises:
            InvalidInputError: No entity and not a monitor key, or an entity or process
                id that a memory scope would refuse.
        """
        entities = tuple(dict.fromkeys(entity_ids))
        if not entities and not monitor:
            raise InvalidInputError("a key needs at least one entity id (or monitor=True)")
        for entity in entities:
            try:
                Scope(entity_id=entity, process_id=process_id)
            except ValueError as exc:
                raise InvalidInputError(f"invalid scope for a key: {exc}") from exc
        key_id = secrets.token_hex(6)
        key = f"{_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKey(
            key_id=key_id,
            sha256=_digest(key),
            entity_ids=entities,
            process_id=process_id,
            monitor=monitor,
            label=label,
            created_at=utcnow().isoformat(timespec="seconds"),
        )
        with self._file_lock():
            keys = self._read()
            keys[key_id] = record
            self._write(keys)
        return record, key

    def list(self) -> list[ApiKey]:
        """Every key record, oldest first (hashes only; keys cannot be shown again).

        Raises:
            InvalidInputError: The keys file cannot be read or parsed.
        """
        return list(self._read().values())

    def revoke(self, key_id: str) -> bool:
        """Remove a key by its id; False when there was none."""
        with self._file_lock():
            keys = self._read()
            if keys.pop(key_id, None) is None:
                return False
            self._write(keys)
        return True

    def authenticate(self, presented: str) -> ApiKey | None:
        """The record of a presented key, or None when the key is unknown or wrong."""
        parts = presented.split("_", 2)
        if len(parts) != 3 or parts[0] != _PREFIX:
            return None
        record = self._current().get(parts[1])
        if record is None:
            return None
        return record if hmac.compare_digest(record.sha256, _digest(presented)) else None


@dataclass(frozen=True)
class Principal:
    """What one request may do: the entities it may name, its process, monitor rights.

    ``entity_ids=None`` means any entity (the service runs with ``--no-auth``);
    ``default_entity`` is used then when a request names none.

    Examples:
        >>> p = Principal(entity_ids=("alice",))
        >>> p.entity_for(None)
        'alice'
        >>> p.entity_for("bob")
        Traceback (most recent call last):
        ...
        memtrellis.service.errors.ForbiddenScopeError: this key may not act on entity 'bob'
    """

    entity_ids: tuple[str, ...] | None
    process_id: str | None = None
    monitor: bool = False
    default_entity: str = "default"
    key_id: str | None = field(default=None, compare=False)

    @classmethod
    def of(cls, key: ApiKey) -> Principal:
        """The principal a stored key grants."""
        return cls(
            entity_ids=key.entity_ids,
            process_id=key.process_id,
            monitor=key.monitor,
            key_id=key.key_id,
        )

    def entity_for(self, requested: str | None) -> str:
        """The entity a write, recall or list acts on.

        Raises:
            ForbiddenScopeError: The key may not touch ``requested``, or it may touch no
                entity at all (a monitor key).
            InvalidInputError: The key has several entities and the request named none.
        """
        if self.entity_ids is None:
            return requested if requested is not None else self.default_entity
        if requested is None:
            if len(self.entity_ids) == 1:
                return self.entity_ids[0]
            if not self.entity_ids:
                raise ForbiddenScopeError("this key may not act on any entity")
            raise InvalidInputError("this key may act on several entities: say which entity_id")
        if requested not in self.entity_ids:
            raise ForbiddenScopeError(f"this key may not act on entity {requested!r}")
        return requested

    def entities_for(self, requested: str | None) -> tuple[str, ...]:
        """The entities where a memory id is looked up (all of the key's when none is named)."""
        if requested is None and self.entity_ids is not None and len(self.entity_ids) > 1:
            return self.entity_ids
        return (self.entity_for(requested),)

    def process_for(self, requested: str | None) -> str | None:
        """The process a request acts as; a pinned key may only name its own.

        Raises:
            ForbiddenScopeError: The key is pinned to another process.
        """
        if self.process_id is None:
            return requested
        if requested is not None and requested != self.process_id:
            raise ForbiddenScopeError(f"this key may not act as process {requested!r}")
        return self.process_id

    def require_monitor(self) -> None:
        """Refuse store-wide figures to a key that is not a monitor key."""
        if not self.monitor:
            raise ForbiddenScopeError("this endpoint needs a monitor key (keys add --monitor)")
