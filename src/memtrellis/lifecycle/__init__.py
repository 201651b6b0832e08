"""The memory lifecycle: entities, dedup, contradiction and supersession, confidence, decay.

[`plan_additions`][memtrellis.lifecycle.plan_additions] decides what storing new memories does to
the graph; `confidence` scores memories at recall time.
"""

from memtrellis.lifecycle.config import DEFAULT_VALIDITY, LifecycleConfig
from memtrellis.lifecycle.plan import Outcome, Plan, plan_additions, store_additions
from memtrellis.lifecycle.relate import Relation, RelationKind, relate

__all__ = [
    "DEFAULT_VALIDITY",
    "LifecycleConfig",
    "Outcome",
    "Plan",
    "Relation",
    "RelationKind",
    "plan_additions",
    "relate",
    "store_additions",
]
