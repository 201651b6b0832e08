"""Persistence: a catalog of entities and one shard per entity (graph, log, keyword index,
lock) beside the vector index, on one directory or in PostgreSQL."""

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
