"""A memory's ``key`` when the model gives none: derived from what the text claims.

Fine-mode extraction asks the model for a ``key`` naming the slot a memory fills
("alice.home_city"), and a new value for the same key supersedes the old one. Models,
small local ones above all, often leave it out. Then the key is derived from the claim
(`memtrellis.lifecycle.claims`): its subject and the one single-valued attribute it
names, ``"alice.residence"`` for "Alice lives in Lyon" and "Alice moved to Porto" alike.
No key is derived when the subject is unknown (a pronoun), when the text names no
single-valued attribute or several, or when it says more than one claim.

A derived key is marked ``metadata["key_source"] = "derived"``, and the relation rules
trust it less than a model's key: two memories with the same derived key supersede
only when their values differ (`memtrellis.lifecycle.relate`), so "Alice lives in Lyon"
and "Alice lives in Lyon with her sister" stay one extending the other.

Examples:
    >>> from memtrellis.types import MemoryItem, Scope
    >>> item = MemoryItem(text="Alice moved to Porto", entities=["Alice", "Porto"],
    ...                   scope=Scope(entity_id="u"))
    >>> derive_key(item)
    'alice.residence'
    >>> print(derive_key(item.model_copy(update={"text": "She likes jazz", "entities": []})))
    None
"""

from __future__ import annotations

import re

from memtrellis.lifecycle.claims import SINGLE_VALUED, VALUE_CLASSES, read_claim
from memtrellis.types import MemoryItem

__all__ = ["DERIVED", "FINE_TAG", "KEY_SOURCE", "derive_key", "fill_key", "is_derived"]

#: The tag fine-mode extraction puts on what it extracts
#: (``memtrellis.extraction.fine.MODE_TAG``; the lifecycle does not import extraction).
FINE_TAG = "mode:fine"

#: ``metadata`` entry that says where a memory's key came from.
KEY_SOURCE = "key_source"
#: Its value for a derived key.
DERIVED = "derived"
# A longer statement holds several claims: no one slot names it.
_MAX_FRAME = 8
_NAME = re.compile(r"\b[A-Z][\w'-]*")


#: Units of a value (stems): "7 years old" and "7" name the same slot.
_UNITS = frozenset(
    [
        "year",
        "month",
        "week",
        "day",
        "hour",
        "minute",
        "second",
        "kg",
        "km",
        "mile",
        "meter",
        "metre",
        "cm",
        "gram",
        "pound",
        "euro",
        "dollar",
        "percent",
    ]
)


def derive_key(item: MemoryItem) -> str | None:
    """The slot ``item``'s text fills, as ``"<subject>.<attribute>"``; None when unclear.

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope
        >>> s = Scope(entity_id="u")
        >>> derive_key(MemoryItem(text="My daughter is 7 years old.", scope=s))
        'daughter.age'
        >>> derive_key(MemoryItem(text="小林住在成都", entities=["小林", "成都"], scope=s))
        '小林.residence'
    """
    claim = read_claim(item.text, item.entities)
    if not claim.subject or claim.event or claim.additive:
        return None
    slots = (claim.classes & SINGLE_VALUED) - VALUE_CLASSES
    if len(slots) != 1 or len(claim.frame) > _MAX_FRAME:
        return None
    [slot] = slots
    # The attribute's own words ("date" of "the launch date") are not the subject; the
    # other words of the slot are part of it ("my daughter's age" is not "my son's").
    named = {stem for stem, name in claim.classed if name == slot}
    subject = sorted(claim.subject - named) or sorted(claim.subject)
    # Names are values, not slot words ("Porto" of "moved to Porto"), even when the
    # extractor did not list them as entities.
    names = [w.casefold() for w in _NAME.findall(item.text)]
    rest = sorted(
        unit
        for unit in claim.core(frozenset(slots)) - claim.subject - claim.values
        if unit not in _UNITS and not any(name.startswith(unit) for name in names)
    )
    if claim.chinese:  # character pairs that touch a name are part of the name or value
        named_chars = set("".join(item.entities))
        rest = [unit for unit in rest if not named_chars & set(unit)]
    return ".".join(["_".join(subject), *(["_".join(rest)] if rest else []), slot])


def is_derived(item: MemoryItem) -> bool:
    """Whether ``item``'s key was derived (`fill_key`) rather than given.

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope
        >>> is_derived(MemoryItem(text="x", key="a.b", scope=Scope(entity_id="u")))
        False
    """
    return item.key is not None and item.metadata.get(KEY_SOURCE) == DERIVED


def fill_key(item: MemoryItem) -> bool:
    """Give ``item`` a derived key when it has none; whether it got one.

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope
        >>> item = MemoryItem(text="Alice lives in Lyon", entities=["Alice", "Lyon"],
        ...                   scope=Scope(entity_id="u"))
        >>> fill_key(item), item.key, is_derived(item)
        (True, 'alice.residence', True)
    """
    if item.key is not None:
        return False
    key = derive_key(item)
    if key is None:
        return False
    item.key = key
    item.metadata[KEY_SOURCE] = DERIVED
    return True
