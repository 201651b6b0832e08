"""LoCoMo loading and evidence scoring, shared by the benchmark scripts.

Not a script: ``ingest.py``, ``fast_unit.py`` (and the LoCoMo benchmark of issue 4) import
it. The data is LoCoMo (snap-research/LoCoMo, CC BY-NC 4.0, evaluation only): it is read
from ``../shared/bench/`` beside the repository and never copied into the project.

What it gives:

* :func:`load_locomo` reads a file in the ``locomo10.json`` schema into
  :class:`Conversation` objects: per session the turns as message dicts ready for
  ``Memory.add`` (``role``, ``content`` with ``[shared image: <caption>]`` appended when the
  turn has a ``blip_caption``, ``id`` = dia_id, ``timestamp`` = the session date as ISO
  8601 UTC, ``speaker``), the questions with cleaned evidence, and the dataset's
  ``observation`` facts with their source dia_ids and session date.
* :func:`default_data_path` and :func:`data_path_or_none` (prints a clear message when the
  file is missing, so that scripts can exit 0).
* Scoring: :func:`recall_at_k` and :func:`recall_within_budget` (the fraction of a
  question's evidence dia_ids covered by the source message ids of the recalled
  memories), :func:`recall_within_budgets` (several budgets in one pass),
  :func:`render_line` and :func:`line_tokens` (its cached token count), and
  :func:`summarise` (mean per metric, overall and per category, in percent).

Example:
    >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    >>> clean_evidence(["D8:6; D9:17", "D:11:26", "D99:1"], {"D8:6", "D9:17", "D11:26"})
    ('D8:6', 'D9:17', 'D11:26')
"""

from __future__ import annotations

import functools
import json
import re
import statistics
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memtrellis.tokens import count_tokens

__all__ = [
    "CATEGORY_NAMES",
    "Conversation",
    "Observation",
    "Question",
    "Session",
    "clean_evidence",
    "code_version",
    "covered",
    "data_path_or_none",
    "default_data_path",
    "line_tokens",
    "load_locomo",
    "paired_bootstrap",
    "parse_session_date",
    "percentile",
    "recall_at_k",
    "recall_within_budget",
    "recall_within_budgets",
    "render_line",
    "repo_root",
    "results_dir",
    "source_ids",
    "summarise",
]

#: LoCoMo question categories, as ``../shared/bench/README.md`` names them.
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_BROKEN_DIA_ID = re.compile(r"D:(\d+):(\d+)")  # "D:11:26" means "D11:26"
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True)
class Session:
    """One LoCoMo session: its number, date and turns as message dicts."""

    number: int
    date: datetime
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class Question:
    """A question with its evidence dia_ids (cleaned; may be empty) and category."""

    conversation: str
    index: int
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Observation:
    """One of the dataset's extracted facts, with its source dia_ids and session date."""

    fact: str
    dia_ids: tuple[str, ...]
    date: datetime
    speaker: str
    session: int


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation (``sample_id`` such as ``conv-26``)."""

    sample_id: str
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question]
    observations: list[Observation] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Every turn of every session, in order."""
        return [message for session in self.sessions for message in session.messages]

    @property
    def dia_ids(self) -> set[str]:
        """The ids of all turns."""
        return {str(message["id"]) for message in self.messages}

    @property
    def scored_questions(self) -> list[Question]:
        """The questions with at least one valid evidence id (the ones a benchmark scores)."""
        return [q for q in self.questions if q.evidence]


def repo_root() -> Path:
    """The repository root (the parent of ``benchmarks/``)."""
    return Path(__file__).resolve().parent.parent


def results_dir() -> Path:
    """``benchmarks/results/``, created when missing."""
    path = repo_root() / "benchmarks" / "results"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_data_path() -> Path:
    """``../shared/bench/locomo10_dev.json`` relative to the repository root."""
    return (repo_root().parent / "shared" / "bench" / "locomo10_dev.json").resolve()


def data_path_or_none(path: str | Path | None) -> Path | None:
    """``path`` (default :func:`default_data_path`) when it is a file, else None.

    When the file is missing, a message saying so (and how to point at another copy) is
    printed; scripts then skip LoCoMo, or exit 0 when they need it.
    """
    candidate = Path(path) if path is not None else default_data_path()
    if candidate.is_file():
        return candidate
    print(
        f"LoCoMo data not found at {candidate}. It is evaluation data (CC BY-NC 4.0) kept "
        "outside the project in ../shared/bench/; pass --data PATH to a file in the "
        "locomo10.json schema.",
        file=sys.stderr,
    )
    return None


def parse_session_date(text: str) -> datetime:
    """Parse a LoCoMo session date such as ``"1:56 pm on 8 May, 2023"`` (read as UTC)."""
    parsed = datetime.strptime(" ".join(text.split()), _DATE_FORMAT)
    return parsed.replace(tzinfo=timezone.utc)


def clean_evidence(raw: Iterable[Any], known: set[str]) -> tuple[str, ...]:
    """Evidence ids split on ``;``, ``,`` and spaces, repaired, deduplicated, known only.

    ``"D:11:26"`` is repaired to ``"D11:26"``; an id that is not a turn of the
    conversation (or not an id at all, such as ``"D"``) is dropped. Order is kept.
    """
    out: dict[str, None] = {}
    for entry in raw:
        for token in re.split(r"[;,\s]+", str(entry)):
            token = _BROKEN_DIA_ID.sub(r"D\1:\2", token.strip())
            if _DIA_ID.fullmatch(token) and token in known:
                out.setdefault(token, None)
    return tuple(out)


def _message(turn: Mapping[str, Any], when: datetime) -> dict[str, Any]:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shared image: {str(caption).strip()}]".strip()
    return {
        "role": "user",
        "content": text,
        "id": str(turn["dia_id"]),
        "timestamp": when.isoformat(),
        "speaker": str(turn["speaker"]),
    }


def _sessions(conversation: Mapping[str, Any]) -> list[Session]:
    numbers = sorted(
        int(match.group(1))
        for key, value in conversation.items()
        if (match := _SESSION_KEY.fullmatch(key)) and isinstance(value, list)
    )
    sessions: list[Session] = []
    for number in numbers:
        when = parse_session_date(str(conversation[f"session_{number}_date_time"]))
        turns = conversation[f"session_{number}"]
        messages = [_message(turn, when) for turn in turns if str(turn.get("text") or "").strip()]
        sessions.append(Session(number=number, date=when, messages=messages))
    return sessions


def _observations(raw: Any, dates: Mapping[int, datetime], known: set[str]) -> list[Observation]:
    out: list[Observation] = []
    if not isinstance(raw, Mapping):
        return out
    for key, by_speaker in raw.items():
        match = re.fullmatch(r"session_(\d+)_observation", str(key))
        if match is None or not isinstance(by_speaker, Mapping):
            continue
        number = int(match.group(1))
        when = dates.get(number)
        if when is None:
            continue
        for speaker, facts in by_speaker.items():
            for entry in facts or []:
                if not isinstance(entry, Sequence) or len(entry) < 2 or not str(entry[0]).strip():
                    continue
                ids = entry[1] if isinstance(entry[1], list) else [entry[1]]
                out.append(
                    Observation(
                        fact=str(entry[0]).strip(),
                        dia_ids=clean_evidence(ids, known),
                        date=when,
                        speaker=str(speaker),
                        session=number,
                    )
                )
    return out


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo file (``locomo10.json`` schema) into conversations."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    conversations: list[Conversation] = []
    for sample in data:
        raw = sample["conversation"]
        sessions = _sessions(raw)
        known = {str(m["id"]) for s in sessions for m in s.messages}
        sample_id = str(sample["sample_id"])
        questions = [
            Question(
                conversation=sample_id,
                index=index,
                question=str(qa["question"]),
                answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                evidence=clean_evidence(qa.get("evidence") or [], known),
                category=int(qa["category"]),
            )
            for index, qa in enumerate(sample.get("qa") or [])
        ]
        dates = {s.number: s.date for s in sessions}
        conversations.append(
            Conversation(
                sample_id=sample_id,
                speakers=(str(raw.get("speaker_a", "")), str(raw.get("speaker_b", ""))),
                sessions=sessions,
                questions=questions,
                observations=_observations(sample.get("observation"), dates, known),
            )
        )
    return conversations


# -- scoring ------------------------------------------------------------------------------


def source_ids(memory: Any) -> set[str]:
    """The source message ids of a recalled memory (a ``MemoryItem``)."""
    return {s.message_id for s in memory.sources if s.message_id}


def covered(evidence: Sequence[str], memories: Iterable[Any]) -> float:
    """The fraction of ``evidence`` ids among the sources of ``memories`` (0..1)."""
    if not evidence:
        raise ValueError("a question without evidence cannot be scored")
    found: set[str] = set()
    for memory in memories:
        found |= source_ids(memory)
    return len(found.intersection(evidence)) / len(evidence)


def recall_at_k(evidence: Sequence[str], memories: Sequence[Any], k: int) -> float:
    """Evidence coverage of the first ``k`` recalled memories."""
    return covered(evidence, memories[:k])


def render_line(memory: Any) -> str:
    """A memory as one line of memory context: ``- text`` (line breaks become spaces)."""
    return "- " + " ".join(memory.text.split("\n")).strip()


@functools.lru_cache(maxsize=65536)
def _tokens_of_line(line: str) -> int:
    return count_tokens(line)


def line_tokens(memory: Any) -> int:
    """What a memory costs in memory context: its :func:`render_line` tokens plus one.

    The o200k_base count of the rendered line (cached by line text) and one token for
    the line break.
    """
    return _tokens_of_line(render_line(memory)) + 1


def recall_within_budget(
    evidence: Sequence[str], memories: Sequence[Any], budget: int
) -> tuple[float, int]:
    """Evidence coverage of the memories that fit in ``budget`` tokens, and tokens used.

    Memories are taken best first, each rendered by :func:`render_line` and costing its
    o200k_base tokens plus one for the line break, until the next one would exceed the
    budget (it is not skipped for a smaller one further down: the list stops there).
    """
    used = 0
    kept: list[Any] = []
    for memory in memories:
        cost = line_tokens(memory)
        if used + cost > budget:
            break
        used += cost
        kept.append(memory)
    return (covered(evidence, kept) if kept else 0.0), used


def recall_within_budgets(
    evidence: Sequence[str], memories: Sequence[Any], budgets: Sequence[int]
) -> dict[int, tuple[float, int, bool]]:
    """:func:`recall_within_budget` for several budgets in one pass over ``memories``.

    Returns ``{budget: (coverage, tokens used, exhausted)}``; ``exhausted`` is True when
    every memory fitted, i.e. a longer list might have filled the budget further (the
    figure is then limited by how many memories were asked for, not by the budget).
    """
    costs = [line_tokens(memory) for memory in memories]
    out: dict[int, tuple[float, int, bool]] = {}
    for budget in budgets:
        used = 0
        count = 0
        for cost in costs:
            if used + cost > budget:
                break
            used += cost
            count += 1
        kept = memories[:count]
        coverage = covered(evidence, kept) if kept else 0.0
        out[budget] = (coverage, used, count == len(memories))
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summarise(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> dict[str, Any]:
    """Mean of each metric in percent (1 decimal), overall and under ``by_category``.

    Each row holds the metrics (fractions 0..1, or plain numbers for metrics named
    ``tokens...``, which are averaged as they are) and ``category``.
    """

    def means(chosen: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(chosen)}
        for metric in metrics:
            values = [float(row[metric]) for row in chosen]
            scale = 1.0 if metric.startswith("tokens") else 100.0
            out[metric] = round(statistics.fmean(values) * scale, 1) if values else None
        return out

    summary = means(rows)
    summary["by_category"] = {
        CATEGORY_NAMES.get(cat, str(cat)): means([r for r in rows if r["category"] == cat])
        for cat in sorted({int(r["category"]) for r in rows})
    }
    return summary


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, samples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of ``a - b`` (per question, paired) and its bootstrap 95% interval.

    Returns ``(difference, low, high)`` in the units of the inputs.
    """
    import numpy as np

    if len(a) != len(b) or not a:
        raise ValueError("paired samples must be non-empty and of equal length")
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(diff), size=(samples, len(diff)))
    means = diff[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)


def code_version() -> dict[str, Any]:
    """The commit the library was measured at, and whether ``src/`` had local changes."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip()

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "src_dirty": bool(git("status", "--porcelain", "src")),
    }
