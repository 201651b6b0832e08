"""The relation judge: an LLM decides how a new memory relates to its closest stored ones.

With an LLM configured, the lifecycle asks it about the closest candidates the rules
(`memtrellis.lifecycle.relate`) found, one of ``duplicate``, ``supports``,
``contradicts``, ``extends``, ``unrelated`` each (prompts in
`memtrellis.lifecycle.prompts`). A reply that cannot be read, or a failing call, leaves
the rules' verdicts in place; the failure is counted in `LLMRelationJudge.failures` and
logged. Not to be confused with extraction's quality judge, which drops memories their
messages do not support.

Examples:
    >>> from memtrellis.testing import ScriptedLLM
    >>> from memtrellis.types import MemoryItem, Scope
    >>> s = Scope(entity_id="u")
    >>> judge = llm_relation_judge(
    ...     ScriptedLLM(['{"relations": [{"index": 0, "relation": "contradicts"}]}']))
    >>> [r.kind.value for r in judge(MemoryItem(text="Ana is vegan", scope=s),
    ...      [Candidate(MemoryItem(text="Ana eats fish", scope=s), 0.7)])]
    ['contradicts']
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memtrellis.extraction.failures import call_with_timeout
from memtrellis.extraction.jsonload import load_json
from memtrellis.lifecycle.plan import Candidate
from memtrellis.lifecycle.prompts import (
    LIST_KEYS,
    NOT_REPLACING,
    RELATION_JUDGE_SCHEMA,
    RELATION_LABELS,
    build_relation_messages,
)
from memtrellis.lifecycle.relate import Relation, RelationKind
from memtrellis.llm import LLM, complete
from memtrellis.types import MemoryItem

__all__ = ["LLMRelationJudge", "build_relation_messages", "llm_relation_judge", "parse_relations"]

log = logging.getLogger("memtrellis.lifecycle")


def parse_relations(text: str, count: int) -> list[Relation | None]:
    """One relation per candidate from a reply (``None`` where it gave none or garbage).

    ``conflicts`` is a contradiction that does not supersede (``Relation.supersedes`` is
    ``False``: both memories are kept, linked by a ``contradicts`` edge).

    Examples:
        >>> [r.kind.value if r else None for r in parse_relations(
        ...     '{"relations": [{"index": 1, "relation": "conflict"}]}', 2)]
        [None, 'contradicts']
        >>> reply = '[{"relation": "conflicts"}, {"relation": "contradicts"}]'
        >>> [r.label for r in parse_relations(reply, 2) if r]
        ['contradicts', 'supersedes']
    """
    out: list[Relation | None] = [None] * count

    def accept(value: Any, how: str) -> bool:
        return isinstance(value, (dict, list))

    value = load_json(text, accept).value
    if isinstance(value, dict):
        value = next((value[k] for k in LIST_KEYS if isinstance(value.get(k), list)), [value])
    for position, entry in enumerate(value if isinstance(value, list) else []):
        if not isinstance(entry, dict):
            continue
        index = entry.get("index", position)
        label = str(entry.get("relation") or entry.get("label") or "").strip().casefold()
        kind = RELATION_LABELS.get(label)
        if isinstance(index, int) and 0 <= index < count and kind is not None:
            reason = str(entry.get("reason") or "")[:200]
            replaces = label not in NOT_REPLACING
            out[index] = Relation(RelationKind(kind), f"judge: {reason}".strip(), replaces)
    return out


class LLMRelationJudge:
    """A [`RelationJudge`][memtrellis.lifecycle.RelationJudge] backed by a chat model.

    ``failures`` counts calls that failed, hung past ``timeout`` or answered nothing
    usable (``Health.relation_judge_failures``).

    Examples:
        >>> from memtrellis.testing import ScriptedLLM
        >>> LLMRelationJudge(ScriptedLLM(["{}"]), timeout=5.0).failures
        0
    """

    def __init__(self, llm: LLM, *, timeout: float | None = None) -> None:
        self.llm = llm
        self.timeout = timeout
        self.failures = 0

    def __call__(
        self, new: MemoryItem, candidates: Sequence[Candidate]
    ) -> Sequence[Relation | None] | None:
        messages = build_relation_messages(new, [c.item for c in candidates])
        try:
            reply = call_with_timeout(
                lambda: complete(self.llm, messages, RELATION_JUDGE_SCHEMA), self.timeout
            )
        except Exception:  # a judge failure (or hang) must never lose the memory being stored
            self.failures += 1
            log.warning("relation judge failed; the rules decide", exc_info=True)
            return None
        verdicts = parse_relations(reply, len(candidates))
        if not any(verdicts):
            self.failures += 1
            log.warning("relation judge reply unreadable; the rules decide")
        return verdicts


def llm_relation_judge(llm: LLM, *, timeout: float | None = None) -> LLMRelationJudge:
    """A relation judge that asks ``llm`` (any object with ``complete(messages) -> str``).

    A call that has not answered after ``timeout`` seconds counts as a failure.

    Examples:
        >>> from memtrellis.testing import ScriptedLLM
        >>> llm_relation_judge(ScriptedLLM(["{}"])).timeout is None
        True
    """
    return LLMRelationJudge(llm, timeout=timeout)
