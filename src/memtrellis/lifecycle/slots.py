"""One slot, another value: supersession read from structure rather than from cue words.

Two statements speak of one **slot** when they have the same subject and, with their
typed values masked (`memtrellis.lifecycle.values`), the old one's attribute words are
all in the new one: "Mum's hip operation is on the 20th." / "Mum's hip operation was put
off until the 27th." share ``mum hip operation`` and a date; the words the new one adds
("put off") need not be known. The slot **changed** when a value of the same kind and
unit differs and:

* nothing else differs (the same words, another date: "The audit starts on Monday." /
  "The audit starts on Tuesday.");
* or the new value is given as the target of a change ("... **to** 9:45", "... **until**
  the 27th", "rebooked **for** 2 July", ``推迟到``, ``调整为``), whatever the verb;
* or the new one says by how much ("cut **by** 30%", ``砍了一半``).

The new statement may name the old one's subject as its object ("**We** pushed the
product launch event out to 3 December", "**They** raised our rate limit to 500 requests
per minute"): a target value then still replaces the old one. Without values, the old
value named as what was ended or replaced ("I **sold** my Honda", "I **swapped** the Ford
Focus **for** a Kia Niro"), or one word of the same words replaced with a change word
("The project is on hold." / "The project is active **again**.", ``已经...了``) says it.

What keeps a compatible pair apart: another subject (a word the other lacks: "My work
number" / "My home number", ``返程航班`` / ``航班``), another unit ("12 engineers" / "3
offices"), a value in the subject ("Release 4.2" / "Release 4.3"), a qualifier the old
one lacks ("on Saturdays"), another name beside the value ("a meeting with Priya" / "with
Tom"), an additive cue, two past events, a modal ("might move"), a question.

Examples:
    >>> from memtrellis.lifecycle.claims import read_claim
    >>> def change(old, new):
    ...     return slot_change(new, old, read_claim(new), read_claim(old))
    >>> change("Mum's operation is on the 20th.", "Mum's operation was put off until the 27th.")
    ('date changed to the 27th', False)
    >>> change("Bus fares are 2 pounds.", "Train fares are 6 pounds.") is None
    True
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable

from memtrellis.lifecycle.claims import _ZH_REASON, SINGLE_VALUED, Claim, _stem, unlabel
from memtrellis.lifecycle.lexicon import (
    _ATTRIBUTE_NOUNS,
    _PAST_IRREGULAR,
    _REASON_LEAD,
    _REASON_TAIL,
    _SPEAKER,
    _STATE_PARTICIPLES,
    _STOP_EN,
    _VALUE_WORDS,
    _WORD,
)
from memtrellis.lifecycle.slots_zh import Verdict, chinese_change
from memtrellis.lifecycle.values import (
    CHANGE_TARGET,
    Value,
    by_kind,
    changed_values,
    read_values,
)

__all__ = ["several_slots", "slot_change"]


# Verbs that only carry a value ("is set for", "is scheduled for", "happens on").
_LIGHT = frozenset(
    """set schedul plan book due held hold happen take place fix arrang expect slat
    current now still""".split()  # noqa: SIM905 - reads as text
)
# Modality: nothing has changed yet ("might move", "plans to", ``可能``).
_MODAL_EN = re.compile(
    r"\b(?:might|may|could|would|should|if|maybe|perhaps|probably|hope|hopes|want|wants|"
    r"plan(?:s|ning)?|planned to|thinking|considering|wondering|unless|whether|"
    r"looking forward|going to|gonna|hoping|intend(?:s|ing)?)\b|\?$"
)
_MODAL_ZH = re.compile(r"可能|也许|或许|打算|计划|考虑|如果|要是|想要|希望|[吗？?]")
# What was ended or given up, when the old value is its object ("sold my Honda").
_ENDED_EN = (
    r"(?:sold|deleted|closed|cancell?ed|quit|left|dropped|ditched|got rid of|stopped|ended|"
    r"terminated|deactivated|uninstalled|unsubscribed from|moved out of|gave up|broke up with|"
    r"retired from|resigned from|came off|got off|deleted my account on|left)"
)
_REPLACED_EN = r"(?:swapped|replaced|traded(?: in)?|exchanged|switched|changed|upgraded)"
_OWNER = r"(?:(?:my|the|his|her|our|their|its|your)\s+)?(?:(?:old|current|former)\s+)?"
# Participles of a state changing, read only over the same words with one replaced
# ("My passport is valid." / "My passport has expired.").
_RESULT_EN = re.compile(
    r"\b(?:has|have|had|was|were|is|are|got|been)\s+(?:now\s+|just\s+|finally\s+|been\s+)*"
    r"(?:expired|fixed|resolved|finished|completed|closed|reopened|opened|ended|launched|"
    r"shipped|delivered|approved|rejected|cancell?ed|paused|resumed|banned|blocked|"
    r"unblocked|suspended|frozen|renewed|broken|repaired|sold|deleted|retired|recovered|"
    r"activated|deactivated|archived|restored|lifted|revoked|withdrawn|dissolved|merged)\b"
)
_AGAIN_EN = re.compile(r"\b(?:again|instead|anymore|any more|no longer|now|these days)\b")
_AUXILIARIES = frozenset(
    "is are was were be been being get gets got getting has have had 's 're".split()  # noqa: SIM905
)
# Final cues that end a thing itself (an event, a plan, a service), not something a person
# does: "The festival has been called off" ends the festival.
_CALLED_OFF = re.compile(
    r"cancel|called off|call off|scrapped|abandoned|postpone|delayed|shut down|closed down|"
    r"discontinued|withdrawn|suspended|axed"
)
_OWNED_NAME = re.compile(
    r"(?:our|my|the|his|her|their|your)\s+([\w .'-]+?)\s+(?:is|are|was|were|has|have)\b"
)
_SPEAKER_ONLY = frozenset({"@speaker"})
_NEGATION_EN = re.compile(r"\b(?:not|never|no|none|nobody|nothing|cannot)\b|n't\b")
_COPULA = re.compile(r"\b(?:is|are|was|were|'s|'re|am|'m)\b")
_RETURN_EN = re.compile(r"\b(?:again|no longer|anymore|any more)\b")
_DELTA_EN = re.compile(r"\bby\s*$|\bin\s*$")


#: Statements longer than this (characters) are not read by the slot model: it reads one
#: statement's values, and its patterns are not meant for pages of text.
MAX_SLOT_CHARS = 1_000


def _too_long(new: str, old: str) -> bool:
    return max(len(new), len(old)) > MAX_SLOT_CHARS


def slot_change(new: str, old: str, a: Claim, b: Claim) -> Verdict | None:
    """Whether ``new`` (claim ``a``) gives another value of ``old``'s (claim ``b``) slot.

    Returns why and whether it is sure, or ``None`` when the structure says no change
    (or a statement is longer than `MAX_SLOT_CHARS`).
    """
    if (
        _too_long(new, old)
        or a.additive
        or (_negated(new, a) != _negated(old, b) and not a.chinese)
    ):
        return None
    new, old = _said(new, a.chinese), _said(old, b.chinese)
    said = new if a.chinese else re.sub(r"\bMay\b", "", new)  # the month, not "may"
    if (_MODAL_ZH if a.chinese else _MODAL_EN).search(said.casefold().strip()):
        return None
    va, vb = _predicate(read_values(new), a, new), _predicate(read_values(old), b, old)
    cued = a.final or a.change or a.current
    if _event(new, a) and _event(old, b) and not cued:
        return None  # "visited Rome in 2019" / "visited Paris in 2021": two events
    if a.chinese != b.chinese:
        return None
    if a.chinese:
        return chinese_change(new, old, a, b, va, vb)
    return _english(new, old, a, b, va, vb)


def _event(text: str, claim: Claim) -> bool:
    """A past action ("visited Rome", "raised 12,000 pounds"), not a state said with a
    participle ("is unresolved", "was fixed", "got cancelled")."""
    if claim.chinese or not claim.event:
        return claim.event
    words = re.findall(r"[a-z']+", text.casefold())
    for before, word in zip(["", *words], words, strict=False):
        if before in _AUXILIARIES or word in _STATE_PARTICIPLES:
            continue
        if word.endswith("ed") or word in _PAST_IRREGULAR:
            return True
    return False


def _negated(text: str, claim: Claim) -> bool:
    """Negative polarity: a negation word (the claims' antonyms aside: "put off" is none)."""
    return claim.negated if claim.chinese else bool(_NEGATION_EN.search(text.casefold()))


def several_slots(new: str, old: str, a: Claim, b: Claim) -> bool:
    """Whether ``new`` gives values of more than one slot than ``old`` (claims ``a`` and
    ``b``): a value of a kind the old one lacks (a qualifier: "on Saturdays"), two kinds
    changed at once, or another name beside another value ("with Tom on Tuesday"). A
    statement longer than `MAX_SLOT_CHARS` is taken to hold several.

    Examples:
        >>> from memtrellis.lifecycle.claims import read_claim
        >>> def several(old, new):
        ...     return several_slots(new, old, read_claim(new), read_claim(old))
        >>> several("The bakery closes at 6 pm.", "The bakery closes at 8 pm on Saturdays.")
        True
        >>> several("The bakery closes at 6 pm.", "The bakery closes at 7 pm.")
        False
    """
    if _too_long(new, old):
        return True
    va, vb = read_values(new), read_values(old)
    new_kinds, old_kinds = by_kind(va), by_kind(vb)
    if set(new_kinds) - set(old_kinds):
        return True
    changed = {k for k in set(new_kinds) & set(old_kinds) if new_kinds[k] != old_kinds[k]}
    if len({k[0] for k in changed}) > 1 and not {k[0] for k in changed} <= {"date", "time"}:
        return True
    typed = (
        {w for v in (*va, *vb) for w in v.text.split()}
        | {w for v in (*va, *vb) for w in new[v.start : v.end].casefold().split()}
        | {w for v in (*va, *vb) for w in old[v.start : v.end].casefold().split()}
    )
    names_a, names_b = a.values - typed, b.values - typed
    return bool(changed) and bool(names_a ^ names_b)


def _said(text: str, chinese: bool) -> str:
    """The statement without what only says why ("after the review", ``因合规审查，``)."""
    if chinese:
        return _ZH_REASON.sub("", text.strip())
    return _REASON_TAIL.sub("", _REASON_LEAD.sub("", unlabel(text)))


def _predicate(values: Iterable[Value], claim: Claim, text: str) -> list[Value]:
    """The values a statement gives, not those naming its subject ("Release 4.2 ...",
    ``周六的聚会``)."""
    subject = claim.subject or frozenset()
    out = []
    for value in values:
        if claim.chinese:
            if text[value.end : value.end + 1] == "的":
                continue
        elif value.text in subject or any(t in subject for t in value.text.split()):
            continue
        out.append(value)
    return out


# -- English -----------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    lowered = text.casefold().replace("\u2019", "'")
    out = []
    for word in _WORD.findall(lowered):
        word = word.strip("'").rstrip(".")
        if word in _SPEAKER:
            out.append("@speaker")
        elif word and word not in _STOP_EN and not word[0].isdigit() and len(word) > 1:
            out.append(_stem(word))
    return out


def _subject(claim: Claim) -> frozenset[str] | None:
    """A claim's subject as words ("contact ines" is two), attribute nouns left out."""
    if claim.subject is None:
        return None
    words = {w for unit in claim.subject for w in unit.split()}
    return frozenset(words - _ATTRIBUTE_NOUNS - {_stem(w) for w in _ATTRIBUTE_NOUNS})


def _owned(claim: Claim, text: str) -> Claim:
    """A claim whose subject is a name after a possessive ("Our HQ is ..."): that name,
    which the claims read as a value."""
    if claim.subject is not None:
        return claim
    found = _OWNED_NAME.match(text.casefold())
    if found is None or found.group(1) not in claim.values:
        return claim
    name = found.group(1)
    return dataclasses.replace(claim, subject=frozenset({name}), values=claim.values - {name})


def _same_subject(a: Claim, b: Claim) -> bool:
    """The same subject, strictly: neither has a word the other lacks anywhere."""
    sa, sb = _subject(a), _subject(b)
    if sa is None or sb is None or not sa or not sb:
        return False
    if sa == sb:
        return True
    return sa - sb <= b.frame | b.values and sb - sa <= a.frame | a.values and bool(sa & sb)


def _acted_on(a: Claim, b: Claim, said: frozenset[str]) -> bool:
    """The new statement's agent acts on the old one's subject ("We pushed the launch
    event out ...", "They raised our rate limit ..."): the old subject is its object."""
    sa, sb = _subject(a), _subject(b)
    if not sb or sb == _SPEAKER_ONLY:
        return False
    if sa is not None and sa & sb - {"@speaker"}:
        return False
    return sb <= (a.frame | a.values | said) - (sa or frozenset())


def _content(
    claim: Claim, values: list[Value], other: Claim, text: str = "", *, cues: bool = True
) -> frozenset[str]:
    """The attribute words of a claim: its frame less subject, light verbs, attribute
    nouns, the units and words of its values ("this year") and class marks."""
    units = {v.unit for v in values} | {_stem(v.unit) for v in values if v.unit}
    units |= {w for v in read_values(text) for w in _words(text[v.start : v.end])}
    drop = (claim.subject or frozenset()) | (other.subject or frozenset())
    drop |= {_stem(w) for name in claim.values | drop for w in name.split()}
    # The frame, and the words the claims took as cues ("pushed the dinner back"): what a
    # cue acts on says which slot too.
    return frozenset(
        u
        for u in claim.frame | (set(_words(text)) if cues else set())
        if not u.startswith("@")
        and u not in drop
        and u not in _LIGHT
        and u not in units
        and u not in _ATTRIBUTE_NOUNS
        and _stem(u) not in _ATTRIBUTE_NOUNS
        and not u.isdigit()
    )


def _target(text: str, value: Value, skip: frozenset[str]) -> bool:
    """Whether ``value`` is given as where something changed to: "to", "until", "till",
    "into" before it (words of the old statement between them allowed: "to serve 6"),
    or "for" before a date or time ("rebooked for 2 July")."""
    before = text.casefold()[: value.start].split()
    while before and _stem(before[-1].strip(".,")) in skip:
        before.pop()
    while before and before[-1] in ("the", "a", "an", "about", "around", "roughly", "only"):
        before.pop()
    if not before:
        return False
    lead = before[-1]
    return lead in CHANGE_TARGET or (lead == "for" and value.kind in ("date", "time"))


def _english(
    new: str, old: str, a: Claim, b: Claim, va: list[Value], vb: list[Value]
) -> Verdict | None:
    a, b = _owned(a, new), _owned(b, old)
    said = frozenset(_words(new))
    same = _same_subject(a, b)
    acted = not same and _acted_on(a, b, said)
    if not (same or acted):
        return None
    # The names the old statement gives must stay: "a meeting with Priya" / "with Tom".
    other_names = b.values - a.values - {v.text for v in vb}
    content_a, content_b = _content(a, va, b, new), _content(b, vb, a, old)
    whole_a = a.frame | a.values | (a.subject or frozenset()) | said
    kept = content_b <= {_stem(w) for w in whole_a} | whole_a
    change = changed_values(va, vb)
    if change is not None and not (other_names - _value_words(vb, old)):
        values, no_qualifier, none_dropped = change
        value = values[0]
        extras = content_a - content_b - b.frame
        targeted = any(_target(new, v, b.frame) for v in values)
        cued = a.final or a.change or a.current
        # The speaker is no slot ("We meet on Friday" / "We pushed the dinner back to ..."),
        # and a bare number says nothing of what it counts ("Sara is 34" / "... a raise to
        # 66,000 a year"): their attribute words must all be kept, and no word added.
        thing = _subject(b) != _SPEAKER_ONLY
        if not thing and not content_b:
            return None  # "We ..." / "I ...": no word says which slot
        # A bare number keeps its word before it ("serves 4" / "to serve 6").
        bare = all(v.kind == "number" for v in values) and not _same_lead(new, old, values, vb)
        if bare and extras:
            pass
        elif same and kept and not extras and no_qualifier and (none_dropped or cued):
            return f"{value.kind} changed to {value.text}", True
        elif (
            ((same and (kept or (targeted and thing and len(content_b) <= 2))) or acted)
            and targeted
            and (no_qualifier or cued)
        ):
            return f"{value.kind} changed to {value.text}", False
        elif same and kept and cued and no_qualifier:
            return f"{value.kind} changed to {value.text} ({a.cue})", False
    if (same or acted) and vb and _delta(new, va) and (kept or a.final):
        return "changed by " + _delta(new, va), False
    # Which slot a name fills needs words: the old subject as a thing ("Our HQ"), a kept
    # attribute word, or a one-value attribute both name ("lives" / "moved"); the speaker
    # alone says nothing ("I moved to Porto" / "I switched to an iPhone").
    slot = (
        _subject(b) != _SPEAKER_ONLY
        or bool(content_b)
        or bool(a.classes & b.classes & SINGLE_VALUED)
    )
    if (same or acted) and kept and slot and (a.change or a.final or a.current):
        verdict = _new_name(new, a, b, said)
        if verdict is not None:
            return verdict
    said_a = _content(a, va, b, new, cues=False)
    if same and _CALLED_OFF.search(a.cue) and _subject(b) and not said_a - content_b:
        # The thing itself ended, nothing else said: "The festival has been called off."
        return f"final cue {a.cue!r} about {' '.join(sorted(_subject(b) or ()))}", False
    return _named(new, old, a, b, same) or (_replaced_word(new, old, a, b) if same else None)


def _names(claim: Claim, text: str) -> set[str]:
    """The names a claim gives besides its subject, labels ("iPhone 15") among them."""
    subject = claim.subject or frozenset()
    names = {
        v for v in claim.values if v not in subject and not any(c.isdigit() for c in v)
    } - _VALUE_WORDS
    names |= {f"{v.unit} {v.text}" for v in read_values(text) if v.kind == "label"}
    return names


def _new_name(new: str, a: Claim, b: Claim, said: frozenset[str]) -> Verdict | None:
    """A change cue giving another name as its target ("We relocated HQ to Denver", "I
    switched to an iPhone 15", "Irene handed the project lead role to Victor")."""
    old_names, new_names = _names(b, ""), _names(a, new)
    if not old_names or not new_names - old_names:
        return None
    if not old_names - new_names - (a.subject or frozenset()) and not (
        old_names & (a.subject or frozenset())
    ):
        return None  # the old value is still said: "moved to Lyon" of "lives in Lyon"
    lowered = new.casefold()
    for name in sorted(new_names - old_names, key=len, reverse=True):
        if re.search(rf"\b(?:to|into|with|for)\s+{_OWNER}(?:an?\s+)?{re.escape(name)}\b", lowered):
            return f"changed to {name!r}", False
    return None


def _same_lead(new: str, old: str, values: list[Value], before: list[Value]) -> bool:
    """Whether a new value and the old one of its kind follow the same content word."""

    def word(text: str, value: Value) -> str:
        words = [w for w in _words(text[: value.start]) if w != "@speaker"]
        return words[-1] if words else ""

    leads = {word(old, v) for v in before if v.kind in {n.kind for n in values}}
    return any(word(new, v) in leads - {""} for v in values)


def _value_words(values: list[Value], text: str) -> set[str]:
    """The words of the values as read and as said ("may 31" and "31 May")."""
    said = {t.strip(",.") for v in values for t in text[v.start : v.end].casefold().split()}
    return {t for v in values for t in v.text.split()} | said


def _delta(text: str, values: list[Value]) -> str:
    """An amount of change in ``text`` ("by 30%", "by half", ``了一半``), or ``""``."""
    lowered = text.casefold()
    for value in values:
        if value.kind in ("percent", "quantity", "number", "money") and _DELTA_EN.search(
            lowered[: value.start]
        ):
            return value.text
    found = re.search(r"\b(?:by|in) (?:half|a third|a quarter|two thirds)\b", lowered)
    return found.group(0) if found else ""


def _named(new: str, old: str, a: Claim, b: Claim, same: bool) -> Verdict | None:
    """The old value named as what the new statement ended or replaced."""
    sa, sb = a.subject or frozenset(), b.subject or frozenset()
    if not (same or sa == sb):
        return None
    lowered = new.casefold()
    # A name the new statement shortens is that name ("my Kindle" of "a Kindle Paperwhite").
    named = {n for n in a.values for m in b.values - sb if n == m or m.startswith(n + " ")}
    for name in sorted(named, key=len, reverse=True):
        if len(name) < 2 or name.isdigit():
            continue
        quoted = re.escape(name)
        if re.search(rf"\b{_ENDED_EN}\s+{_OWNER}{quoted}\b", lowered):
            return f"ended {name!r}", False
        replaced = re.search(
            rf"\b{_REPLACED_EN}\s+(?:in\s+)?{_OWNER}{quoted}\b.*?\b(?:for|with|to)\b", lowered
        )
        if replaced and a.values - b.values:
            return f"replaced {name!r}", False
    return None


def _replaced_word(new: str, old: str, a: Claim, b: Claim) -> Verdict | None:
    """One word of the same words replaced, with a word saying it changed ("again",
    "now", "no longer", a state-change participle)."""
    said, before = _words(new), _words(old)
    if len(before) > 6 or len(said) > 8 or not before or read_values(old):
        return None  # a value is compared as a value, not as a word
    blocks = [
        op for op in difflib.SequenceMatcher(a=before, b=said).get_opcodes() if op[0] != "equal"
    ]
    if len(blocks) != 1 or blocks[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = blocks[0]
    if i2 - i1 > 2 or j2 - j1 > 3 or i1 == 0:
        return None  # the subject itself replaced: another thing
    lowered = new.casefold()
    subject = (b.subject or frozenset()) | {_stem(w) for w in b.subject or ()}
    # Only the subject kept ("The project is on hold." / "... is active again."): a state
    # of a thing, said in both with the copula, and said to have changed.
    only_subject = all(w in subject for w in before[:i1] + before[i2:])
    if only_subject and not (
        _COPULA.search(old.casefold())
        and (_RESULT_EN.search(lowered) or _RETURN_EN.search(lowered))
        and "@speaker" not in subject
    ):
        return None
    # More of the same words kept than replaced ("I'm glad everyone had fun" / "I'm
    # learning German now - tough but fun" keeps one word of four).
    kept_words = [w for w in before[:i1] + before[i2:] if w not in subject]
    if not only_subject and len(kept_words) < max(i2 - i1, j2 - j1):
        return None
    if _RESULT_EN.search(lowered) or (
        _AGAIN_EN.search(lowered) and (a.current or a.change or a.final or "again" in lowered)
    ):
        return f"{' '.join(before[i1:i2])!r} is now {' '.join(said[j1:j2])!r}", False
    return None
