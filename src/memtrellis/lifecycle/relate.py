"""How a new memory relates to an existing one of the same scope, by rules.

Both texts are read as claims (`memtrellis.lifecycle.claims`): subject, frame (which
attribute), values, polarity and cues. The new memory **supersedes** the old one
(``CONTRADICTS`` with ``supersedes=True``: the older becomes history) only on evidence of
one slot changing its value:

* a final cue ("postponed", "cancelled", "cut", "no longer", ``延期``, ``取消``) about the
  same thing;
* a change or current cue ("moved to", "switched to", "now", ``改为``, ``搬到``,
  ``换了``, ``现在``) about the same thing or the same single-valued attribute (where
  one lives, works, one's phone), with a value or word replaced;
* the same frame with another value ("The budget is $50,000" / "The budget is $80,000")
  or the other polarity ("The shop accepts cash" / "The shop doesn't accept cash");
* where those find nothing, the slot model (`memtrellis.lifecycle.slots`): the same
  subject and attribute words with a typed value of the same kind and unit replaced, or
  given as the target of any verb ("put off until the 27th"), whatever the cue words.

A statement of more than `MAX_CLAIM_UNITS` content words besides its subject holds
several claims: only the same words with a value replaced supersede it. Cues after an
intention or a negation ("not to give up", "plans to cut") are none.

A negation about mostly the same words, without those, only **contradicts**
(``supersedes=False``: both stay current, a ``contradicts`` edge flags them). An additive
cue ("too", "also", ``也``), a past event ("visited Rome in 2019") or another subject
("My daughter is 7" / "My son is 4") never supersede: a wrong supersession hides a true
fact. With an LLM configured, the relation judge
(`memtrellis.lifecycle.relation_judge`) can overrule the rules for the closest
candidates.

Examples:
    >>> from memtrellis.types import MemoryItem, Scope
    >>> s = Scope(entity_id="u")
    >>> old = MemoryItem(text="Alice lives in Lyon", entities=["Alice", "Lyon"], scope=s)
    >>> new = MemoryItem(text="Alice moved to Porto", entities=["Alice", "Porto"], scope=s)
    >>> relation = relate(new, old, similarity=0.62)
    >>> relation.kind.value, relation.supersedes
    ('contradicts', True)
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import Enum

from memtrellis.lifecycle.claims import (
    _ATTRIBUTE_STEMS,
    SINGLE_VALUED,
    VALUE_CLASSES,
    Claim,
    _stem,
    class_of,
    read_claim,
)
from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.lifecycle.keys import is_derived
from memtrellis.lifecycle.overlap import shared_topic
from memtrellis.lifecycle.slots import several_slots, slot_change
from memtrellis.lifecycle.values import changed_values, read_values
from memtrellis.store.graph import normalize_subject
from memtrellis.store.keyword import tokenize
from memtrellis.types import MemoryItem

__all__ = ["Relation", "RelationKind", "relate", "several_claims", "slot_evidence"]


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

    Attributes:
        kind: The relation.
        reason: Why, in a few words.
        supersedes: For ``CONTRADICTS``: the new memory replaces the old one (a change);
            ``False`` when both cannot hold but nothing says which holds now: both stay
            current, linked by a ``contradicts`` edge.
        sure: The rules see no room for doubt (the same words, a key's new value, one
            value replaced in the same words);
            the relation judge is asked only where this is ``False``.

    Examples:
        >>> Relation(RelationKind.SUPPORTS, "same claim, other words").kind.value
        'supports'
        >>> Relation(RelationKind.CONTRADICTS, "vegan / eats fish", supersedes=False).supersedes
        False
    """

    kind: RelationKind
    reason: str
    supersedes: bool = True
    sure: bool = False

    @property
    def label(self) -> str:
        """``supersedes`` for a superseding contradiction, else the kind's value.

        Examples:
            >>> Relation(RelationKind.CONTRADICTS, "moved").label
            'supersedes'
        """
        if self.kind is RelationKind.CONTRADICTS and self.supersedes:
            return "supersedes"
        return self.kind.value


_WORDS = re.compile(r"\w+")
# Words two texts of one claim may differ by ("Zoe is a vegetarian" / "Zoe is vegetarian").
_FUNCTION_WORDS = frozenset(
    "a an the is are am was were be of to in on at by for my our i m s".split()  # noqa: SIM905
)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")

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


def _entities(item: MemoryItem) -> set[str]:
    return {normalize_subject(e) for e in item.entities}


def _matched(units: frozenset[str], other: frozenset[str]) -> int:
    """How many of ``units`` the other frame holds (a lone CJK character: inside a unit)."""
    count = 0
    for unit in units:
        if unit in other or (
            len(unit) == 1 and not unit.isascii() and any(unit in o for o in other)
        ):
            count += 1
    return count


def _same_subject(a: Claim, b: Claim) -> bool:
    """Whether new claim ``a`` and old ``b`` speak of one subject (unknown: by frames)."""
    if a.subject is None and b.subject is None:
        return bool(_matched(a.frame, b.frame))
    if a.subject is None or b.subject is None:
        # A pronoun ("You can reach Jonas ...", "They raised the price"): the other's
        # subject named among its words, or a shared frame.
        known, vague = (a, b) if a.subject is not None else (b, a)
        assert known.subject is not None
        return known.subject <= vague.values | vague.frame or bool(_matched(a.frame, b.frame))
    if a.subject <= b.subject:
        return True  # the new one names it as before, or shorter ("the defense")
    if b.subject <= a.subject:
        # A longer name is another thing unless the old statement says the words too:
        # "Felix's company" is not "Felix", "the design team" not "our team".
        return a.subject - b.subject <= b.frame | b.values | _ATTRIBUTE_STEMS
    if (a.final or a.change or a.current) and a.subject & b.subject - {"@speaker"}:
        return True  # "Beta opening delayed" / "The app's beta opens on 1 August"
    # "I changed my email" / "My email is ...": the speaker's own thing; "The airline
    # delayed our flight" / "Our flight leaves on Friday": a final cue acting on it.
    return (("@speaker" in a.subject or a.final) and b.subject <= a.frame) or (
        "@speaker" in b.subject and a.subject <= b.frame
    )


def _plain(units: frozenset[str]) -> frozenset[str]:
    return frozenset(u for u in units if not u.startswith("@"))


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
            return Relation(RelationKind.UNRELATED, "other symbols", sure=True)
    elif new_said == old_said:
        return Relation(RelationKind.DUPLICATE, "same words", sure=True)
    # Texts whose symbols differ ("I feel 😀" / "I feel 😢") are never duplicates.
    same_marks = new_marks == old_marks
    new_entities, old_entities = _entities(new), _entities(old)
    gained = new_entities - old_entities
    same_key = new.key is not None and new.key == old.key
    # A derived key (memtrellis.lifecycle.keys) names the slot but not the value: it
    # supersedes only on another value below.
    derived = same_key and (is_derived(new) or is_derived(old))
    changed = same_key and new.text != old.text and similarity < config.duplicate_similarity
    if changed and not derived:
        return Relation(RelationKind.CONTRADICTS, f"new value for key {new.key!r}", sure=True)
    a, b = read_claim(new.text, new.entities), read_claim(old.text, old.entities)
    # Another value, not more of them ("Glasgow" / "Glasgow's West End" adds detail).
    if changed and a.values - b.values and b.values - a.values and not a.additive:
        return Relation(RelationKind.CONTRADICTS, f"new value for key {new.key!r}", sure=True)
    same_key = same_key and not derived  # else the rules below decide, as without a key
    near = _matched(a.frame, b.frame)
    closeness = min(near / max(1, len(a.frame)), _matched(b.frame, a.frame) / max(1, len(b.frame)))
    # Closeness alone never makes a duplicate (a merge drops the new text): an embedder
    # blind to a script puts all its texts together. The claims must agree too.
    same_values = a.values == b.values and a.negated == b.negated
    # Texts with other numbers anywhere ("note 7:" / "note 28:", a label the claim leaves
    # out included) are other texts: never merged as duplicates.
    same_numbers = sorted(_NUMBER.findall(new.text)) == sorted(_NUMBER.findall(old.text))
    agree = same_values and same_numbers and same_marks and closeness >= 0.5 and not a.additive
    if not same_key and (a.chinese != b.chinese or not _same_subject(a, b)):
        close = similarity >= config.duplicate_similarity
        if close and agree and not new_entities ^ old_entities:
            return Relation(RelationKind.DUPLICATE, f"similarity {similarity:.2f}")
        verdict = _change_in_sentences(new, old) or _slot(new, old, a, b)
        if verdict is not None:
            return verdict
        # Never sure: a change may share no word at all with what it replaces ("I'm
        # pregnant with our second!" / "baby girl arrived Tuesday"; a subject left
        # unsaid in chat or in Chinese), so the judge (or the relation model) decides.
        common = shared_topic(new.text, old.text, a, b, new.entities, old.entities)
        if common is None:
            return Relation(RelationKind.UNRELATED, "nothing shared")
        return Relation(RelationKind.UNRELATED, f"no shared subject ({common} shared)")
    verdict = _change(a, b, new.text, old.text) or _change_in_sentences(new, old)
    if verdict is None or not verdict.supersedes:
        verdict = _slot(new, old, a, b) or verdict
    if verdict is not None:
        return verdict
    # The same claim: duplicates and support.
    # Words the claims leave out ("a", "the"), only ever dropped on one side: one function
    # word put for another ("fact a" / "fact i", "was" / "is") is another text.
    added, dropped = set(new_said) - set(old_said), set(old_said) - set(new_said)
    only_dropped = not (added and dropped) and not (added | dropped) - _FUNCTION_WORDS
    same = same_values and same_numbers and a.frame == b.frame and same_marks and not a.additive
    if same and only_dropped:
        return Relation(RelationKind.DUPLICATE, "same claim")
    if similarity >= config.duplicate_similarity and not gained and agree:
        return Relation(RelationKind.DUPLICATE, f"similarity {similarity:.2f}")
    if similarity >= config.support_similarity and agree:
        return Relation(RelationKind.SUPPORTS, f"similarity {similarity:.2f}")
    if same_values and closeness >= 0.6 and not a.additive:
        return Relation(RelationKind.SUPPORTS, "same claim, other words")
    attribute = bool(a.classes & b.classes & SINGLE_VALUED)
    if similarity < config.related_similarity and not (near or attribute):
        return Relation(RelationKind.UNRELATED, "different attributes")
    all_entities = {w for e in new_entities | old_entities for w in tokenize(e)}
    new_words = set(tokenize(new.text)) - all_entities
    old_words = set(tokenize(old.text)) - all_entities
    shared = sorted(new_entities & old_entities) or ["it"]
    if new_words - old_words or gained:
        return Relation(RelationKind.EXTENDS, "adds detail about " + shared[0])
    return Relation(RelationKind.SUPPORTS, "same subject and attribute")


def _slot(new: MemoryItem, old: MemoryItem, a: Claim, b: Claim) -> Relation | None:
    """A supersession the slot model (`memtrellis.lifecycle.slots`) reads, or ``None``."""
    found = slot_change(new.text, old.text, a, b)
    if found is None:
        return None
    reason, sure = found
    return Relation(RelationKind.CONTRADICTS, reason, sure=sure)


#: Content units besides its subject beyond which a statement holds several claims: its
#: cues are not read (English words; Chinese character pairs).
MAX_CLAIM_UNITS = 6
MAX_CLAIM_UNITS_ZH = 12


# Sentence ends: ASCII ones before a space (not "7.5" or "9:30"), CJK ones anywhere.
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*")
# A short label before a colon ("Big news:", "Task 1:", "更新："): not part of the claim.
_LABEL = re.compile(r"^[^:：.!?\d]{1,20}[:：]\s*(?=\w)")  # no digits: "Task 1:" names one


def _sentences(item: MemoryItem) -> list[tuple[str, list[str]]]:
    """The sentences of a text with the entity names each holds."""
    out = []
    for sentence in _SENTENCE.split(item.text):
        said = _LABEL.sub("", sentence.strip())
        if re.search(r"\w", said):
            folded = said.casefold()
            out.append((said, [e for e in item.entities if e.casefold() in folded]))
    return out


def _change_in_sentences(new: MemoryItem, old: MemoryItem) -> Relation | None:
    """A change between two sentences of texts that hold several ("Hi! I'm Ines. I live in
    Lisbon." / "Big news: I moved to Porto!"): the one that supersedes, else ``None``."""
    new_sentences, old_sentences = _sentences(new), _sentences(old)
    if len(new_sentences) == 1 and len(old_sentences) == 1:
        return None
    for said, names in new_sentences:
        a = read_claim(said, names)
        for earlier, old_names in old_sentences:
            b = read_claim(earlier, old_names)
            if a.chinese == b.chinese and _same_subject(a, b):
                verdict = _change(a, b, said, earlier)
                if verdict is not None and verdict.supersedes:
                    return Relation(verdict.kind, f"{verdict.reason} (in {earlier[:40]!r})")
    return None


_OBJECT_LEAD = frozenset(
    "the a an my our his her their its your this that these those some all".split()  # noqa: SIM905
)
_OBJECT_END = frozenset(
    """to until till by on for in at from with after before because since so and but as
    into onto over of than due""".split()  # noqa: SIM905 - reads as text
)


def cue_object(text: str, cue: str) -> frozenset[str]:
    """The content words of what a cue's verb acts on, when an object follows it
    ("raised **its prices** on pastries", "postponed **her vacation** to August"); empty
    when none does (a passive, "was cancelled"; an intransitive, "went up").

    Examples:
        >>> sorted(cue_object("The café raised its prices on pastries.", "raised its"))
        ['prices']
        >>> cue_object("The fee was raised to 5 pounds.", "was raised")
        frozenset()
    """
    lowered = text.casefold().replace("\u2019", "'")
    at = lowered.find(cue.casefold()) if cue else -1
    if at < 0:
        return frozenset()
    words = _WORDS.findall(lowered[at + len(cue) :])
    cue_words = cue.casefold().split()
    if cue_words and cue_words[-1] in _OBJECT_END:
        return frozenset()  # "moved into ...", "pushed back to ...": the new value follows
    if cue_words and cue_words[-1] in _OBJECT_LEAD:
        words = [cue_words[-1], *words]  # the cue took the object's determiner ("raised its")
    if not words or words[0] not in _OBJECT_LEAD:
        return frozenset()
    found: set[str] = set()
    for word in words[1:]:
        if word in _OBJECT_END or word.isdigit():
            break
        if word not in _OBJECT_LEAD and len(word) > 1:
            found.add(word)
    return frozenset(found)


def _acts_on(new: str, cue: str, b: Claim) -> bool:
    """Whether the new statement's cue acts on the old statement (claim ``b``): it has no
    object of its own, or its object is something the old statement names."""
    target = cue_object(new, cue)
    if not target:
        return True
    said = b.frame | b.values | (b.subject or frozenset())
    said |= {_stem(w) for unit in said for w in unit.split()}
    for raw in target:
        word = _stem(raw)
        # The same word, or one of its family ("approval" / "approved"), or a word of an
        # attribute the old statement names ("his phone number" / "reach Jonas at").
        if any(w == word or (len(w) >= 5 and len(word) >= 5 and w[:5] == word[:5]) for w in said):
            return True
        if class_of(raw) & b.classes:
            return True
    return False


def _core_overlap(a: Claim, b: Claim) -> float:
    """How much of the old claim ``b``'s words besides its subject the new ``a`` keeps, or
    ``a``'s that ``b`` held (the larger); 0 when either says nothing besides its subject."""
    new, old = _core(a), _core(b)
    if not new or not old:
        return 0.0
    return max(_matched(old, new) / len(old), _matched(new, old) / len(new))


def slot_evidence(new: MemoryItem, old: MemoryItem) -> bool:
    """Whether more than their subject and their topic makes ``new`` and ``old`` one slot:
    a one-value attribute both name (where one lives, works, one's phone), a typed value
    of the old one replaced by one of the same kind and unit (a date, an amount, a
    number), or a name both give besides their subject beside one only one of them gives.
    Shared words alone are not enough: of one person, "Mia's main hobby is chess." / "Mia
    bought a new chess clock." share a topic, not a slot.

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope
        >>> def fact(text, *names):
        ...     return MemoryItem(text=text, entities=list(names), scope=Scope(entity_id="u"))
        >>> leo = fact("Leo loves his dog.", "Leo")
        >>> slot_evidence(fact("Leo now dances every day.", "Leo"), leo)
        False
        >>> slot_evidence(fact("Standup is 9:45 from Monday."), fact("Standup is at 9:15."))
        True
    """
    a, b = read_claim(new.text, new.entities), read_claim(old.text, old.entities)
    if a.classes & b.classes & SINGLE_VALUED:
        return True
    if changed_values(list(read_values(new.text)), list(read_values(old.text))) is not None:
        return True
    return bool(a.values & b.values) and bool(a.values ^ b.values)


def _core(claim: Claim) -> frozenset[str]:
    """The claim's content words (stems, or CJK units) besides its subject."""
    return _plain(claim.frame) - (claim.subject or set())


def claim_units(claim: Claim) -> int:
    """How many content words (stems, or CJK units) a claim holds besides its subject."""
    return len(_core(claim))


def several_claims(new: MemoryItem, old: MemoryItem, new_most: int = MAX_CLAIM_UNITS) -> bool:
    """Whether ``old`` holds several claims (more than `MAX_CLAIM_UNITS` content words
    besides its subject, `MAX_CLAIM_UNITS_ZH` in Chinese), or ``new`` more than
    ``new_most`` (twice as many in Chinese): a change of one of them is no change of all.

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope
        >>> def fact(text):
        ...     return MemoryItem(text=text, scope=Scope(entity_id="u"))
        >>> several_claims(fact("I moved to Porto."), fact("I live in Lisbon."))
        False
        >>> long = fact("Ana runs the Lisbon office, mentors two interns and plays cello.")
        >>> several_claims(fact("Ana runs the Porto office."), long)
        True
    """
    a, b = read_claim(new.text, new.entities), read_claim(old.text, old.entities)

    def scaled(most: int, claim: Claim) -> float:  # Chinese units: CJK characters, more
        return most * MAX_CLAIM_UNITS_ZH / MAX_CLAIM_UNITS if claim.chinese else most

    return claim_units(b) > scaled(MAX_CLAIM_UNITS, b) or claim_units(a) > scaled(new_most, a)


def _change(a: Claim, b: Claim, new: str = "", old: str = "") -> Relation | None:
    """A supersession or contradiction of claim ``b`` (old) by ``a`` (new), or ``None``;
    ``new`` and ``old`` are their texts."""
    if max(claim_units(a), claim_units(b)) > (MAX_CLAIM_UNITS_ZH if a.chinese else MAX_CLAIM_UNITS):
        # Several claims in one: only the same words with a value replaced say which.
        if a.frame == b.frame and a.values != b.values and a.negated == b.negated:
            values = sorted(a.values ^ b.values)[:4]
            return Relation(RelationKind.CONTRADICTS, f"changed value {values}", sure=True)
        return None
    old_in_new = _matched(b.frame, a.frame) / len(b.frame) if b.frame else 0.0
    new_in_old = _matched(a.frame, b.frame) / len(a.frame) if a.frame else 0.0
    attribute = bool(a.classes & b.classes & SINGLE_VALUED)
    swapped = bool(a.values - b.values) and bool(b.values - a.values)
    # A word replaced in the frame: "junior" / "senior", "engaged" / "married".
    reworded = bool(_plain(a.frame) - _plain(b.frame)) and bool(_plain(b.frame) - _plain(a.frame))
    flipped = a.negated != b.negated
    # Empty frames ("I have a Galaxy S21" / "I'm going to Rome") say nothing of a slot.
    same_frame = a.frame == b.frame and bool(a.frame)
    # A cue acting on an object acts on that: "The café raised its prices" ends nothing
    # of "The café opens at 7am", "Helen postponed her vacation" nothing of her job.
    if not a.chinese and not _acts_on(new, a.cue, b):
        return None
    if a.final and (old_in_new >= 0.5 or new_in_old >= 0.67 or attribute):
        return Relation(
            RelationKind.CONTRADICTS, f"final cue {a.cue!r}: the old value no longer holds"
        )
    if a.additive:
        return None
    cue = a.change or a.current or a.final
    overlap = max(old_in_new, new_in_old)
    # "Now" alone says what holds now, not what it replaced: of the same subject it may be
    # another slot ("The dashboard pulls data from Snowflake." / "The dashboard now
    # refreshes every 15 minutes."; 佳佳在学钢琴 / 佳佳现在住校了). It takes a one-value
    # attribute or the old statement's other words kept.
    slot = attribute or _core_overlap(a, b) >= 0.5
    same_topic = a.topic is not None and a.topic == b.topic
    if cue and same_topic and (swapped or flipped or reworded) and (a.change or a.final or slot):
        return Relation(RelationKind.CONTRADICTS, f"change cue about {a.topic}")
    bare = not a.frame and not b.frame  # "I have X" / "I switched to Y": subject and value
    near = overlap >= 0.5 or attribute or bare
    if (a.change or (a.current and (slot or bare))) and near and (swapped or flipped):
        return Relation(RelationKind.CONTRADICTS, f"change cue {a.cue!r} with a new value")
    # Another word in place of one: a change cue says it replaced it; "now" only says what
    # holds now, so only of a one-value attribute ("Kai is dating Robin now").
    if reworded and ((a.change and (attribute or overlap >= 0.5)) or (a.current and attribute)):
        return Relation(RelationKind.CONTRADICTS, f"change cue {a.cue!r} with a new word")
    # Not when more than one slot changed or the new one adds a qualifier ("a meeting with
    # Priya on Monday" / "with Tom on Tuesday"; "closes at 6 pm" / "at 8 pm on Saturdays").
    if same_frame and swapped and not (a.event and b.event) and not several_slots(new, old, a, b):
        values = sorted(a.values ^ b.values)[:4]
        return Relation(RelationKind.CONTRADICTS, f"changed value {values}", sure=True)
    shared = a.classes & b.classes & SINGLE_VALUED
    states = shared & VALUE_CLASSES  # classes whose words are the values ("open", "merged")
    if states and not (a.event and b.event) and a.core(states) == b.core(states):
        new_words, old_words = a.frame - a.core(states), b.frame - b.core(states)
        if _plain(new_words) and _plain(old_words) and _plain(new_words) != _plain(old_words):
            # "The pull request is open" / "... was merged": a one-value attribute reworded.
            return Relation(RelationKind.CONTRADICTS, f"new {sorted(states)[0]}")
    if shared and swapped and a.core(shared) == b.core(shared) and not (a.event and b.event):
        # "moved to Berlin" / "lives in Quito": one single-valued attribute, a new value.
        return Relation(RelationKind.CONTRADICTS, f"new {sorted(shared)[0]}: {sorted(a.values)}")
    if flipped and same_frame and a.values == b.values:
        return Relation(RelationKind.CONTRADICTS, "reversed: negated on one side", sure=True)
    if flipped and min(old_in_new, new_in_old) >= 0.6:
        return Relation(RelationKind.CONTRADICTS, "negated on one side", supersedes=False)
    return None
