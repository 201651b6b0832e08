"""What the relation model reads of a pair of statements: one row of numbers.

The relation model (`memtrellis.lifecycle.relation_model`) decides whether a new
statement supersedes an old one where the rules (`memtrellis.lifecycle.relate`) are not
sure. It reads general properties of the pair, never words of a list written for a data
set:

* the rules' verdict and what they read of both claims (`memtrellis.lifecycle.claims`):
  the same subject, cues (final, change, current, additive), a past event, polarity,
  shared attribute classes, values replaced (`memtrellis.lifecycle.values`), the slot
  model's finding, whether anything is shared at all;
* how much of the old statement the new one keeps, and what each says that the other
  does not (its *difference*: the words of one missing from the other, CJK characters
  one by one): how long each difference is, whether both hold numbers or names (a value
  put for another), how close the two differences are in meaning;
* the embedder's cosine of the two statements and of their differences.

Examples:
    >>> difference("I live in Lisbon.", "I live in Porto now.")
    'lisbon'
    >>> difference("我住在上海。", "我住在北京。")
    '上 海'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from memtrellis.lifecycle.claims import SINGLE_VALUED, read_claim
from memtrellis.lifecycle.lexicon import _CJK
from memtrellis.lifecycle.overlap import content_units, shared_topic
from memtrellis.lifecycle.relate import Relation, _matched, _same_subject
from memtrellis.lifecycle.slots import slot_change
from memtrellis.lifecycle.values import changed_values, read_values
from memtrellis.types import MemoryItem

__all__ = ["FEATURES", "difference", "pair_row", "tokens"]

_WORD = re.compile(r"\w+")
_DIGIT = re.compile(r"\d|[零〇一二两三四五六七八九十百千万亿]")
_RULE_LABELS = ("duplicate", "supports", "supersedes", "contradicts", "extends", "unrelated")

#: The names of a row's numbers, in order (the model's weights are stored by name).
FEATURES: tuple[str, ...] = (
    *(f"rules_{label}" for label in _RULE_LABELS),
    "rules_sure",
    "same_subject",
    "final_cue",
    "change_cue",
    "current_cue",
    "additive_cue",
    "new_is_event",
    "old_is_event",
    "polarity_flipped",
    "chinese",
    "frame_kept_new",
    "frame_kept_old",
    "single_valued_class_shared",
    "class_shared",
    "values_only_new",
    "values_only_old",
    "values_equal",
    "value_replaced",
    "value_replaced_no_qualifier",
    "value_replaced_none_dropped",
    "new_has_values",
    "old_has_values",
    "value_kind_shared",
    "nothing_shared",
    "slot_change",
    "word_jaccard",
    "trigram_jaccard",
    "length_ratio",
    "new_words_unseen",
    "old_words_dropped",
    "content_jaccard",
    "old_content_kept",
    "difference_new_length",
    "difference_old_length",
    "digits_in_both_differences",
    "names_in_both_differences",
    "one_difference_empty",
    "cosine",
    "cosine_squared",
    "difference_cosine",
)


def tokens(text: str) -> list[str]:
    """Lower-cased words, CJK characters one by one.

    Examples:
        >>> tokens("Ana 住在 Porto")
        ['ana', '住', '在', 'porto']
    """
    out: list[str] = []
    for word in _WORD.findall(text.casefold()):
        out.extend(word) if _CJK.search(word) else out.append(word)
    return out


def difference(text: str, other: str) -> str:
    """The tokens of ``text`` that ``other`` lacks, in order, joined by spaces."""
    lacking = set(tokens(other))
    return " ".join(t for t in tokens(text) if t not in lacking)


def _trigrams(text: str) -> set[str]:
    flat = re.sub(r"\s+", " ", text.casefold())
    return {flat[i : i + 3] for i in range(max(1, len(flat) - 2))}


def _jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def _names(text: str, words: set[str]) -> bool:
    """Whether a capitalised word (not the first of the text) of ``text`` is in ``words``."""
    said = _WORD.findall(text)
    return any(w[:1].isupper() and w.casefold() in words for w in said[1:])


def pair_row(
    new: MemoryItem,
    old: MemoryItem,
    rules: Relation,
    cosine: float,
    difference_cosine: float,
) -> list[float]:
    """The features (`FEATURES`) of ``new`` said after ``old``, given the rules' verdict,
    the cosine of the two texts and the cosine of their differences (`difference`)."""
    row = [float(rules.label == label) for label in _RULE_LABELS]
    row.append(float(rules.sure))
    a, b = read_claim(new.text, new.entities), read_claim(old.text, old.entities)
    row += [
        float(_same_subject(a, b)),
        float(a.final),
        float(a.change),
        float(a.current),
        float(a.additive),
        float(a.event),
        float(b.event),
        float(a.negated != b.negated),
        float(a.chinese),
        _matched(a.frame, b.frame) / max(1, len(a.frame)),
        _matched(b.frame, a.frame) / max(1, len(b.frame)),
        float(bool(a.classes & b.classes & SINGLE_VALUED)),
        float(bool(a.classes & b.classes)),
        float(bool(a.values - b.values)),
        float(bool(b.values - a.values)),
        float(a.values == b.values),
    ]
    new_values, old_values = list(read_values(new.text)), list(read_values(old.text))
    replaced = changed_values(new_values, old_values)
    row += [
        float(replaced is not None),
        float(replaced is not None and replaced[1]),
        float(replaced is not None and replaced[2]),
        float(bool(new_values)),
        float(bool(old_values)),
        float(bool({v.kind for v in new_values} & {v.kind for v in old_values})),
        float(shared_topic(new.text, old.text, a, b, new.entities, old.entities) is None),
        float(slot_change(new.text, old.text, a, b) is not None),
    ]
    new_tokens, old_tokens = tokens(new.text), tokens(old.text)
    new_set, old_set = set(new_tokens), set(old_tokens)
    new_content, old_content = content_units(new.text), content_units(old.text)
    only_new, only_old = new_set - old_set, old_set - new_set
    row += [
        _jaccard(new_set, old_set),
        _jaccard(_trigrams(new.text), _trigrams(old.text)),
        math.log((1 + len(new_tokens)) / (1 + len(old_tokens))),
        len(only_new) / max(1, len(new_set)),
        len(only_old) / max(1, len(old_set)),
        _jaccard(new_content, old_content),
        len(new_content & old_content) / max(1, len(old_content)),
        math.log1p(len(only_new)),
        math.log1p(len(only_old)),
        float(any(_DIGIT.search(t) for t in only_new) and any(_DIGIT.search(t) for t in only_old)),
        float(_names(new.text, only_new) and _names(old.text, only_old)),
        float(not only_new or not only_old),
        cosine,
        cosine * cosine,
        difference_cosine,
    ]
    return row


def texts_to_embed(pairs: Sequence[tuple[MemoryItem, MemoryItem]]) -> list[str]:
    """For each (new, old) pair: its two texts and their two differences ("-" if empty)."""
    out: list[str] = []
    for new, old in pairs:
        out += [new.text, old.text]
        out += [difference(new.text, old.text) or "-", difference(old.text, new.text) or "-"]
    return out
