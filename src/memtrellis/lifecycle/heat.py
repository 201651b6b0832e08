"""Heat renews validity: a memory recalled often, while it holds, stays valid longer.

A memory of a kind with a default validity (a ``state`` 2 hours, a ``decision`` 365
days, a ``prediction`` 90 days) ends when its span runs out, however much it is used.
The rule here keeps what is in use alive, within bounds:

* only a memory that is valid at the recall (not superseded, not expired, not yet to
  come) and whose end is its kind's default one, or one heat already moved: an end it
  was given (a trip's last day, a deadline) stands, and a kind without a default
  validity (``action_item``, ``fact``...) has nothing to renew;
* only once it has been recalled ``heat_min_recalls`` times (this recall included);
* each such recall moves the end to ``heat_renewal`` of the kind's span after the
  recall, never earlier than it was and never past ``heat_validity_cap`` spans after
  its default end: a memory recalled every day for years still ends.

The reader decides the new ends (it has the `LifecycleConfig`); the store applies and
logs them with the recall counts (the ``touch`` record), guarded so that a memory
superseded or forgotten meanwhile is never brought back, and replays them on restart.

Examples:
    >>> from datetime import datetime, timedelta, timezone
    >>> from memtrellis.lifecycle import LifecycleConfig
    >>> from memtrellis.types import MemoryItem, MemoryType, Scope
    >>> t0 = datetime(2026, 1, 1, 9, tzinfo=timezone.utc)
    >>> item = MemoryItem(text="Ana is at the airport", memory_type=MemoryType.STATE,
    ...                   scope=Scope(entity_id="ana"), created_at=t0,
    ...                   valid_until=t0 + timedelta(hours=2), recall_count=2)
    >>> renewed_until(item, t0 + timedelta(hours=1, minutes=30), LifecycleConfig())
    datetime.datetime(2026, 1, 1, 11, 30, tzinfo=datetime.timezone.utc)
"""

from __future__ import annotations

from datetime import datetime

from memtrellis.lifecycle.config import LifecycleConfig
from memtrellis.types import MemoryItem

__all__ = ["renewed_until"]


def renewed_until(item: MemoryItem, at: datetime, config: LifecycleConfig) -> datetime | None:
    """The new ``valid_until`` a recall at ``at`` gives ``item``; None: it keeps its own.

    ``item`` is the memory as it was before this recall (``recall_count`` not yet
    counting it).

    Examples:
        >>> from datetime import datetime, timezone
        >>> from memtrellis.lifecycle import LifecycleConfig
        >>> from memtrellis.types import MemoryItem, Scope
        >>> fact = MemoryItem(text="Ana likes tea", scope=Scope(entity_id="ana"), recall_count=9)
        >>> print(renewed_until(fact, datetime.now(timezone.utc), LifecycleConfig()))
        None
    """
    if config.heat_renewal <= 0 or item.valid_until is None or item.superseded_by is not None:
        return None
    if item.recall_count + 1 < config.heat_min_recalls or item.invalid_reason(at) is not None:
        return None
    span = config.validity_for(item.memory_type)
    if span is None or span.total_seconds() <= 0:
        return None
    default_end = (item.valid_from or item.created_at) + span
    if item.valid_until < default_end:  # an end of its own, earlier than the default
        return None
    ceiling = default_end + span * config.heat_validity_cap
    if item.valid_until >= ceiling:  # at the bound, or an end of its own beyond it
        return None
    renewed = min(ceiling, at + span * config.heat_renewal)
    return renewed if renewed > item.valid_until else None
