"""Chinese or English: which prompt templates a window gets.

The decision is the share of Han characters among all letters, counted after removing
what says nothing about the language the people wrote in: role prefixes, ISO
timestamps, URLs, email addresses, ``[message-id]`` brackets, UUIDs and other
id-like tokens (runs of ASCII letters, digits and ``_:./-`` that contain a digit).

Threshold (`CJK_THRESHOLD` = 0.25): an English word averages about 4.5 letters
while a Chinese word averages about 1.5 characters, so one Han character stands for
roughly three Latin letters. A share of 0.25 is therefore reached when about as many
words are Chinese as English, i.e. when Chinese is about half of what was said or more.
Chinese chat full of English product names still gets the Chinese prompt ("我在用
LangChain 和 Chroma 做记忆" scores 0.32), while English that names a person or a place
in Chinese characters stays English ("I met 王小明 in Beijing" scores 0.19).

Examples:
    >>> detect_language("I moved to Lyon last spring").value
    'en'
    >>> detect_language("我上个月搬到了里昂，see https://example.com/a1b2").value
    'zh'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memtrellis.extraction.model import Language, Turn

__all__ = [
    "CJK_THRESHOLD",
    "cjk_counts",
    "cjk_share",
    "detect_language",
    "detect_window_language",
    "has_cjk",
    "language_of",
]

#: Han share of counted letters at or above which text is taken as Chinese.
CJK_THRESHOLD = 0.25

_NOISE = re.compile(
    "|".join(
        [
            r"(?:https?|ftp)://\S+|www\.\S+",  # URLs
            # email addresses; matched from the start of a run only, which keeps a long
            # run without "@" linear instead of rescanned from each of its characters
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
            # ISO dates and timestamps: 2026-03-01, 2026-03-01T10:00:00.5Z, +08:00 offsets
            r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?"
            r"(?:Z|[+-]\d{2}:?\d{2})?",
            r"\[[^\s\[\]]{1,120}\]",  # [message-id]
            # role prefixes at a line start, and "(user)" as render_turn writes it
            r"(?im:^[ \t]*(?:user|assistant|system|tool|human|ai|bot)[ \t]*[:：])",
            r"(?i:\((?:user|assistant|system|tool)\))",
        ]
    )
)
# Id-like runs hold a digit. Matching starts only at the beginning of a run (lookbehind)
# and the part before the first digit cannot hold one, so a long run is scanned once.
_ID_LIKE = re.compile(r"(?<![A-Za-z0-9_:./\-])[A-Za-z_:./\-]*[0-9][A-Za-z0-9_:./\-]*")
_HAN = re.compile(
    "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef\U00030000-\U0003134f]"
)


# Han, kana and hangul: the scripts an English-only embedder cannot read.
_CJK_SCRIPT = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]"
)


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Chinese, Japanese or Korean character.

    Examples:
        >>> has_cjk("我在深圳"), has_cjk("こんにちは"), has_cjk("안녕"), has_cjk("Zürich café")
        (True, True, True, False)
    """
    return _CJK_SCRIPT.search(text) is not None


def _strip_noise(text: str) -> str:
    return _ID_LIKE.sub(" ", _NOISE.sub(" ", text))


def cjk_counts(text: str) -> tuple[int, int]:
    """Han characters and all letters of ``text`` after removing ids, URLs and the like.

    Examples:
        >>> cjk_counts("[msg-1a2b] 2026-03-01 10:00 Alice (user): 好 ok")
        (1, 8)
    """
    cleaned = _strip_noise(text)
    return len(_HAN.findall(cleaned)), sum(map(str.isalpha, cleaned))


def cjk_share(text: str) -> float:
    """Han characters as a share of the letters left after removing ids, URLs and the like.

    Returns 0.0 when no letters are left.

    Examples:
        >>> cjk_share("[msg-1a2b] 2026-03-01 10:00 用户 (user): 好")
        1.0
        >>> cjk_share("1234 5678")
        0.0
    """
    han, letters = cjk_counts(text)
    return han / letters if letters else 0.0


def language_of(han: int, letters: int) -> Language:
    """The language for counts from `cjk_counts` (summed over several texts).

    Examples:
        >>> language_of(1, 4).value, language_of(1, 5).value, language_of(0, 0).value
        ('zh', 'en', 'en')
    """
    return Language.ZH if letters and han >= CJK_THRESHOLD * letters else Language.EN


def detect_language(text: str) -> Language:
    """``Language.ZH`` when the Han share of ``text`` is at least `CJK_THRESHOLD`.

    Text without any letters (numbers, ids, an empty string) is English.

    Examples:
        >>> detect_language("").value, detect_language("我在用 LangChain 和 Chroma 做记忆").value
        ('en', 'zh')
    """
    return language_of(*cjk_counts(text))


def detect_window_language(items: Iterable[Turn | str]) -> Language:
    """The language of several turns or texts taken together (their contents only).

    Examples:
        >>> from datetime import datetime, timezone
        >>> when = datetime(2026, 3, 1, tzinfo=timezone.utc)
        >>> turns = [Turn(0, 0, "user", "我想喝茶", "m1", when), "好的"]
        >>> detect_window_language(turns).value
        'zh'
    """
    han = letters = 0
    for item in items:
        item_han, item_letters = cjk_counts(item.content if isinstance(item, Turn) else item)
        han += item_han
        letters += item_letters
    return language_of(han, letters)
