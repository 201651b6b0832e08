"""The memory lifecycle: entities, dedup, contradiction and supersession, confidence, decay.

[`plan_additions`][memtrellis.lifecycle.plan_additions] decides what storing new memories does to
the graph, by rules (`relate`) and, with an LLM, the relation judge
(`memtrellis.lifecycle.relation_judge`, its prompts in `memtrellis.lifecycle.prompts`);
`confidence` scores memories at recall time.
"""

from memtrellis.lifecycle.config import DEFAULT_VALIDITY, LifecycleConfig
from memtrellis.lifecycle.plan import Outcome, Plan, RelationJudge, plan_additions, store_additions
from memtrellis.lifecycle.relate import Relation, RelationKind, relate

__all__ = [
    "DEFAULT_VALIDITY",
    "LifecycleConfig",
    "Outcome",
    "Plan",
    "Relation",
    "RelationJudge",
    "RelationKind",
    "plan_additions",
    "relate",
    "store_additions",
]
