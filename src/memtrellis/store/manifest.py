"""The store manifest: schema version, the embedder the vectors were made with, generation."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memtrellis.errors import EmbeddingMismatchError, StoreCorruptError
from memtrellis.store._corrupt import damaged
from memtrellis.store._files import atomic_write_bytes
from memtrellis.types import utcnow

__all__ = ["SCHEMA_VERSION", "EmbedderInfo", "Manifest", "read_manifest", "write_manifest"]

#: Bumped whenever the on-disk layout changes incompatibly.
SCHEMA_VERSION = 2


class EmbedderInfo(BaseModel):
    """Which embedder produced the vectors in a store.

    Examples:
        >>> EmbedderInfo(model_id="hashing-256", dimension=256).dimension
        256
    """

    model_config = ConfigDict(extra="forbid")

    model_id: str
    dimension: int = Field(gt=0)


class Manifest(BaseModel):
    """What a store directory holds; read before anything else is opened.

    ``generation`` counts graph snapshots: the write-ahead log of generation ``g`` holds
    the changes made after snapshot ``g``.

    Examples:
        >>> from pathlib import Path
        >>> from memtrellis import EmbeddingMismatchError
        >>> manifest = Manifest(embedder=EmbedderInfo(model_id="minilm", dimension=384))
        >>> try:
        ...     manifest.check_embedder("hashing-256", 256, Path("store"))
        ... except EmbeddingMismatchError:
        ...     print("refused")
        refused
    """

    model_config = ConfigDict(extra="allow")

    format: str = "memtrellis-store"
    schema_version: int = SCHEMA_VERSION
    embedder: EmbedderInfo
    generation: int = Field(default=0, ge=0)
    created_at: str = Field(default_factory=lambda: utcnow().isoformat())

    def check_embedder(self, model_id: str, dimension: int, path: Path) -> None:
        """Raise [`EmbeddingMismatchError`][memtrellis.errors.EmbeddingMismatchError] unless the
        embedder is the one stored."""
        if self.embedder.model_id != model_id or self.embedder.dimension != dimension:
            raise EmbeddingMismatchError(
                f"the store at {path} was built with embedder "
                f"{self.embedder.model_id!r} ({self.embedder.dimension} dimensions), "
                f"but was opened with {model_id!r} ({dimension} dimensions). Open it with "
                "the original embedder, or `memtrellis export` it and import the file into "
                "a new store with the new embedder."
            )


def read_manifest(path: Path, *, flags: tuple[str, ...] = ()) -> Manifest | None:
    """Read the manifest, or ``None`` when the store is new.

    ``flags`` are added to the ``memtrellis repair`` command a damaged manifest names.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        manifest = Manifest.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        raise damaged(
            path, f"cannot be read ({exc.__class__.__name__})", path.parent, *flags
        ) from exc
    if manifest.format != "memtrellis-store":
        raise damaged(path, "is not a memtrellis store manifest", path.parent, *flags)
    if manifest.schema_version > SCHEMA_VERSION:
        raise StoreCorruptError(
            f"the store at {path.parent} uses schema {manifest.schema_version}; this "
            f"memtrellis reads up to schema {SCHEMA_VERSION}. Upgrade memtrellis."
        )
    return manifest


def write_manifest(path: Path, manifest: Manifest) -> None:
    """Write the manifest atomically."""
    atomic_write_bytes(path, manifest.model_dump_json(indent=2).encode())
