"""How the memory graph names its nodes: memory and subject kinds, and subject node ids.

Shared by the graph (`memtrellis.store.graph`) and its file format
(`memtrellis.store.graph_file`), and re-exported by the graph's module.
"""

from __future__ import annotations

__all__ = [
    "MEMORY_KIND",
    "OLD_SUBJECT_KIND",
    "RESERVED_ID_PREFIXES",
    "SUBJECT_KIND",
    "SUBJECT_NODE_PREFIX",
    "normalize_subject",
    "subject_node_id",
]

#: The ``kind`` of memory nodes.
MEMORY_KIND = "memory"
#: The ``kind`` of subject nodes.
SUBJECT_KIND = "subject"
#: The kind and id prefix of subject nodes saved before the rename (renamed as read).
OLD_SUBJECT_KIND = "entity"
#: Subject node ids start with this; no memory id may, or it would take over the node.
SUBJECT_NODE_PREFIX = "subject:"
#: Memory ids may not start with these: the node prefixes of now and before the rename.
RESERVED_ID_PREFIXES = (SUBJECT_NODE_PREFIX, "entity:")


def normalize_subject(name: str) -> str:
    """Case- and whitespace-insensitive form of a subject's name.

    Examples:
        >>> normalize_subject("  New   York ")
        'new york'
    """
    return " ".join(name.split()).casefold()


def subject_node_id(entity_id: str, name: str) -> str:
    """The node id of subject ``name`` in entity ``entity_id``'s part of the graph.

    ``:`` and ``%`` in the entity id are percent-encoded, so the entity part ends at the
    first ``:``: otherwise entity ``a:b`` with subject ``c`` and entity ``a`` with subject
    ``b:c`` would share one node. Ids of entities without those characters are unchanged.

    Examples:
        >>> subject_node_id("ana", "Porto")
        'subject:ana:porto'
        >>> subject_node_id("a:b", "C"), subject_node_id("a", "b:C")
        ('subject:a%3Ab:c', 'subject:a:b:c')
    """
    escaped = entity_id.replace("%", "%25").replace(":", "%3A")
    return f"{SUBJECT_NODE_PREFIX}{escaped}:{normalize_subject(name)}"
