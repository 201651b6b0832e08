"""Placeholder: replaced by the migration of release-0.1 stores."""

from __future__ import annotations

from pathlib import Path

from memtrellis.store.manifest import Manifest


def migrate_locked(path: Path, manifest: Manifest) -> Manifest:
    """Migrate a schema-1 store (the caller holds ``store.lock``)."""
    raise NotImplementedError(path)
