"""What one short statement claims, read by rules (English and Chinese): the relation rules' input.

A `Claim` splits a statement into its **subject** (who or what it is about: the words
before its verb, the speaker for "I ..." / ``我...``), its **frame** (the other content
words: which attribute it speaks of), its **values** (numbers, dates, times, names other
than the subject), its **polarity** (a negation, or the negative one of a pair such as
open / closed), and the cues around a change:

* a **change cue** ("moved to", "switched to", ``改为``, ``搬到``, ``换了``): the new
  statement gives a new value of something said before;
* a **final cue** ("postponed", "cancelled", "cut", "no longer", ``延期``, ``取消``,
  ``削减``, ``不再``): the old value no longer holds, even when no new one is given;
* a **current cue** ("now", "these days", ``现在``): what follows holds from now on;
* an **additive cue** ("too", "also", "another", ``也``, ``还``): one more value, not
  another one (``Ana speaks Spanish too`` keeps ``Ana speaks French``);
* an **event**: a past action ("visited Rome in 2019"), of which there can be many.

Reason clauses ("after the compliance review", ``因合规审查，``) are left out: they say
why, not what.

Examples:
    >>> claim = read_claim("The project launch was postponed to 2024-07-10 after the review.")
    >>> sorted(claim.subject or ()), claim.final, sorted(claim.values)
    (['launch', 'project'], True, ['2024-07-10'])
    >>> zh = read_claim("因合规审查，项目上线延期至2024-07-10")
    >>> zh.chinese, zh.final, sorted(zh.values), zh.subject
    (True, True, ['2024-07-10'], frozenset({'项目'}))
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from memtrellis.lifecycle.lexicon import (
    _ADDITIVE_EN,
    _ADDITIVE_ZH,
    _ANTONYM_ZH,
    _ANTONYMS_EN,
    _ANTONYMS_ZH,
    _ASCII_RUN,
    _ATTRIBUTE_NOUNS,
    _CHANGE_EN,
    _CHANGE_OBJECT_EN,
    _CHANGE_ZH,
    _CJK,
    _CLASS_OF,
    _CLAUSE_WORD,
    _CURRENT_EN,
    _CURRENT_ZH,
    _DETERMINERS,
    _DISCOURSE,
    _EMPLOYED,
    _EVENT_ZH,
    _FINAL_EN,
    _FINAL_ZH,
    _LABELLED,
    _NEGATION_EN,
    _NEGATION_ZH,
    _NOT_NEGATION_ZH,
    _NOT_YET,
    _NUMBER,
    _PAST_IRREGULAR,
    _POSITIVE_ZH,
    _PRONOUNS,
    _REASON_LEAD,
    _REASON_TAIL,
    _SPEAKER,
    _STATE_PARTICIPLES,
    _STOP_EN,
    _STOPPED_ZH,
    _VALUE_WORDS,
    _VERBISH,
    _WORD,
    _ZH_CLASSES,
    _ZH_FUNCTION,
    _ZH_NUMBER,
    _ZH_PREDICATE,
    _ZH_PRONOUN,
    _ZH_SPEAKER,
    SINGLE_VALUED,
    VALUE_CLASSES,
)
from memtrellis.store.graph import normalize_subject

__all__ = ["SINGLE_VALUED", "VALUE_CLASSES", "Claim", "class_of", "read_claim"]


def unlabel(text: str) -> str:
    """A statement without its lead-in: a discourse word ("Actually, ...", "Update: ..."),
    a label before a colon when it is no clause itself and a clause follows ("Hiring
    freeze: the target was lowered ..."); a colon before a bare value is read as "is"
    ("Payroll cutover: Nov 1.").

    Examples:
        >>> unlabel("Hiring freeze: the 2025 headcount target was lowered to 45.")
        'the 2025 headcount target was lowered to 45.'
        >>> unlabel("Contract renewal deadline: 30 April.")
        'Contract renewal deadline is 30 April.'
    """
    said = _DISCOURSE.sub("", text.strip())
    found = _LABELLED.match(said)
    if found is None or len(found.group(1).split()) > 6:
        return said
    head, rest = found.groups()
    if _CLAUSE_WORD.search(head) or _FINAL_EN.search(head) or _CHANGE_EN.search(head):
        return said  # a clause of its own: "We reversed the decision: ..."
    first = re.split(r"[,;]", rest, maxsplit=1)[0]
    if _CLAUSE_WORD.search(first):
        return rest
    return f"{head} is {rest}"


_ZH_REASON = re.compile(
    r"^(?:因为|由于|因)[^，,。]*[，,]|[，,](?:因为|由于)[^。]*$|(?:因为|由于)[^，,。改推延调]{1,6}(?=[改推延调])"
)


@dataclass(frozen=True)
class Claim:
    """What a statement claims, as the relation rules read it.

    Attributes:
        chinese: Read as Chinese (mostly CJK characters).
        subject: Who or what it is about (word stems, ``@speaker`` for the speaker);
            ``None`` when it opens with a pronoun ("they", ``他``) or says nothing of it.
        frame: The content units that say which attribute (stems, or CJK bigrams).
        classes: Attribute classes its words name (``residence``, ``work``, ...).
        values: Numbers, dates, times and names other than the subject.
        negated: Negative polarity (a negation, or "closed" of open / closed).
        final: A final cue: the old value no longer holds.
        change: A change cue: a new value of something said before.
        current: A current cue ("now").
        additive: An additive cue ("too", ``也``).
        event: A past action rather than a state.
        topic: Chinese only: the words before the predicate (``我的上司`` of
            ``我的上司是陈经理``), the speaker left out; ``None`` when there are none.

    Examples:
        >>> c = read_claim("Ana speaks Spanish too.", ["Ana", "Spanish"])
        >>> sorted(c.subject or ()), sorted(c.values), c.additive
        (['ana'], ['spanish'], True)
    """

    chinese: bool
    subject: frozenset[str] | None
    frame: frozenset[str]
    classes: frozenset[str]
    values: frozenset[str]
    negated: bool
    final: bool
    change: bool
    current: bool
    additive: bool
    event: bool
    topic: str | None = None
    classed: frozenset[tuple[str, str]] = frozenset()
    cue: str = ""

    def core(self, classes: frozenset[str]) -> frozenset[str]:
        """The frame without ``classes``' words and class units: the rest of the slot.

        Examples:
            >>> sorted(read_claim("My work email is a@b.example").core(frozenset({"contact"})))
            ['work']
        """
        drop = {stem for stem, name in self.classed if name in classes}
        return frozenset(
            u for u in self.frame if u not in drop and not (u[1:] in classes and u[0] == "@")
        )


def _stem(word: str) -> str:
    word = word.replace("’", "'").casefold()
    if word.endswith("'s"):
        word = word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            if suffix in ("ing", "ed") and len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


_ATTRIBUTE_STEMS = _ATTRIBUTE_NOUNS | {_stem(w) for w in _ATTRIBUTE_NOUNS}


def _cue_spans(
    text: str, patterns: Iterable[re.Pattern[str]], mark: str = "", *, guard: bool = False
) -> tuple[str, list[bool]]:
    """``text`` with the cues blanked out (``mark`` in their place), and which matched;
    with ``guard``, a cue after an intention or a negation ("not to give up") is none."""
    found: list[bool] = []
    for pattern in patterns:
        matched = False
        for match in pattern.finditer(text):
            if guard and _NOT_YET.search(text[max(0, match.start() - 16) : match.start()]):
                continue
            matched = True
            span = match.end() - match.start()
            blank = f" {mark} ".center(span) if mark and span >= len(mark) + 2 else " " * span
            text = text[: match.start()] + blank + text[match.end() :]
        found.append(matched)
    return text, found


def read_claim(text: str, entities: Iterable[str] = ()) -> Claim:
    """Read ``text`` (with its entity names, when known) as a `Claim`.

    Examples:
        >>> c = read_claim("I moved to Porto!", ["Porto"])
        >>> sorted(c.subject or ()), sorted(c.values), c.change, sorted(c.classes)
        (['@speaker'], ['porto'], True, ['residence'])
    """
    return _read(text, tuple(entities))


@functools.lru_cache(maxsize=8192)
def _read(text: str, entities: tuple[str, ...]) -> Claim:
    # Cached: a plan reads each stored candidate again for every new memory it compares.
    cjk = len(_CJK.findall(text))
    if cjk and cjk >= len(re.findall(r"[A-Za-z]", text)) / 3:
        return _read_chinese(text)
    return _read_english(text, [normalize_subject(e) for e in entities])


def _read_english(text: str, names: list[str]) -> Claim:
    stripped = text.strip()
    said = unlabel(stripped)
    correction = said != stripped and stripped[:10].casefold().startswith("correction")
    said = _REASON_TAIL.sub("", _REASON_LEAD.sub("", said))
    lowered = said.casefold().replace("\u2019", "'")
    blanked, (final, change, current, additive) = _cue_spans(
        lowered, (_FINAL_EN, _CHANGE_EN, _CURRENT_EN, _ADDITIVE_EN), _CUE, guard=True
    )
    negated = bool(_NEGATION_EN.search(lowered))
    said_cue = next(
        (
            m.group(0)
            for p in (_FINAL_EN, _CHANGE_EN, _CURRENT_EN)
            for m in [p.search(lowered)]
            if m
        ),
        "",
    )
    classes: set[str] = set()
    for word in _WORD.findall(lowered):
        classes |= _CLASS_OF.get(_stem_key(word), set())
    employed = bool(_EMPLOYED.search(lowered))  # "works at", "worked for": a job
    if employed:
        classes.add("work")
    # Names become placeholders, the longest first ("St Mary's" is one value).
    values: set[str] = set()
    lead: str | None = None
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", blanked)
        if found is None:
            continue
        at = found.start()
        if not blanked[:at].strip():
            lead = name
        else:
            values.add(name)
        blanked = blanked[:at] + " " + _NAME + " " + blanked[at + len(name) :]
    change = change or bool(_CHANGE_OBJECT_EN.search(blanked))
    tokens = [t.strip("'").rstrip(".") for t in _WORD.findall(blanked)]
    subject: set[str] | None = {lead} if lead else set()
    frame: set[str] = set()
    classed: set[tuple[str, str]] = set()
    in_subject, event = True, False
    for position, word in enumerate(tokens):
        if word == _CUE:
            in_subject = in_subject and position == 0
            continue
        if word.startswith(_NAME):
            continue
        if (
            word == "s"
            and position
            and tokens[position - 1].startswith(_NAME)
            and _possessive(tokens[position + 1 : position + 2])
        ):
            continue  # "Felix's company moved": the subject goes on
        if _NUMBER.fullmatch(word) or word in _VALUE_WORDS:
            value = word.replace(",", "").lstrip("$\u20ac\u00a3\u00a5")
            if in_subject and subject is not None and position + 1 < len(tokens):
                subject.add(value)  # "Release 4.2 ships", "a first note": which one
            else:
                values.add(value)
            continue
        if word in _ANTONYMS_EN:
            negated = not negated
            word = _ANTONYMS_EN[word]
        if in_subject and position > 0 and _verbish(word, tokens[position - 1]):
            in_subject = False
        elif in_subject and position == 1 and lead and tokens[0].startswith(_NAME):
            in_subject = False  # a name and its verb: "Amir became ...", "Rita works ..."
        elif position == 0 and not lead and (word in _IMPERATIVES or word in _VERB_CLASS_WORDS):
            subject, in_subject = None, False  # "Reach me at ...": no subject named
        if word in _PAST_IRREGULAR or (
            word.endswith("ed") and word not in _STATE_PARTICIPLES and word not in _CLASS_OF
        ):
            event = True
        if word in _SPEAKER or word in _PRONOUNS:
            if position == 0 and subject is not None:
                # "I run ...": the pronoun is the whole subject.
                subject = {"@speaker"} if word in _SPEAKER else None
                in_subject = False
            continue
        if (
            word in _STOP_EN
            or word.endswith("n't")
            or _NEGATION_EN.fullmatch(word)
            or len(word) < 2
        ):
            continue
        stem = _stem(word)
        if in_subject and subject is not None:
            subject.add(stem)
        frame.add(stem)
        frame.update("@" + c for c in _CLASS_OF.get(_stem_key(word), ()))
        if employed and stem == "work":
            frame.add("@work")
            classed.add((stem, "work"))
        classed.update((stem, c) for c in _CLASS_OF.get(_stem_key(word), ()))
    return Claim(
        chinese=False,
        subject=frozenset(subject) if subject else None,
        frame=frozenset(frame),
        classes=frozenset(classes),
        values=frozenset(values),
        negated=negated,
        final=final or correction,
        change=change,
        current=current,
        additive=additive,
        event=event,
        classed=frozenset(classed),
        cue=said_cue,
    )


_NAME = "zzname"
_CUE = "zzcue"
# Class words that are verbs: they end a subject phrase ("Ana lives ...").
_VERB_CLASS_WORDS = frozenset(
    """live lives living lived move moved moving relocate relocated reside resides stay stays
    work works worked working like likes liked love loves loved prefer prefers preferred hate
    hates dislike dislikes enjoy enjoys decided decide chose choose picked plan plans planned
    hired""".split()  # noqa: SIM905 - reads as text
)


# Verbs a text may open with, naming no subject ("Reach me at ...", "Contact Ines at ...").
_IMPERATIVES = frozenset("reach contact call text email message ping find".split())  # noqa: SIM905


# Words after a name's "'s" that make it "is" or "has" ("Dana's out sick", "Kai's a
# nurse", "Ana's been promoted"), not a possessive ("Felix's company").
_AFTER_IS = frozenset(
    """a an the not no never out in at on off now just also still been got going here there
    back away home over""".split()  # noqa: SIM905 - reads as text
)


def _possessive(after: list[str]) -> bool:
    """Whether a name's "'s" before ``after`` (the next token, if any) is a possessive."""
    if not after:
        return False
    word = after[0]
    return not (
        word in _AFTER_IS
        or word.endswith(("ed", "ing", "n't"))
        or bool(_NUMBER.fullmatch(word))
        or word in _VALUE_WORDS
        or word in _PAST_IRREGULAR
    )


def class_of(word: str) -> frozenset[str]:
    """The attribute classes a word names ("phone": ``contact``; ``residence`` of "moved").

    Examples:
        >>> sorted(class_of("phone")), sorted(class_of("Lives"))
        (['contact'], ['residence'])
    """
    return frozenset(_CLASS_OF.get(_stem_key(word), ()))


def _stem_key(word: str) -> str:
    word = word.strip("'").casefold()
    return word[:-2] if word.endswith("'s") else word


def _verbish(word: str, previous: str) -> bool:
    """Whether ``word`` (after ``previous``) ends the subject phrase: a verb or auxiliary."""
    if word in _VERBISH or word in _VERB_CLASS_WORDS or word in _PAST_IRREGULAR:
        return True
    if word.endswith("ed") and word not in _STATE_PARTICIPLES:
        return True
    return (
        word.endswith("s")
        and not word.endswith(("ss", "'s"))
        and previous not in _DETERMINERS
        and not _NUMBER.fullmatch(previous)
        and previous not in _VALUE_WORDS
    )


def _read_chinese(text: str) -> Claim:
    said = _ZH_REASON.sub("", text.strip())
    classes = {name for name, words in _ZH_CLASSES.items() if any(w in said for w in words.split())}
    values = {m.group(0) for m in _ZH_NUMBER.finditer(said)}
    values |= {m.group(0).casefold() for m in _ASCII_RUN.finditer(said)}
    negated = False
    for match in _ANTONYM_ZH.finditer(said):
        if match.group(0) in _ANTONYMS_ZH:
            negated = not negated
    body = _ANTONYM_ZH.sub(
        lambda m: _ANTONYMS_ZH.get(m.group(0)) or _POSITIVE_ZH.get(m.group(0), m.group(0)), said
    )
    body, (final, change, current, additive) = _cue_spans(
        body, (_FINAL_ZH, _CHANGE_ZH, _CURRENT_ZH, _ADDITIVE_ZH)
    )
    if final and "不再" in said:
        negated = not negated  # 不再 is a cue, not a second negation
    plain = _NOT_NEGATION_ZH.sub("", body)
    if _NEGATION_ZH.search(plain):
        negated = not negated
    event = bool(_EVENT_ZH.search(said))
    body = _ZH_NUMBER.sub("#", body)
    body = _ASCII_RUN.sub("#", body)
    body = _NEGATION_ZH.sub("", _NOT_NEGATION_ZH.sub(" ", body))
    final = final or bool(_STOPPED_ZH.search(said))
    subject: frozenset[str] | None = None
    speaker = _ZH_SPEAKER.match(body.strip())
    if speaker:
        subject = frozenset({"@speaker"})
        body = body.strip()[speaker.end() :]
    elif _ZH_PRONOUN.match(body.strip()):
        body = _ZH_PRONOUN.sub("", body.strip())
    segments = [s for s in _ZH_FUNCTION.sub(" ", body).split() if s]
    opening = _ZH_PRONOUN.sub("", _ZH_SPEAKER.sub("", said.strip()))
    opening = _cue_spans(opening, (_FINAL_ZH, _CHANGE_ZH, _CURRENT_ZH), "|")[0]
    bound = _ZH_PREDICATE.search(opening)
    if bound is None:
        bound = re.search(r"\S\s+", opening)
    topic = _ZH_FUNCTION.sub("", opening[: bound.end() - 1]) if bound else ""
    topic = topic.replace("|", "")
    frame: set[str] = set()
    for segment in segments:
        chars = [c for c in segment if c != "#" or len(segment) > 1]
        if len(chars) == 1:
            frame.add(chars[0])
        frame.update(a + b for a, b in itertools.pairwise(chars))
    if subject is None and segments and not _ZH_PRONOUN.match(said.strip()):
        head = segments[0].replace("#", "")
        if len(head) >= 2:
            subject = frozenset({head[:2]})
    return Claim(
        chinese=True,
        subject=subject,
        frame=frozenset(frame),
        classes=frozenset(classes),
        values=frozenset(values),
        negated=negated,
        final=final,
        change=change,
        current=current,
        additive=additive,
        event=event,
        topic=topic if len(topic) >= 2 else None,
    )
