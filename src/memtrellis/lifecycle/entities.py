"""Entity names: found in text when extraction gave none, and resolved within one scope.

Resolution maps a new name onto an entity the scope already has when they are the same
up to case and whitespace, a configured alias, a possessive (``Clara's``), or a close
fuzzy match (rapidfuzz ``ratio``, a normalised edit distance: ``Clara Smith`` and ``Clara
Smth`` are one, ``Mark`` and ``Market Street`` are not). It only ever looks at the one
scope's names, so it cannot cross entities.

Examples:
    >>> heuristic_entities('Met @dana_k and "Blue Fox" with Clara Smith in Porto today.')
    ['Blue Fox', 'Clara Smith', 'Porto', 'dana_k']
    >>> resolve_entities(["clara  smith", "Porto"], {"clara smith": "Clara Smith"})
    ['Clara Smith', 'Porto']
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from rapidfuzz import fuzz, process

from memtrellis.store.graph import normalize_subject

__all__ = ["heuristic_entities", "resolve_entities"]

_HANDLE = re.compile(r"(?<![\w@])@([A-Za-z0-9_][A-Za-z0-9_.-]{1,38}[A-Za-z0-9_])")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»\n]{2,40})[\"“”«»]")
_WORD = re.compile(r"[A-Za-z][\w'’&.-]*")
_SENTENCE_ENDS = frozenset(".!?:;\n")
_POSSESSIVE = re.compile(r"['’]s$")
_CONNECTORS = frozenset({"of", "de", "da", "van", "von", "del", "la", "le"})
# Capitalised words that are rarely names: pronouns, calendar words, greetings.
_NOT_NAMES = frozenset(
    """i i'm i've i'd i'll me my we our you your he she it they them his her its their
    yes no ok okay hi hello hey thanks thank wow yeah sure oh well so and but or if
    the a an this that these those there here what when where who why how which
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
    january february march april may june july august september october november december
    mr mrs ms dr met saw called visited asked told took had went got invited talked spoke
    emailed texted thanked ask tell call visit meet""".split()  # noqa: SIM905 - reads as text
)
_MAX_NAMES = 12
# A run of more capitalised words than this is a title-cased line, not a name.
_MAX_NAME_WORDS = 8
_NEXT_WORD = re.compile(r"\s+([a-z]+)")
# A lower-case word that, right after a capitalised first word, marks it as a subject.
_SUBJECT_VERB = re.compile(
    r"is|was|has|had|will|would|can|could|did|does|said|says|told|went|got|made|took|gave|"
    r"[a-z]{2,}(?:s|ed)"
)


def _starts_sentence(text: str, at: int) -> bool:
    """Whether ``text[at]`` opens the text or follows a sentence end (and whitespace).

    It walks back over the whitespace right before ``at`` only, so calling it once per
    word costs time linear in the text (the whitespace runs before words are disjoint);
    searching the whole prefix for each word was quadratic (51 s for 400 KB).
    """
    index = at - 1
    while index >= 0 and text[index].isspace() and text[index] != "\n":
        index -= 1
    return index < 0 or text[index] in _SENTENCE_ENDS


def _clean(name: str) -> str:
    name = _POSSESSIVE.sub("", name.strip(" \t.,;:!?()[]{}'’\"“”@"))
    return " ".join(name.split())


def heuristic_entities(text: str, known: Collection[str] = ()) -> list[str]:
    """Names in ``text``: @handles, short quoted names and capitalised spans.

    A single capitalised word that starts a sentence is most likely capitalised for the
    sentence; it is kept when it is one of the ``known`` (normalised) names, or when a
    verb follows it as a subject ("Ana moved", "Bob is", "Clara said"). Spans of two or
    more words are kept wherever they are.
    """
    found: dict[str, str] = {}

    def keep(name: str) -> None:
        name = _clean(name)
        key = normalize_subject(name)
        if len(name) >= 2 and key not in _NOT_NAMES and key not in found:
            found[key] = name

    for match in _HANDLE.finditer(text):
        keep(match.group(1))
    for match in _QUOTED.finditer(text):
        quoted = match.group(1)
        if len(quoted.split()) <= 4 and quoted[:1].isupper():
            keep(quoted)
    span: list[str] = []
    span_start = span_end = 0

    def close_span() -> None:
        while span and span[-1].casefold() in _CONNECTORS:
            span.pop()
        if 0 < len(span) <= _MAX_NAME_WORDS:
            at_start = _starts_sentence(text, span_start)
            name = " ".join(span)
            after = _NEXT_WORD.match(text, span_end)
            subject = after is not None and bool(_SUBJECT_VERB.fullmatch(after.group(1)))
            if len(span) > 1 or not at_start or subject or normalize_subject(name) in known:
                keep(name)
        span.clear()

    for match in _WORD.finditer(text):
        word = match.group(0)
        if span and text[span_end : match.start()].strip(" -"):
            close_span()  # punctuation between the words: "Hey Mel! Good ..."
        first = not span and _starts_sentence(text, match.start())
        if word[0].isupper() and not (first and _clean(word).casefold() in _NOT_NAMES):
            if not span:
                span_start = match.start()
            span.append(_clean(word) if word.endswith(("'s", "’s")) else word)
            span_end = match.end()
            if word.endswith(("'s", "’s", ".", ",")):
                close_span()
        elif span and word.casefold() in _CONNECTORS:
            span.append(word)
            span_end = match.end()
        else:
            close_span()
    close_span()
    return sorted(found.values())[:_MAX_NAMES]


def resolve_entities(
    names: Iterable[str],
    known: Mapping[str, str],
    *,
    aliases: Mapping[str, str] | None = None,
    threshold: float = 90.0,
) -> list[str]:
    """Each name as the scope's existing entity it refers to, else cleaned; no repeats.

    ``known`` maps normalised names to display names (``MemoryGraph.subject_names``);
    names resolved in this call count as known for the names after them.
    """
    table = dict(known)
    alias = {normalize_subject(a): normalize_subject(b) for a, b in (aliases or {}).items()}
    alias.update({b: a for a, b in list(alias.items()) if b not in alias})
    out: list[str] = []
    choices = list(table)
    for raw in names:
        name = _clean(str(raw))
        key = normalize_subject(name)
        if not key:
            continue
        resolved = table.get(key)
        if resolved is None and key in alias and alias[key] in table:
            resolved = table[alias[key]]
        if resolved is None and len(key) >= 4 and choices:
            match = process.extractOne(key, choices, scorer=fuzz.ratio, score_cutoff=threshold)
            if match is not None:
                resolved = table[match[0]]
        if resolved is None:
            resolved = table[key] = name
            choices.append(key)
        if resolved not in out:
            out.append(resolved)
    return out
