"""A tiny conversation in the LoCoMo schema (``locomo10.json``), written for the QA
benchmark's tests: two sessions, five turns, three questions with evidence and one
adversarial question (category 5, left out by default)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSIONS = {
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Mira", "dia_id": "D1:1", "text": "I moved to Porto last week!"},
        {"speaker": "Joao", "dia_id": "D1:2", "text": "Nice! Which part of town?"},
        {"speaker": "Mira", "dia_id": "D1:3", "text": "Near the river, by the old bridge."},
    ],
    "session_2_date_time": "10:00 am on 20 May, 2023",
    "session_2": [
        {"speaker": "Joao", "dia_id": "D2:1", "text": "I adopted a cat called Figo."},
        {"speaker": "Mira", "dia_id": "D2:2", "text": "Figo is a great name for a cat."},
    ],
}
QA = [
    {"question": "Where did Mira move?", "answer": "Porto", "evidence": ["D1:1"], "category": 4},
    {
        "question": "What is Joao's cat called?",
        "answer": "Figo",
        "evidence": ["D2:1"],
        "category": 4,
    },
    {"question": "When did Mira move?", "answer": "May 2023", "evidence": ["D1:1"], "category": 2},
    {"question": "Is Mira a pilot?", "adversarial_answer": "no", "evidence": [], "category": 5},
]


def write_tiny_locomo(path: Path) -> Path:
    """Write the conversation to ``path`` (a list of one sample); returns ``path``."""
    conversation: dict[str, Any] = {"speaker_a": "Mira", "speaker_b": "Joao", **SESSIONS}
    sample = {"sample_id": "conv-t", "conversation": conversation, "qa": QA}
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path
