"""Deprecated: the lifecycle's judge is the relation judge, `memtrellis.lifecycle.relation_judge`.

Every old name still works and warns (``DeprecationWarning``).
"""

from __future__ import annotations

from memtrellis._deprecated import module_aliases

_NEW = "memtrellis.lifecycle.relation_judge"
_PROMPTS = "memtrellis.lifecycle.prompts"
__getattr__ = module_aliases(
    __name__,
    {
        "LLMJudge": f"{_NEW}:LLMRelationJudge",
        "llm_judge": f"{_NEW}:llm_relation_judge",
        "parse_relations": f"{_NEW}:parse_relations",
        "build_relation_messages": f"{_PROMPTS}:build_relation_messages",
        "JUDGE_SCHEMA": f"{_PROMPTS}:RELATION_JUDGE_SCHEMA",
        "SYSTEM_EN": f"{_PROMPTS}:SYSTEM_EN",
        "SYSTEM_ZH": f"{_PROMPTS}:SYSTEM_ZH",
    },
)
