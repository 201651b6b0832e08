"""Seeded perturbations of LoCoMo conversations, for ``robustness.py`` and ``fast_unit.py``.

Not a script. Each function returns a new :class:`_locomo.Conversation`; the evidence
stays scorable:

* :func:`with_typos`: a share of the words of every turn and question (4 letters or
  more) get one typo each: two letters swapped, one dropped, one doubled, or one
  replaced by a neighbour on a QWERTY keyboard.
* :func:`split_into_bursts`: every turn of more than one sentence is sent as a burst of
  up to ``pieces`` messages (cut at sentence ends, then commas), seconds apart, the way
  people type in a chat app. The first piece keeps the turn's dia_id; the others get
  ``<dia_id>~<n>``, which :func:`base_id` maps back, so a memory holding any piece of an
  evidence turn counts for it.
* :func:`shuffle_sessions`: the sessions' dates are permuted (session 3 may now come
  first) and the sessions are ingested in their new order of time; turns keep their
  text, so the questions' own time words no longer line up with the timestamps.
* :func:`with_chatter`: short reactions ("lol same", "omg yes!!", "wait what") are
  slipped in after a share of the turns, by the other speaker (a reply) or by the same
  one (a burst), as people react in a chat app. They are never evidence: their ids
  (``R<n>:<dia_id>``) match no dia_id, so a recall that spends its top k or its budget
  on them loses recall, and the turn an answer is next to is no longer its neighbour.

Example:
    >>> import random
    >>> typo("conversation", random.Random(1)) != "conversation"
    True
    >>> base_id("D1:3~2"), base_id("D1:3")
    ('D1:3', 'D1:3')
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from _locomo import Conversation, Session

__all__ = [
    "Mapped",
    "base_id",
    "shuffle_sessions",
    "split_into_bursts",
    "typo",
    "with_chatter",
    "with_typos",
]

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _near(row: int, col: int) -> str:
    keys = [_ROWS[row][c] for c in (col - 1, col + 1) if 0 <= c < len(_ROWS[row])]
    keys += [_ROWS[r][col] for r in (row - 1, row + 1) if 0 <= r < 3 and col < len(_ROWS[r])]
    return "".join(keys)


_NEIGHBOURS = {key: _near(r, c) for r, row in enumerate(_ROWS) for c, key in enumerate(row)}
_WORD = re.compile(r"[A-Za-z]{4,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def typo(word: str, rng: random.Random) -> str:
    """``word`` with one typo (swap, drop, double or a neighbouring key)."""
    i = rng.randrange(1, len(word) - 1) if len(word) > 2 else 0
    kind = rng.randrange(4)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :] if i + 1 < len(word) else word
    if kind == 1:
        return word[:i] + word[i + 1 :]
    if kind == 2:
        return word[:i] + word[i] + word[i:]
    key = word[i].lower()
    near = _NEIGHBOURS.get(key)
    if not near:
        return word[:i] + word[i + 1 :]
    swap = rng.choice(near)
    return word[:i] + (swap.upper() if word[i].isupper() else swap) + word[i + 1 :]


def _typos(text: str, rng: random.Random, rate: float) -> str:
    return _WORD.sub(lambda m: typo(m.group(0), rng) if rng.random() < rate else m.group(0), text)


def with_typos(conv: Conversation, seed: int, rate: float = 0.15) -> Conversation:
    """Typos in ``rate`` of the longer words of every turn and every question."""
    rng = random.Random(f"{seed}:{conv.sample_id}:typos")
    sessions = [
        replace(
            s, messages=[{**m, "content": _typos(str(m["content"]), rng, rate)} for m in s.messages]
        )
        for s in conv.sessions
    ]
    questions = [replace(q, question=_typos(q.question, rng, rate)) for q in conv.questions]
    return replace(conv, sessions=sessions, questions=questions)


def _pieces(text: str, most: int, rng: random.Random) -> list[str]:
    parts = [p for p in _SENTENCE.split(text) if p.strip()]
    if len(parts) < 2:
        parts = [p.strip() for p in re.split(r"(?<=,)\s+", text) if p.strip()]
    if len(parts) < 2:
        return [text]
    count = min(len(parts), rng.randint(2, most))
    cuts = sorted(rng.sample(range(1, len(parts)), count - 1))
    bounds = [0, *cuts, len(parts)]
    return [" ".join(parts[a:b]) for a, b in itertools.pairwise(bounds)]


def split_into_bursts(conv: Conversation, seed: int, pieces: int = 3) -> Conversation:
    """Every longer turn sent as a burst of up to ``pieces`` messages, seconds apart."""
    rng = random.Random(f"{seed}:{conv.sample_id}:bursts")
    sessions: list[Session] = []
    for session in conv.sessions:
        messages: list[dict[str, Any]] = []
        clock = session.date
        for message in session.messages:
            for n, piece in enumerate(_pieces(str(message["content"]), pieces, rng)):
                clock += timedelta(seconds=rng.randint(5, 40))
                ident = str(message["id"]) if n == 0 else f"{message['id']}~{n}"
                messages.append(
                    {**message, "content": piece, "id": ident, "timestamp": clock.isoformat()}
                )
        sessions.append(replace(session, messages=messages))
    return replace(conv, sessions=sessions)


def shuffle_sessions(conv: Conversation, seed: int) -> Conversation:
    """The sessions' dates permuted; sessions then come in their new order of time."""
    rng = random.Random(f"{seed}:{conv.sample_id}:shuffle")
    dates: list[datetime] = [s.date for s in conv.sessions]
    rng.shuffle(dates)
    sessions = [
        replace(
            s,
            date=when,
            messages=[{**m, "timestamp": when.isoformat()} for m in s.messages],
        )
        for s, when in zip(conv.sessions, dates, strict=True)
    ]
    sessions.sort(key=lambda s: s.date)
    return replace(conv, sessions=sessions)


#: Reactions with next to no content, as chat apps are full of (none names a topic).
REACTIONS = (
    "lol",
    "lol same",
    "haha",
    "hahaha yes",
    "omg",
    "omg yes!!",
    "wait what",
    "no way",
    "ikr",
    "same",
    "true",
    "yeah",
    "yep",
    "ok",
    "okk",
    "hmm",
    "aww",
    "nice!",
    "wow",
    "damn",
    "right??",
    "for real",
    "oh nice",
    "love that",
    "so cute",
    "ha ok",
    "brb",
    "ya",
    "totally",
    "mhm",
)


def with_chatter(conv: Conversation, seed: int, rate: float = 0.4) -> Conversation:
    """Reactions after ``rate`` of the turns, each time one of three shapes: the same
    speaker adds one (it joins that speaker's burst), the other speaker reacts (it joins
    their next message), or the two trade reactions ("omg" / "ikr"), which stand between
    the turn and its reply as messages of their own."""
    rng = random.Random(f"{seed}:{conv.sample_id}:chatter")
    first, second = conv.speakers
    sessions: list[Session] = []
    count = 0
    for session in conv.sessions:
        messages: list[dict[str, Any]] = []
        for message in session.messages:
            messages.append(message)
            if rng.random() >= rate:
                continue
            speaker = str(message.get("speaker", ""))
            other = second if speaker == first else first
            shape = rng.randrange(3)
            voices = [speaker] if shape == 0 else [other] if shape == 1 else [other, speaker]
            for voice in voices:
                count += 1
                messages.append(
                    {
                        **message,
                        "content": rng.choice(REACTIONS),
                        "id": f"R{count}:{message['id']}",
                        "speaker": voice,
                    }
                )
        sessions.append(replace(session, messages=messages))
    return replace(conv, sessions=sessions)


def base_id(message_id: str) -> str:
    """The dia_id a (possibly split) message came from."""
    return message_id.split("~", 1)[0]


class _Source:
    __slots__ = ("message_id",)

    def __init__(self, message_id: str | None) -> None:
        self.message_id = message_id


class Mapped:
    """A recalled memory (or a baseline's hit) with its source ids mapped to dia_ids:
    what the evidence scoring of ``_locomo`` reads (``text`` and ``sources``)."""

    __slots__ = ("sources", "text")

    def __init__(self, hit: Any) -> None:
        self.text = hit.text
        self.sources = [
            _Source(base_id(s.message_id) if s.message_id else None) for s in hit.sources
        ]
