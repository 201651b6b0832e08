"""Persistence: the memory graph, the vector index and the keyword index on one directory."""

from memtrellis.store.graph import MemoryGraph, entity_node_id, normalize_entity
from memtrellis.store.keyword import KeywordIndex, tokenize
from memtrellis.store.manifest import SCHEMA_VERSION, EmbedderInfo, Manifest
from memtrellis.store.store import Change, RepairReport, Store
from memtrellis.store.vectors import VectorIndex, collection_name

__all__ = [
    "SCHEMA_VERSION",
    "Change",
    "EmbedderInfo",
    "KeywordIndex",
    "Manifest",
    "MemoryGraph",
    "RepairReport",
    "Store",
    "VectorIndex",
    "collection_name",
    "entity_node_id",
    "normalize_entity",
    "tokenize",
]
