"""An application's own words in the fine-mode extraction prompt.

[`ExtractionConfig`][memtrellis.ExtractionConfig] takes either or both:

* ``instructions``: text appended to the built-in system prompt, under a heading that
  says it comes from the application ("Only remember what matters for cooking.");
* ``prompt``: a whole system prompt of the application's own in place of the built-in
  one. It must hold the ``{reply_format}`` placeholder, where memtrellis writes how each
  memory is to be written and the JSON object to reply with (so that the reply can still
  be parsed and every memory keeps its sources); any other ``{...}`` is an error, and
  literal braces are doubled (``{{`` and ``}}``), as in `str.format`.

The user message (the window's time span, the ids it may cite, and its text fenced as
data) stays the built-in one either way.

Examples:
    >>> from memtrellis.extraction.model import Language
    >>> text = system_prompt(Language.EN, prompt="Keep recipes only.\\n{reply_format}",
    ...                      instructions="Ignore the weather.")
    >>> text.startswith("Keep recipes only."), '"source_ids"' in text, text.endswith("weather.")
    (True, True, True)
"""

from __future__ import annotations

import string

from memtrellis.errors import InvalidInputError
from memtrellis.extraction.model import Language
from memtrellis.extraction.prompts.extract import SYSTEM_EN, SYSTEM_ZH

__all__ = ["REPLY_FORMAT_PLACEHOLDER", "check_prompt", "system_prompt"]

#: The placeholder a custom ``prompt`` must hold.
REPLY_FORMAT_PLACEHOLDER = "reply_format"


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end)].strip()


# The built-in prompts' own description of the answer: from how to write each memory to
# the JSON object to reply with (not their worked example).
_REPLY_FORMAT = {
    Language.EN: _between(SYSTEM_EN, "Write each memory like this:", "Example. Messages:"),
    Language.ZH: _between(SYSTEM_ZH, "每条记忆的写法：", "示例。消息："),
}
_HEADING = {
    Language.EN: "Instructions of the application that keeps these memories (they add to or "
    "narrow the rules above; the reply format stays as described):",
    Language.ZH: "使用这些记忆的应用的补充说明（在以上规则的基础上补充或收窄；回复格式不变）：",
}


def check_prompt(prompt: str) -> str:
    """``prompt`` if it is a usable template; else a clear `InvalidInputError`.

    Examples:
        >>> check_prompt("Remember recipes.")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        memtrellis.errors.InvalidInputError: prompt must contain the {reply_format} placeholder...
    """
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None]
    except ValueError as exc:
        raise InvalidInputError(
            f"prompt is not a valid template ({exc}); write literal braces as {{{{ and }}}}"
        ) from None
    unknown = sorted({name for name in fields if name != REPLY_FORMAT_PLACEHOLDER})
    if unknown:
        raise InvalidInputError(
            f"prompt has unknown placeholders {unknown}: only {{reply_format}} is filled in; "
            "write literal braces as {{ and }}"
        )
    if REPLY_FORMAT_PLACEHOLDER not in fields:
        raise InvalidInputError(
            "prompt must contain the {reply_format} placeholder, "
            "where memtrellis writes the reply format"
        )
    return prompt


def system_prompt(
    language: Language, *, prompt: str | None = None, instructions: str | None = None
) -> str:
    """The extraction system prompt for ``language`` with the application's own words.

    Examples:
        >>> system_prompt(Language.EN) == SYSTEM_EN
        True
    """
    if prompt is not None:
        text = prompt.format(reply_format=_REPLY_FORMAT[language])
    else:
        text = SYSTEM_ZH if language is Language.ZH else SYSTEM_EN
    if instructions:
        text = f"{text.rstrip()}\n\n{_HEADING[language]}\n{instructions.strip()}"
    return text
