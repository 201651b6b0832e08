"""Conversation turns compared by rules: which earlier turn a new one makes out of date.

Fast mode stores each message as it was said (an ``episode``): a later "I moved to
Porto!" does not unsay "I live in Lisbon.", and neither is ever merged or rewritten. What
changes is the graph: a new turn of a speaker is read sentence by sentence with the
relation rules (`memtrellis.lifecycle.relate`) against the few closest earlier turns of
the same speaker, and

* when one of its sentences supersedes an earlier turn that says nothing else (a single
  claim: "I live in Lisbon."), the new turn gets ``contradicts`` and ``supersedes`` edges
  to it: recall leaves the older turn out as superseded from the newer one's time on
  (``include_superseded=True`` and ``as_of`` still show it), while ``Memory.get`` and
  ``Memory.list`` show it unchanged;
* when the earlier turn says more than the claim replaced ("I live in Lisbon and I have a
  dog."), or the two only contradict each other, a ``contradicts`` edge alone flags them:
  both stay visible, and the newer is the later one.

Only turns that look like a claim about something that has one value at a time are
compared (a change cue, or words of where one lives or works, a phone, a date): most
chat turns are not, and they cost nothing. Assistant turns are never compared: what the
assistant says is not the user's state.

Examples:
    >>> from memtrellis.types import MemoryItem, MemoryType, Scope, SourceRef
    >>> def turn(text):
    ...     source = SourceRef(kind="chat", role="user", content=text)
    ...     return MemoryItem(text=text, memory_type=MemoryType.EPISODE, sources=[source],
    ...                       scope=Scope(entity_id="u"))
    >>> relation, whole = relate_turns(turn("I moved to Porto!"), turn("I live in Lisbon."), 0.4)
    >>> relation.label, whole
    ('supersedes', True)
"""

from __future__ import annotations

import re

from memtrellis.lifecycle.claims import SINGLE_VALUED, read_claim
from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.lifecycle.relate import Relation, RelationKind, relate
from memtrellis.lifecycle.relation_model import ModelRelationJudge
from memtrellis.types import MemoryItem

__all__ = ["TURN_CANDIDATES", "comparable", "model_replaces_turn", "relate_turns", "same_speaker"]

#: Earlier turns of the speaker compared with a new one (the closest by cosine).
TURN_CANDIDATES = 5
#: Longer turns are not read as claims (a story, a pasted text).
_MAX_CHARS = 400
_MAX_SENTENCES = 4
_SENTENCE = re.compile(r"(?<=[.!?;。！？；])\s*|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if re.search(r"\w", s)]


def _claims(text: str) -> list[str]:
    """The sentences of a turn that state something (a question claims nothing)."""
    return [s for s in _sentences(text) if not s.endswith(("?", "？"))]


def _speaker(item: MemoryItem) -> tuple[str | None, str | None]:
    source = item.sources[0] if item.sources else None
    return (source.role, source.speaker) if source else (None, None)


def same_speaker(new: MemoryItem, old: MemoryItem) -> bool:
    """Whether two turns were said by the same user (role ``user``, same speaker name).

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope, SourceRef
        >>> def by(role, speaker=None):
        ...     source = SourceRef(kind="chat", role=role, speaker=speaker, content="x")
        ...     return MemoryItem(text="x", sources=[source], scope=Scope(entity_id="u"))
        >>> same_speaker(by("user"), by("user")), same_speaker(by("user"), by("assistant"))
        (True, False)
        >>> same_speaker(by("user", "Caroline"), by("user", "Melanie"))
        False
    """
    role, speaker = _speaker(new)
    return role == "user" and (role, speaker) == _speaker(old)


def comparable(item: MemoryItem) -> bool:
    """Whether a turn is short and reads as a claim that could replace an earlier one.

    Examples:
        >>> from memtrellis.types import MemoryItem, Scope, SourceRef
        >>> def said(text):
        ...     source = SourceRef(kind="chat", role="user", content=text)
        ...     return MemoryItem(text=text, sources=[source], scope=Scope(entity_id="u"))
        >>> comparable(said("I moved to Porto!")), comparable(said("Haha, that's great."))
        (True, False)
        >>> comparable(said("Do you still live in Lisbon?"))
        False
    """
    if _speaker(item)[0] != "user" or len(item.text) > _MAX_CHARS:
        return False
    sentences = _claims(item.text)
    if not sentences or len(_sentences(item.text)) > _MAX_SENTENCES:
        return False
    for sentence in sentences:
        claim = read_claim(sentence, _names_in(item, sentence))
        if claim.final or claim.change or claim.current or claim.classes & SINGLE_VALUED:
            return True
    return False


def _names_in(item: MemoryItem, sentence: str) -> list[str]:
    folded = sentence.casefold()
    return [e for e in item.entities if e.casefold() in folded]


def relate_turns(
    new: MemoryItem,
    old: MemoryItem,
    similarity: float,
    config: LifecycleConfig | None = None,
) -> tuple[Relation, bool] | None:
    """How a new turn contradicts an earlier one, sentence by sentence, or ``None``.

    Returns the relation (a ``CONTRADICTS``; ``supersedes`` when a sentence of the new
    turn replaces one of the old) and whether the old turn is that one claim and nothing
    else (only then is it superseded as a whole).

    Examples:
        >>> from memtrellis.types import MemoryItem, MemoryType, Scope, SourceRef
        >>> def turn(text):
        ...     source = SourceRef(kind="chat", role="user", content=text)
        ...     return MemoryItem(text=text, memory_type=MemoryType.EPISODE,
        ...                       sources=[source], scope=Scope(entity_id="u"))
        >>> old = turn("I live in Lisbon. I have a dog called Rex.")
        >>> relation, whole = relate_turns(turn("We moved to Porto!"), old, 0.4)
        >>> relation.label, whole
        ('supersedes', False)
        >>> relate_turns(turn("My son is 4."), turn("My daughter is 7."), 0.6) is None
        True
    """
    old_sentences = _sentences(old.text)
    if not old_sentences or len(old_sentences) > _MAX_SENTENCES or len(old.text) > _MAX_CHARS:
        return None
    best: Relation | None = None
    for said in _claims(new.text):
        first = new.model_copy(update={"text": said, "entities": _names_in(new, said)})
        for earlier in old_sentences:
            second = old.model_copy(update={"text": earlier, "entities": _names_in(old, earlier)})
            relation = relate(first, second, similarity, config)
            if relation.kind is RelationKind.CONTRADICTS and (best is None or relation.supersedes):
                best = relation
    if best is None:
        return None
    return best, len(old_sentences) == 1


def model_replaces_turn(
    new: MemoryItem, old: MemoryItem, judge: ModelRelationJudge
) -> tuple[Relation, bool] | None:
    """The relation model's verdict (`memtrellis.lifecycle.relation_model`) where the
    rules find no change: a sentence of the new turn (at most two claims) supersedes an
    earlier turn of one sentence, or ``None``. Returned as `relate_turns` returns it.

    Examples:
        >>> from memtrellis.types import MemoryItem, MemoryType, Scope, SourceRef
        >>> def turn(text):
        ...     source = SourceRef(kind="chat", role="user", content=text)
        ...     return MemoryItem(text=text, memory_type=MemoryType.EPISODE,
        ...                       sources=[source], scope=Scope(entity_id="u"))
        >>> old = turn("Priya is our account manager at Acme.")
        >>> new = turn("Acme assigned us a new account manager, Tom Reyes.")
        >>> relation, whole = model_replaces_turn(new, old, ModelRelationJudge())
        >>> relation.label, whole
        ('supersedes', True)
    """
    earlier = _sentences(old.text)
    claims = _claims(new.text)
    if len(earlier) != 1 or len(old.text) > _MAX_CHARS or not 0 < len(claims) <= 2:
        return None
    second = old.model_copy(update={"text": earlier[0], "entities": _names_in(old, earlier[0])})
    pairs = [
        (new.model_copy(update={"text": said, "entities": _names_in(new, said)}), second)
        for said in claims
    ]
    found = next((v for v in judge.verdicts(pairs) if v is not None), None)
    return (found, True) if found is not None else None
