"""The slot model of `memtrellis.lifecycle.slots` for Chinese statements.

Chinese has no spaces to find words by, so two statements are compared character by
character (``difflib``) once their typed values (`memtrellis.lifecycle.values`), cue
words, the speaker (``我...``), ``一``-with-a-classifier, modal verbs and function
characters are left out: what stays says which attribute. The new statement gives
another value of the old one's slot when

* all of the old one's characters are kept and a value of the same kind and unit
  changed, with nothing added, or given as a change's target (``推迟到``, ``调整为``,
  ``扩到了``) or with a cue;
* it says by how much (``砍了一半``);
* one block of the same characters was replaced in the predicate (after a copula topic,
  or between kept characters) and a cue or ``已经...了`` says it changed;
* the same characters have the polarity turned with a change marker (``不...了``).

A modifier before the shared characters (``返程航班`` / ``航班``) is another subject.

Examples:
    >>> from memtrellis.lifecycle.claims import read_claim
    >>> from memtrellis.lifecycle.values import read_values
    >>> old, new = "健身房每晚十点关门。", "健身房改到每晚十一点关门了。"
    >>> a, b = read_claim(new), read_claim(old)
    >>> chinese_change(new, old, a, b, list(read_values(new)), list(read_values(old)))
    ('time changed to 每晚十一点', True)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from memtrellis.lifecycle.claims import Claim
from memtrellis.lifecycle.lexicon import _CHANGE_ZH, _CURRENT_ZH, _FINAL_ZH, _ZH_FUNCTION
from memtrellis.lifecycle.values import CHANGE_TARGET, Value, changed_values, read_values

__all__ = ["chinese_change"]

#: A verdict: why, and whether the rules see no room for doubt.
Verdict = tuple[str, bool]

# "a" with its classifier (一台, 一家), modal verbs (可以, 能): not what a slot is about.
_ZH_ARTICLE = re.compile(r"[一这那][个名位台只条本张辆家次间套件部块层所座支双对]|可以|能够|能|会")
_ZH_NOT = re.compile(r"[不没沒未无無非别]")
_DONE_ZH = re.compile(r"已经?[^，。！？]*了|已[\u4e00-\u9fff]")
# "cut by 30%", "cut in half"
_ZH_DELTA_LEAD = re.compile(r"[了掉]\s*$")
_ZH_SPEAKER = re.compile(r"^(?:我们|我家|我的|我)")
_SPEAKER_ONLY = frozenset({"@speaker"})


def _zh_content(text: str, values: Iterable[Value]) -> str:
    """The characters that say which attribute: values, cues and function characters out."""
    chars = list(text)
    for value in values:
        for n in range(value.start, value.end):
            chars[n] = " "
    said = "".join(chars)
    for pattern in (_FINAL_ZH, _CHANGE_ZH, _CURRENT_ZH):
        said = pattern.sub(" ", said)
    said = _ZH_SPEAKER.sub("", said.strip())
    said = _ZH_ARTICLE.sub(" ", said)
    return "".join(_ZH_FUNCTION.sub(" ", said).split())


def _zh_target(text: str, value: Value) -> bool:
    before = text[max(0, value.start - 4) : value.start]
    return (
        bool(re.search(r"(?:到了?|至|为|成|到每\w?|为每\w?)$", before))
        or value.lead in CHANGE_TARGET
    )


def chinese_change(
    new: str, old: str, a: Claim, b: Claim, va: list[Value], vb: list[Value]
) -> Verdict | None:
    content_a = _zh_content(new, read_values(new))
    content_b = _zh_content(old, read_values(old))
    if not content_a or not content_b:
        return None
    matcher = difflib.SequenceMatcher(a=content_b, b=content_a, autojunk=False)
    blocks = matcher.get_opcodes()
    kept = sum(i2 - i1 for tag, i1, i2, _, _ in blocks if tag == "equal")
    # A modifier before the shared words is another subject: 返程航班 / 航班.
    # (The speaker's own statements start at the predicate: ``我...`` is left out.)
    speaker = a.subject == _SPEAKER_ONLY and b.subject == _SPEAKER_ONLY
    prefixed = (
        not speaker
        and bool(blocks)
        and blocks[0][0] in ("insert", "replace")
        and blocks[0][4] - blocks[0][3] >= 1
    )
    if prefixed and blocks[0][0] == "replace":
        return None
    if prefixed and not re.match(
        r"^(?:开发商|公司|老板|领导|他们|对方|学校|医院)?说?$", content_a[: blocks[0][4]]
    ):
        return None
    cued = a.final or a.change or a.current
    if a.negated != b.negated:
        # The same words, the polarity turned, said to be a change (``不...了``, ``不再``,
        # ``已经...了``): "这条路可以通行" / "这条路不能通行了".
        plain_a, plain_b = (_ZH_NOT.sub("", c) for c in (content_a, content_b))
        if plain_a == plain_b and (cued or _DONE_ZH.search(new)):
            return "negated now", False
        return None
    change = changed_values(va, vb)
    if change is not None:
        values, no_qualifier, none_dropped = change
        value = values[0]
        whole = kept >= len(content_b) and kept >= 2
        targeted = any(_zh_target(new, v) for v in values)
        extra = len(content_a) - kept
        if whole and not extra and no_qualifier and (none_dropped or cued):
            return f"{value.kind} changed to {value.text}", True
        if whole and (targeted or cued) and (no_qualifier or cued):
            return f"{value.kind} changed to {value.text}", False
    if vb and kept >= len(content_b) and kept >= 2:
        for value in va:
            if value.kind == "percent" and _ZH_DELTA_LEAD.search(new[: value.start]):
                return "changed by " + value.text, False
    # One block of the same characters replaced, said to be a change (现在, 换, 已经...了).
    changes = [op for op in blocks if op[0] != "equal"]
    if len(changes) == 1 and changes[0][0] == "replace" and kept >= 2:
        _, i1, i2, j1, j2 = changes[0]
        # In the predicate: after the whole topic (``这个账号是正常的``), or between kept
        # words (``在华为做测试`` / ``在小米做测试``); not the topic's own words
        # (``项目上线日期`` / ``项目预算``).
        topic = _ZH_FUNCTION.sub("", b.topic or "")
        speaker = b.subject == _SPEAKER_ONLY and a.subject == _SPEAKER_ONLY
        inside = (i1 > 0 or speaker) and i2 < len(content_b)
        after_topic = (
            bool(topic)
            and i1 >= len(topic)
            and content_b.startswith(topic)
            and bool(re.search(rf"{re.escape(b.topic or '')}\s*(?:是|为)", old))
        )
        if (
            (inside or after_topic)
            and i2 - i1 <= 4
            and j2 - j1 <= 5
            and (cued or _DONE_ZH.search(new))
        ):
            return f"{content_b[i1:i2]!r} is now {content_a[j1:j2]!r}", False
    return None
