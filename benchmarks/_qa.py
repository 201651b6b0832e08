"""The QA benchmark's prompts, judge and scoring (``locomo_qa.py``); not a script.

* :func:`answer_messages`: the answer prompt, the same for every system; only the
  context block differs.
* :func:`judge_messages` and :func:`read_verdict`: the LLM judge (the J score of the Mem0
  and Zep papers: the share of answers a judge model calls correct against the gold
  answer). The wording is ours: generous on form (paraphrase, date format, extra
  detail), strict on content; a reply without a readable verdict counts as wrong and is
  counted apart.
* :func:`token_f1`: SQuAD-style token F1 of answer against gold, the no-LLM figure
  LoCoMo itself reports.
* :func:`pick_questions`: a deterministic spread over categories (round-robin in
  dataset order), so that a small ``--questions`` still samples every category.
* :func:`transcript_lines` and :func:`fit_latest`: the full-conversation baseline's
  transcript, cut to a token budget by keeping the most recent lines.

Example:
    >>> read_verdict('{"label": "CORRECT", "reason": "same city"}')
    'CORRECT'
    >>> read_verdict("The answer is wrong."), read_verdict("I cannot tell.")
    ('WRONG', None)
    >>> round(token_f1("in Porto, Portugal", "Porto"), 2)
    0.67
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from _locomo import Conversation, Question

__all__ = [
    "NOT_MENTIONED",
    "answer_messages",
    "fit_latest",
    "judge_messages",
    "pick_questions",
    "read_verdict",
    "token_f1",
    "transcript_lines",
]

NOT_MENTIONED = "Not mentioned"

_ANSWER_SYSTEM = (
    "You answer questions about a long conversation between {a} and {b}. Use only the "
    "information given below; it may be incomplete. Reply with a short answer: a name, a "
    "date, a number or a few words, no explanation. For questions about when something "
    "happened, work the date out from the dates shown. If the information does not "
    f"answer the question, reply: {NOT_MENTIONED}."
)

_JUDGE_SYSTEM = (
    "You grade answers to questions about a conversation. You are given the question, "
    "the reference answer and a candidate answer. The candidate is CORRECT when it "
    "states the same fact as the reference: other wording, a paraphrase, extra detail, "
    "or the same date written another way all count as correct. It is WRONG when it "
    "states a different fact, leaves out what the reference says, or says it does not "
    'know. Reply with JSON only: {"label": "CORRECT" or "WRONG", "reason": "<a few '
    'words>"}.'
)

_LABEL = re.compile(r'"?label"?\s*[:=]\s*"?\s*(CORRECT|WRONG|INCORRECT)', re.IGNORECASE)
_WORD = re.compile(r"\b(CORRECT|WRONG|INCORRECT)\b", re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def answer_messages(
    conversation: Conversation, context: str, question: str, *, context_name: str
) -> list[dict[str, str]]:
    """The answer prompt: ``context`` (what the system under test gives) and the question.

    ``context_name`` says what the block is (``"Memory context"``, ``"Conversation"``,
    ``"Retrieved messages"``).
    """
    a, b = conversation.speakers
    system = _ANSWER_SYSTEM.format(a=a or "two people", b=b or "someone else")
    body = context.strip() or "(nothing)"
    user = f"{context_name}:\n{body}\n\nQuestion: {question}\nShort answer:"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def judge_messages(question: str, gold: str, candidate: str) -> list[dict[str, str]]:
    """The judge prompt for one answer."""
    user = (
        f"Question: {question}\nReference answer: {gold}\n"
        f"Candidate answer: {candidate.strip() or '(empty)'}\nVerdict as JSON:"
    )
    return [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": user}]


def read_verdict(reply: str) -> str | None:
    """``"CORRECT"``, ``"WRONG"`` or ``None`` (no readable verdict) from a judge reply.

    The ``label`` field of the JSON when there is one (also in a broken object), else the
    one verdict word the reply uses; a reply naming both words without a label is
    unreadable.
    """
    try:
        data = json.loads(reply.strip().removeprefix("```json").strip("`\n "))
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("label"), str):
        label = data["label"].strip().upper()
    else:
        match = _LABEL.search(reply)
        if match:
            label = match.group(1).upper()
        else:
            words = {w.upper() for w in _WORD.findall(reply)}
            if len(words) != 1:
                return None
            label = words.pop()
    if label == "CORRECT":
        return "CORRECT"
    if label in ("WRONG", "INCORRECT"):
        return "WRONG"
    return None


def _normal_tokens(text: str) -> list[str]:
    text = text.lower().translate(str.maketrans("", "", string.punctuation))
    return _ARTICLES.sub(" ", text).split()


def token_f1(prediction: str, gold: str) -> float:
    """Token F1 (lower-cased, punctuation and articles removed) of ``prediction``."""
    ours, theirs = _normal_tokens(prediction), _normal_tokens(str(gold))
    if not ours or not theirs:
        return float(ours == theirs)
    common = sum((Counter(ours) & Counter(theirs)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(ours), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def pick_questions(
    conversation: Conversation, limit: int | None, categories: Sequence[int]
) -> list[Question]:
    """Up to ``limit`` questions of ``categories``, taken round-robin over the categories
    in dataset order (all of them when ``limit`` is None)."""
    chosen = [q for q in conversation.questions if q.category in categories and q.answer]
    if limit is None or limit >= len(chosen):
        return chosen
    queues: dict[int, list[Question]] = {}
    for question in chosen:
        queues.setdefault(question.category, []).append(question)
    picked: list[Question] = []
    while len(picked) < limit:
        for category in sorted(queues):
            if queues[category] and len(picked) < limit:
                picked.append(queues[category].pop(0))
    return sorted(picked, key=lambda q: q.index)


def transcript_lines(conversation: Conversation) -> list[tuple[str, str | None]]:
    """The whole conversation as text lines, each with its turn's dia_id: a header per
    session (its date; no id), then ``Speaker: text`` per turn."""
    lines: list[tuple[str, str | None]] = []
    for session in conversation.sessions:
        lines.append((f"[Session {session.number}, {session.date:%d %B %Y, %H:%M}]", None))
        lines.extend((f"{m['speaker']}: {m['content']}", str(m["id"])) for m in session.messages)
    return lines


def fit_latest(
    lines: Sequence[str], budget: int, count: Callable[[str], int]
) -> tuple[list[str], int, int]:
    """The most recent ``lines`` whose tokens (``count`` of each, plus one for the line
    break) fit ``budget``; returns them in order, their tokens and how many were left out.
    """
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = count(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    kept.reverse()
    return kept, used, len(lines) - len(kept)


def mean(values: Sequence[float]) -> float | None:
    """The mean, ``None`` of nothing."""
    return sum(values) / len(values) if values else None


def as_percent(value: Any) -> str:
    """``"12.3"``, or ``"–"`` for None."""
    return "–" if value is None else f"{100.0 * float(value):.1f}"
