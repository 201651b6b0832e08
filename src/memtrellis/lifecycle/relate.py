"""How a new memory relates to an existing one of the same scope, by rules.

The rules look for the same subject (a shared entity, the same ``key``, or both about the
speaker) and the same attribute (the same ``key``, or wording close enough), then for a
changed value: a negation on one side only, different numbers or dates, a different
named value (``Lyon`` / ``Porto``), or a change cue in the new one ("no longer", "moved
to", "instead of", ...). With an LLM configured, the relation judge
(`memtrellis.lifecycle.relation_judge`) can overrule them for the closest candidates.

Examples:
    >>> from memtrellis.types import MemoryItem, Scope
    >>> s = Scope(entity_id="u")
    >>> old = MemoryItem(text="Alice lives in Lyon", entities=["Alice", "Lyon"], scope=s)
    >>> new = MemoryItem(text="Alice moved to Porto", entities=["Alice", "Porto"], scope=s)
    >>> relate(new, old, similarity=0.62).kind.value
    'contradicts'
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import Enum

from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.store.graph import normalize_subject
from memtrellis.store.keyword import tokenize
from memtrellis.types import MemoryItem

__all__ = ["Relation", "RelationKind", "relate"]


class RelationKind(str, Enum):
    """What the new memory is to the existing one.

    Examples:
        >>> RelationKind("contradicts") is RelationKind.CONTRADICTS
        True
    """

    DUPLICATE = "duplicate"  # says the same: merge, no new node
    SUPPORTS = "supports"  # same claim in other words: more evidence
    CONTRADICTS = "contradicts"  # same subject and attribute, another value
    EXTENDS = "extends"  # same subject, adds detail without conflict
    UNRELATED = "unrelated"


@dataclass(frozen=True)
class Relation:
    """The relation of a new memory to an existing one, and why (for logs and history).

    Examples:
        >>> Relation(RelationKind.SUPPORTS, "same claim, other words").kind.value
        'supports'
    """

    kind: RelationKind
    reason: str


_NEGATION = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|without|cannot|can't|won't|don't|"
    r"doesn't|didn't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|shouldn't)\b"
    r"|n't\b|不|没|沒|别|無|无",
    re.IGNORECASE,
)
_CHANGE_CUES = re.compile(
    r"\b(no longer|not any ?more|any ?more|moved to|relocated to|instead of|switched to|"
    r"changed to|change[sd]? (?:it|the \w+) to|now (?:lives?|works?|is|prefers?|likes?|uses?|"
    r"has|wants?)|used to|rescheduled|postponed|pushed (?:back|to)|moved (?:up|back)|"
    r"new (?:deadline|date|address|job|number)|from now on|starting (?:today|now)|"
    r"replaced (?:by|with)|is now|are now)\b|不再|改为|改成|搬到|现在",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_MONTH = re.compile(rf"\b({_MONTHS})\b", re.IGNORECASE)
_WEEKDAY = re.compile(
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today|tonight)\b",
    re.IGNORECASE,
)
_WORDS = re.compile(r"\w+")
# Words that name the same attribute in other ways ("lives in" / "moved to").
_ATTRIBUTES = {
    "residence": "live lives living lived moved move moving relocated relocate based home "
    "address reside resides stays staying 住 住在 搬",
    "work": "works worked job jobs employed employer hired position role quit "
    "occupation career 工作 上班",
    "relationship": "married engaged dating divorced partner wife husband boyfriend girlfriend",
    "preference": "like likes liked love loves loved prefer prefers preferred favourite "
    "favorite hate hates dislike dislikes enjoy enjoys 喜欢 爱 讨厌",
    "schedule": "due deadline scheduled schedule meeting appointment rescheduled postponed "
    "moved delayed 截止 会议",
    "diet": "vegan vegetarian eat eats eating allergic allergy diet 吃 过敏",
    "contact": "phone email number address contact 电话 邮箱",
    "study": "studies study studying student school university college major degree 学习 大学",
    "age": "age old born birthday 岁 生日",
}
# Attributes a subject has one value of at a time; a new value replaces the old.
_SINGLE_VALUED = frozenset({"residence", "work", "relationship", "schedule", "contact", "age"})
_ATTRIBUTE_OF: dict[str, set[str]] = {}
for _name, _words in _ATTRIBUTES.items():
    for _word in _words.split():
        _ATTRIBUTE_OF.setdefault(_word, set()).add(_name)
# Chinese has no spaces between words: those are looked for as substrings.
_UNSPACED = [(w, names) for w, names in _ATTRIBUTE_OF.items() if not w.isascii()]
# A single-valued attribute word, then maybe a preposition and an article: what follows
# is the attribute's value ("lives in", "works at the", "married to").
_VALUE_LEAD = (
    r"\b(?:"
    + "|".join(
        re.escape(w) for w, names in _ATTRIBUTE_OF.items() if w.isascii() and names & _SINGLE_VALUED
    )
    + r")\s+(?:(?:in|to|at|for|with|from|as|on|by)\s+)?(?:the\s+|a\s+|an\s+)?"
)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|my|me|mine)\b", re.IGNORECASE)


# Characters that are neither word characters, whitespace nor ASCII: where symbols
# (emoji, currency and other signs) are looked for; ASCII punctuation never counts.
_NON_ASCII_SIGN = re.compile(r"[^\w\s\x00-\x7f]+")
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Mn", "Me"})


def _marks(text: str, words: list[str]) -> str:
    """What of ``text`` its words miss and that still carries meaning.

    With words, the symbols among them (emoji, ``€``, ``♥``: Unicode ``S*`` outside
    ASCII), so that "I feel 😀" and "I feel 😢" differ while "Ana lives in Lyon." and
    "Ana lives in Lyon!" do not. Without words (``:)``, ``?!``, an emoji), every visible
    character: such texts are the same memory only when they are the same characters.
    Format characters and variation selectors (``❤️`` is ``❤`` plus U+FE0F) never count.
    """
    if words:
        signs = "".join(_NON_ASCII_SIGN.findall(text))
        return "".join(c for c in signs if unicodedata.category(c).startswith("S"))
    visible = "".join(text.casefold().split())
    return "".join(c for c in visible if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)


def _values(text: str) -> set[str]:
    found = {n.replace(",", ".") for n in _NUMBER.findall(text)}
    found |= {m.casefold()[:3] for m in _MONTH.findall(text)}
    found |= {d.casefold() for d in _WEEKDAY.findall(text)}
    return found


def _entities(item: MemoryItem) -> set[str]:
    return {normalize_subject(e) for e in item.entities}


def _content(item: MemoryItem, drop: set[str]) -> set[str]:
    words = set(tokenize(item.text)) - drop
    return {w for w in words if not _NUMBER.fullmatch(w) and not _NEGATION.fullmatch(w)}


def _lead(item: MemoryItem) -> str | None:
    """The entity named first in the text (else the first listed), normalised."""
    if not item.entities:
        return None
    text = item.text.casefold()
    found = [(text.find(e.casefold()), n) for n, e in enumerate(item.entities)]
    placed = [(at, n) for at, n in found if at >= 0]
    first = min(placed)[1] if placed else 0
    return normalize_subject(item.entities[first])


def _valued(text: str, entity: str) -> bool:
    """Whether ``entity`` stands as the value of a single-valued attribute word."""
    return re.search(_VALUE_LEAD + re.escape(entity), text, re.IGNORECASE) is not None


def _attributes(text: str) -> set[str]:
    found: set[str] = set()
    for word in set(_WORDS.findall(text.casefold())):
        found |= _ATTRIBUTE_OF.get(word, set())
    for key, names in _UNSPACED:
        if key in text:
            found |= names
    return found


def _about_speaker(item: MemoryItem) -> bool:
    return bool(_FIRST_PERSON.search(item.text)) or item.text.casefold().startswith(
        ("user ", "the user ")
    )


def relate(
    new: MemoryItem,
    old: MemoryItem,
    similarity: float,
    config: LifecycleConfig | None = None,
) -> Relation:
    """The relation of ``new`` to ``old`` (same scope), given their cosine similarity.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> old = MemoryItem(text="Ana lives in Lyon.", scope=Scope(entity_id="ana"))
        >>> new = MemoryItem(text="Ana lives in Lyon.", scope=Scope(entity_id="ana"))
        >>> relate(new, old, similarity=1.0).kind
        <RelationKind.DUPLICATE: 'duplicate'>
    """
    config = config or LifecycleConfig()
    new_said, old_said = _WORDS.findall(new.text.casefold()), _WORDS.findall(old.text.casefold())
    new_marks, old_marks = _marks(new.text, new_said), _marks(old.text, old_said)
    if new_marks != old_marks:
        if not new_said and not old_said:
            # Symbol-only texts (":)", ":(", emoji): the same memory only when identical;
            # embedders place them close together, and they have no words to compare.
            return Relation(RelationKind.UNRELATED, "other symbols")
    elif new_said == old_said:
        return Relation(RelationKind.DUPLICATE, "same words")
    # Texts whose symbols differ ("I feel 😀" / "I feel 😢") are never duplicates.
    same_marks = new_marks == old_marks
    new_entities, old_entities = _entities(new), _entities(old)
    shared = new_entities & old_entities
    same_key = new.key is not None and new.key == old.key
    all_entities = {w for e in new_entities | old_entities for w in tokenize(e)}
    new_words, old_words = _content(new, all_entities), _content(old, all_entities)
    overlap = len(new_words & old_words) / max(1, len(new_words | old_words))
    # The subject is the entity named first ("Ana lives in Lyon": Ana); a shared entity
    # in another place ("Bruno lives in Lyon") is a shared value, not the same subject.
    lead_new, lead_old = _lead(new), _lead(old)
    subject = (
        (lead_new is not None and lead_new == lead_old)
        or same_key
        or (_about_speaker(new) and _about_speaker(old))
        or (not new_entities and not old_entities and overlap >= 0.25)
    )
    if not subject:
        if (
            similarity >= config.duplicate_similarity
            and not new_entities ^ old_entities
            and same_marks
        ):
            return Relation(RelationKind.DUPLICATE, f"similarity {similarity:.2f}")
        return Relation(RelationKind.UNRELATED, "no shared subject")
    # Conflicts need evidence that both speak of the same attribute: the same key, mostly
    # the same words, or words of one single-valued attribute ("lives in" / "moved to";
    # not "likes", as one likes many things). Closeness alone is not enough: facts about
    # one person are all close to each other.
    attribute = bool(_attributes(new.text) & _attributes(old.text) & _SINGLE_VALUED)
    same_claim = same_key or overlap >= 0.5
    new_values, old_values = _values(new.text), _values(old.text)
    if same_claim and bool(_NEGATION.search(new.text)) != bool(_NEGATION.search(old.text)):
        return Relation(RelationKind.CONTRADICTS, "negated on one side")
    if same_claim and new_values and old_values and new_values != old_values:
        values = sorted(new_values ^ old_values)[:4]
        return Relation(RelationKind.CONTRADICTS, f"changed value {values}")
    gained, lost = new_entities - old_entities, old_entities - new_entities
    cue = _CHANGE_CUES.search(new.text)
    # A cue with nothing changed ("lives in Lyon", then "moved to Lyon") is not a conflict.
    changed = bool(gained or lost or new_values != old_values)
    if cue and (same_claim or attribute) and changed:
        return Relation(RelationKind.CONTRADICTS, f"change cue {cue.group(0)!r}")
    # Another named value ("works at Acme" / "works at IBM") when the rest is the same
    # claim, or when both names stand right after words of one single-valued attribute
    # ("lives in Lyon" / "moved to Porto"); attribute words met in passing ("plays
    # Overcooked with her partner") are not enough.
    swapped = (
        gained
        and lost
        and (
            same_claim
            or (
                attribute
                and any(
                    _valued(new.text, e) for e in new.entities if normalize_subject(e) in gained
                )
                and any(_valued(old.text, e) for e in old.entities if normalize_subject(e) in lost)
            )
        )
    )
    if swapped:
        return Relation(RelationKind.CONTRADICTS, f"{sorted(lost)[0]} -> {sorted(gained)[0]}")
    if same_key and new.text != old.text and similarity < config.duplicate_similarity:
        return Relation(RelationKind.CONTRADICTS, f"new value for key {new.key!r}")
    if similarity >= config.duplicate_similarity and not gained and same_marks:
        return Relation(RelationKind.DUPLICATE, f"similarity {similarity:.2f}")
    if similarity >= config.support_similarity:
        return Relation(RelationKind.SUPPORTS, f"similarity {similarity:.2f}")
    if similarity < config.related_similarity and not (same_claim or attribute):
        return Relation(RelationKind.UNRELATED, "different attributes")
    if new_words - old_words or gained:
        return Relation(RelationKind.EXTENDS, "adds detail about " + (sorted(shared) or ["it"])[0])
    return Relation(RelationKind.SUPPORTS, "same subject and attribute")
