"""Persistence: a catalog of entities and one shard per entity (graph, log, keyword index,
lock) beside the vector index, on one directory or in PostgreSQL."""

from memtrellis._deprecated import module_aliases
from memtrellis.store.graph import MemoryGraph, normalize_subject, subject_node_id
from memtrellis.store.keyword import KeywordIndex, tokenize
from memtrellis.store.manifest import SCHEMA_VERSION, EmbedderInfo, Manifest
from memtrellis.store.store import Change, Expect, RecoveryReport, Store
from memtrellis.store.vectors import VectorIndex, collection_name

__all__ = [
    "SCHEMA_VERSION",
    "Change",
    "EmbedderInfo",
    "Expect",
    "KeywordIndex",
    "Manifest",
    "MemoryGraph",
    "RecoveryReport",
    "Store",
    "VectorIndex",
    "collection_name",
    "normalize_subject",
    "subject_node_id",
    "tokenize",
]

# Renamed: a mentioned thing is a subject (an entity is whose memory it is); what opening
# a store does after a crash is recovery (a repair is `memtrellis.repair_store`).
__getattr__ = module_aliases(
    __name__,
    {
        "entity_node_id": "memtrellis.store.graph:subject_node_id",
        "normalize_entity": "memtrellis.store.graph:normalize_subject",
        "RepairReport": "memtrellis.store.shard:RecoveryReport",
    },
)
