"""Deciding what storing new memories does to the graph: the lifecycle planner.

For each new memory, in order: resolve its entities against the scope's (or find some in
its text), give it the default validity of its kind and, when its extractor set none,
the confidence of its source; then compare it with the closest existing memories of the
same scope (dense neighbours, memories sharing an entity, and the earlier new ones):

* a duplicate is not stored: its sources join the existing memory;
* a contradiction that is a change (``Relation.supersedes``) supersedes the older of the
  two: ``valid_until`` becomes the newer one's start, ``superseded_by`` is set, and
  ``contradicts`` and ``supersedes`` edges are added (nothing is deleted: the older memory
  stays as history); one that is not (both cannot hold, nothing says which holds now)
  only adds a ``contradicts`` edge;
* support and extension add ``supports`` / ``extends`` edges.

Conversation records (``episode``) get entities, and a turn of the user that reads as a
claim is compared with the closest earlier turns of the same speaker
(`memtrellis.lifecycle.turns`): ``contradicts`` / ``supersedes`` edges say which holds
now, while what was said stays as it was said.
The planner reads the store but writes nothing; [`Store.apply`][memtrellis.store.Store.apply]
commits the plan.
"""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memtrellis._deprecated import module_aliases, renamed_argument
from memtrellis.errors import WriteConflictError
from memtrellis.lifecycle._nearby import NewVectors
from memtrellis.lifecycle.confidence import source_prior
from memtrellis.lifecycle.config import RECORD_KINDS, LifecycleConfig
from memtrellis.lifecycle.entities import heuristic_entities, resolve_entities
from memtrellis.lifecycle.keys import FINE_TAG, fill_key
from memtrellis.lifecycle.relate import Relation, RelationKind, relate
from memtrellis.lifecycle.relation_model import shared_judge
from memtrellis.lifecycle.turns import (
    TURN_CANDIDATES,
    comparable,
    model_replaces_turn,
    relate_turns,
    same_speaker,
)
from memtrellis.store import Change, Expect, Store, normalize_subject
from memtrellis.store.storage import merged_count
from memtrellis.store.store import PLAN_ATTEMPTS
from memtrellis.types import EdgeKind, MemoryItem, SourceRef

__all__ = ["Candidate", "Outcome", "Plan", "RelationJudge", "plan_additions", "store_additions"]

log = logging.getLogger("memtrellis.lifecycle")
#: Dense neighbours compared with each new memory.
DENSE_CANDIDATES = 10
#: Memories per shared entity compared with each new memory (newest first).
ENTITY_CANDIDATES = 20
#: ``extends`` edges made per new memory, to the closest ones.
MAX_EXTENDS = 3


@dataclass(frozen=True)
class Candidate:
    """An existing memory a new one is compared with."""

    item: MemoryItem
    similarity: float


#: The optional relation judge (an LLM's opinion over the rules'):
#: ``(new, candidates) -> one relation (or None: no opinion) each``, or None for none.
RelationJudge = Callable[[MemoryItem, Sequence[Candidate]], Sequence[Relation | None] | None]

__getattr__ = module_aliases(__name__, {"Judge": f"{__name__}:RelationJudge"})


#: What the rules may say of a pair for a judge's ``duplicate`` to merge it.
_MERGEABLE = frozenset({RelationKind.DUPLICATE, RelationKind.SUPPORTS})


def _guarded(verdict: Relation, rules: Relation) -> Relation:
    """The judge's verdict, except a ``duplicate`` the rules do not see as the same claim.

    A merge keeps only the stored memory's text, so a wrong ``duplicate`` (a small model
    says it of a move, a new date) would erase what the new memory says. Unless the
    rules find the same claim (``duplicate`` or ``supports``), the pair is kept as
    ``supports``: both memories stay, linked, and nothing is lost.
    """
    if verdict.kind is not RelationKind.DUPLICATE or rules.kind in _MERGEABLE:
        return verdict
    return Relation(RelationKind.SUPPORTS, f"{verdict.reason} (kept: the rules say {rules.label})")


@dataclass(frozen=True)
class Outcome:
    """What became of one new memory: stored, or merged into ``target``.

    Examples:
        >>> from memtrellis import MemoryItem, Scope
        >>> item = MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))
        >>> Outcome(item).relation is None  # stored as a new memory
        True
    """

    item: MemoryItem
    relation: RelationKind | None = None
    target: str | None = None
    reason: str = ""
    related: tuple[tuple[str, str], ...] = ()  # (relation, other id) for edges made


@dataclass
class Plan:
    """The changes and edges to commit, and the outcome of each new memory.

    Examples:
        >>> plan = Plan()
        >>> (plan.changes, plan.edges, plan.outcomes)
        ([], [], [])
    """

    changes: list[Change] = field(default_factory=list)
    edges: list[tuple[str, str, EdgeKind]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _merge_sources(
    old: Sequence[SourceRef], new: Sequence[SourceRef], seen: set[Any] | None = None
) -> list[SourceRef]:
    # ``seen``: the keys of ``old`` when the caller keeps them (updated here).
    if seen is None:
        seen = {(s.message_id, s.content, s.document) for s in old}
    merged = list(old)
    for source in new:
        key = (source.message_id, source.content, source.document)
        if key not in seen:
            seen.add(key)
            merged.append(source)
    return merged


class _Planner:
    def __init__(
        self,
        store: Store,
        config: LifecycleConfig,
        relation_judge: RelationJudge | None,
        action: str,
        detail: dict[str, Any],
    ) -> None:
        self.store = store
        self.config = config
        self.relation_judge = relation_judge
        self.action = action
        self.detail = detail
        self.plan = Plan()
        # Items changed or added by this plan, by id: later new memories see them.
        self.pending: dict[str, MemoryItem] = {}
        self.new: list[tuple[MemoryItem, Sequence[float]]] = []
        self.near = NewVectors()  # the same, searchable: the closest are candidates
        self.source_keys: dict[str, set[Any]] = {}  # memory id -> keys of its sources
        self.names: dict[str, dict[str, str]] = {}
        self.replaced: dict[str, list[str]] = {}  # new id -> ids it superseded

    def current(self, memory_id: str, entity_id: str) -> MemoryItem | None:
        if memory_id in self.pending:
            return self.pending[memory_id]
        return self.store.graph_of(entity_id).item(memory_id)

    def prepare(self, item: MemoryItem, now: datetime) -> None:
        entity_id = item.scope.entity_id
        if entity_id not in self.names:
            self.names[entity_id] = self.store.graph_of(entity_id).subject_names(entity_id)
        known = self.names[entity_id]
        names = item.entities or heuristic_entities(item.text, known)
        resolved = resolve_entities(
            names, known, aliases=self.config.aliases, threshold=self.config.entity_match
        )
        for name in resolved:
            known.setdefault(normalize_subject(name), name)
        item.entities = resolved
        if item.key is None and FINE_TAG in item.tags:  # the model gave no key
            fill_key(item)
        if item.valid_until is None:
            span = self.config.validity_for(item.memory_type)
            if span is not None:
                item.valid_until = (item.valid_from or item.created_at or now) + span
        if "confidence" not in item.model_fields_set:
            item.confidence = source_prior(item, self.config)

    def candidates(self, item: MemoryItem, embedding: Sequence[float]) -> list[Candidate]:
        entity_id = item.scope.entity_id
        graph = self.store.graph_of(entity_id)
        scores: dict[str, float] = {}
        for memory_id, similarity in self.store.vectors.query(
            entity_id, embedding, DENSE_CANDIDATES, process_id=item.scope.process_id
        ):
            scores[memory_id] = similarity
        sharing: list[str] = []
        for name in item.entities:
            for other in graph.mentioning(entity_id, name, ENTITY_CANDIDATES):
                if other not in scores and other not in sharing:
                    sharing.append(other)
        if sharing:
            stored = self.store.vectors.embeddings(entity_id, sharing)
            scores.update({i: _cosine(embedding, v) for i, v in stored.items()})
        # The closest memories this plan added before (as the index gives its closest):
        # relating to all of them made a long document's add quadratic in its windows.
        scores.update(self.near.nearest(entity_id, embedding, DENSE_CANDIDATES))
        found: list[Candidate] = []
        for memory_id, similarity in scores.items():
            old = self.current(memory_id, entity_id)
            if (
                old is None
                or old.id == item.id
                or old.scope.entity_id != entity_id
                or old.scope.process_id != item.scope.process_id
                or old.superseded_by is not None
                or old.memory_type in RECORD_KINDS
            ):
                continue
            found.append(Candidate(old, similarity))
        found.sort(key=lambda c: (-c.similarity, c.item.id))
        return found

    def relations(self, item: MemoryItem, found: list[Candidate]) -> list[Relation]:
        rules = [relate(item, c.item, c.similarity, self.config) for c in found]
        judge, most = self.relation_judge, self.config.relation_judge_candidates
        if judge is None and self.config.relation_model:
            judge = shared_judge()  # asked for: the offline relation model, no LLM
        if judge is None or not found or most == 0:
            return rules
        # The closest candidates the rules are not sure of (`Relation.sure`: the same words,
        # a key's new value, a value replaced in the same words): the judge sees what words
        # miss, and a memory the rules are sure of costs no call.
        chosen = [n for n, rule in enumerate(rules) if not rule.sure][:most]
        if not chosen:
            return rules
        verdicts = judge(item, [found[n] for n in chosen])
        for n, verdict in zip(chosen, verdicts or [], strict=False):
            if verdict is not None:
                rules[n] = _guarded(verdict, rules[n])
        return rules

    def add(self, item: MemoryItem, embedding: Sequence[float], now: datetime) -> None:
        self.prepare(item, now)
        if item.memory_type in RECORD_KINDS:
            self.accept(item, embedding, self.compare_turn(item, embedding))
            return
        found = self.candidates(item, embedding)
        relations = self.relations(item, found)
        pairs = list(zip(found, relations, strict=True))
        duplicate = next((p for p in pairs if p[1].kind is RelationKind.DUPLICATE), None)
        if duplicate is not None:
            self.merge(item, duplicate[0].item, duplicate[1])
            return
        related: list[tuple[str, str]] = []
        extends = 0
        for candidate, relation in pairs:
            old = candidate.item
            if relation.kind is RelationKind.CONTRADICTS:
                if relation.supersedes:
                    self.supersede(item, old, relation)
                else:  # both may be what holds now: flagged, neither hidden
                    self.plan.edges.append((item.id, old.id, EdgeKind.CONTRADICTS))
                related.append((relation.kind.value, old.id))
            elif relation.kind is RelationKind.SUPPORTS:
                self.plan.edges.append((item.id, old.id, EdgeKind.SUPPORTS))
                related.append((relation.kind.value, old.id))
            elif relation.kind is RelationKind.EXTENDS and extends < MAX_EXTENDS:
                extends += 1
                self.plan.edges.append((item.id, old.id, EdgeKind.EXTENDS))
                related.append((relation.kind.value, old.id))
        self.accept(item, embedding, tuple(related))

    def compare_turn(
        self, item: MemoryItem, embedding: Sequence[float]
    ) -> tuple[tuple[str, str], ...]:
        """Edges from a new conversation turn to the earlier turns it makes out of date
        (`memtrellis.lifecycle.turns`); the turns themselves stay as they were said."""
        if not comparable(item):
            return ()
        entity_id = item.scope.entity_id
        found = dict(
            self.store.vectors.query(
                entity_id, embedding, TURN_CANDIDATES, process_id=item.scope.process_id
            )
        )
        found.update(self.near.nearest(entity_id, embedding, TURN_CANDIDATES))
        related: list[tuple[str, str]] = []
        for memory_id, similarity in sorted(found.items(), key=lambda kv: (-kv[1], kv[0])):
            old = self.current(memory_id, entity_id)
            if (
                old is None
                or old.id == item.id
                or old.memory_type not in RECORD_KINDS
                or old.scope.process_id != item.scope.process_id
                or not same_speaker(item, old)
            ):
                continue
            verdict = relate_turns(item, old, similarity, self.config)
            if (verdict is None or not verdict[0].supersedes) and self.config.relation_model:
                # Said in words the rules do not read: the relation model, for an earlier
                # turn of one sentence.
                verdict = model_replaces_turn(item, old, shared_judge()) or verdict
            if verdict is None:
                continue
            relation, whole = verdict
            self.plan.edges.append((item.id, old.id, EdgeKind.CONTRADICTS))
            if relation.supersedes and whole:
                newer, older = item, old
                if (item.valid_from or item.created_at) < (old.valid_from or old.created_at):
                    newer, older = old, item  # the new turn was said earlier (a backfill)
                self.plan.edges.append((newer.id, older.id, EdgeKind.SUPERSEDES))
            related.append((relation.kind.value, old.id))
        return tuple(related)

    def accept(
        self,
        item: MemoryItem,
        embedding: Sequence[float],
        related: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.pending[item.id] = item
        self.new.append((item, embedding))
        self.near.add(item.scope.entity_id, item.id, embedding)
        self.plan.outcomes.append(Outcome(item, related=related))

    def change(self, item: MemoryItem, action: str, detail: dict[str, Any]) -> None:
        self.pending[item.id] = item
        for number, existing in enumerate(self.plan.changes):
            if existing.item.id == item.id:
                # Changed twice by one plan: keep the first event's action, the last state.
                self.plan.changes[number] = Change(
                    item, existing.embedding, existing.action, existing.detail
                )
                return
        self.plan.changes.append(Change(item, None, action, dict(detail)))

    def merge(self, item: MemoryItem, old: MemoryItem, relation: Relation) -> None:
        # Not a deep copy: that copied every source again on each merge, so a document of
        # many like windows merged in time quadratic in their number. The containers are
        # new ones; the sources themselves are shared, never changed in place.
        merged = old.model_copy()
        seen = self.source_keys.pop(old.id, None)
        if seen is None:
            seen = {(s.message_id, s.content, s.document) for s in old.sources}
        merged.sources = _merge_sources(old.sources, item.sources, seen)
        self.source_keys[old.id] = seen  # the next merge into it reads no source again
        merged.entities = list(dict.fromkeys([*old.entities, *item.entities]))
        merged.tags = list(old.tags)
        lifecycle = dict(old.metadata.get("lifecycle") or {})
        lifecycle["merged"] = merged_count(old) + 1
        merged.metadata = {**copy.deepcopy(old.metadata), "lifecycle": lifecycle}
        merged.updated_at = item.created_at
        detail = {"duplicate": item.text[:200], "reason": relation.reason}
        self.change(merged, "merged", detail)
        self.plan.outcomes.append(Outcome(merged, RelationKind.DUPLICATE, old.id, relation.reason))

    def supersede(self, item: MemoryItem, old: MemoryItem, relation: Relation) -> None:
        newer, older = item, old
        if (item.valid_from or item.created_at) < (old.valid_from or old.created_at):
            newer, older = old, item  # the new memory tells of an earlier time
        start = newer.valid_from or newer.created_at
        ended = older.model_copy(deep=True) if older is old else older
        ended.superseded_by = newer.id
        until = max(start, older.valid_from or older.created_at)
        if older.valid_until is not None:
            until = min(until, older.valid_until)  # never lengthens a validity
        ended.valid_until = until
        detail = {"by": newer.id, "reason": relation.reason}
        if older is old:
            self.change(ended, "superseded", detail)
            self.replaced.setdefault(item.id, []).append(old.id)
        self.plan.edges.append((item.id, old.id, EdgeKind.CONTRADICTS))
        self.plan.edges.append((newer.id, older.id, EdgeKind.SUPERSEDES))

    def _created_detail(self, memory_id: str) -> dict[str, Any]:
        detail = dict(self.detail)
        if memory_id in self.replaced:
            detail["supersedes"] = self.replaced[memory_id]
        return detail

    def finish(self) -> Plan:
        new_ids = {item.id for item, _ in self.new}
        # A new memory that a later one in the same plan merged into or superseded is
        # stored in its latest state (pending), with its creation event.
        changes = [
            Change(self.pending[item.id], vector, self.action, self._created_detail(item.id))
            for item, vector in self.new
        ]
        self.plan.changes = changes + [c for c in self.plan.changes if c.item.id not in new_ids]
        return self.plan


def plan_additions(
    store: Store,
    items: Sequence[MemoryItem],
    embeddings: Sequence[Sequence[float]],
    now: datetime,
    *,
    config: LifecycleConfig | None = None,
    relation_judge: RelationJudge | None = None,
    action: str = "created",
    detail: dict[str, Any] | None = None,
    **deprecated: Any,
) -> Plan:
    """Plan storing ``items`` (changed in place: entities, validity, confidence).

    ``relation_judge`` (an LLM's opinion, see `memtrellis.lifecycle.relation_judge`)
    overrules the rules for the closest candidates; ``judge=`` is its deprecated name.

    Call with the store's lock or the facade's lifecycle lock held, so that the plan is
    made against the state it will be committed to.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from memtrellis.store import EmbedderInfo, Store
        >>> from memtrellis.testing import HashingEmbedder
        >>> embedder = HashingEmbedder()
        >>> info = EmbedderInfo(model_id=embedder.model_id, dimension=embedder.dimension)
        >>> store = Store(Path(tempfile.mkdtemp()), embedder=info, embed=embedder.embed_documents)
        >>> from datetime import datetime, timezone
        >>> from memtrellis import MemoryItem, Scope
        >>> items = [MemoryItem(text="Ana lives in Porto.", scope=Scope(entity_id="ana"))]
        >>> vectors = embedder.embed_documents([item.text for item in items])
        >>> plan = plan_additions(store, items, vectors, datetime.now(timezone.utc))
        >>> [change.action for change in plan.changes], len(store.graph_of("ana").memory_ids("ana"))
        (['created'], 0)
        >>> store.close()
    """
    judge = renamed_argument(
        "plan_additions", deprecated, "judge", "relation_judge", relation_judge
    )
    planner = _Planner(store, config or LifecycleConfig(), judge, action, detail or {})
    for item, embedding in zip(items, embeddings, strict=True):
        planner.add(item, embedding, now)
    return planner.finish()


def store_additions(
    store: Store,
    items: Sequence[MemoryItem],
    embeddings: Sequence[Sequence[float]],
    now: datetime,
    *,
    config: LifecycleConfig | None = None,
    relation_judge: RelationJudge | None = None,
    action: str = "created",
    detail: dict[str, Any] | None = None,
    edges: Sequence[tuple[str, str, EdgeKind]] = (),
    since: Expect | None = None,
    **deprecated: Any,
) -> list[Outcome]:
    """Plan and commit new memories in one store commit; returns each one's outcome.

    ``relation_judge`` as in `plan_additions` (``judge=`` is its deprecated name).

    Memories whose id is already stored (a captured turn replayed after a crash) replace
    their earlier copy without being compared again.

    The memories of one entity are committed only if the entity is as the plan found it:
    when another writer (a thread, or another process) changed it meanwhile, the plan is
    made again against what is stored now, so that a memory forgotten meanwhile is never
    merged into or superseded back to life and a text stored meanwhile by another process
    is found as a duplicate. ``since`` (see [`Store.began`][memtrellis.store.Store.began],
    taken when the write began): if the whole entity is forgotten before the commit,
    [`WriteConflictError`][memtrellis.errors.WriteConflictError] (``forgotten``) is raised
    and nothing is stored.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from memtrellis.store import EmbedderInfo, Store
        >>> from memtrellis.testing import HashingEmbedder
        >>> embedder = HashingEmbedder()
        >>> info = EmbedderInfo(model_id=embedder.model_id, dimension=embedder.dimension)
        >>> store = Store(Path(tempfile.mkdtemp()), embedder=info, embed=embedder.embed_documents)
        >>> from datetime import datetime, timezone
        >>> from memtrellis import MemoryItem, Scope
        >>> def said(text):  # one new memory of Ana's, with its vector
        ...     item = MemoryItem(text=text, scope=Scope(entity_id="ana"))
        ...     return [item], [embedder.embed_query(text)]
        >>> now = datetime.now(timezone.utc)
        >>> [first] = store_additions(store, *said("Ana lives in Porto."), now)
        >>> [again] = store_additions(store, *said("Ana lives in Porto."), now)  # merged
        >>> first.relation, again.relation.value, again.target == first.item.id
        (None, 'duplicate', True)
        >>> len(store.graph_of("ana").memory_ids("ana"))
        1
        >>> store.close()
    """
    judge = renamed_argument(
        "store_additions", deprecated, "judge", "relation_judge", relation_judge
    )
    entities = {i.scope.entity_id for i in items}
    if len(entities) != 1:  # several entities (or none): one commit each, unchecked
        return _store_once(store, items, embeddings, now, (config, judge, action, detail), edges)
    [entity_id] = entities
    if since is None:
        since = store.began(entity_id)
    # Planning changes the new items in place (validity, confidence, a supersession):
    # a second plan starts from them as they were given.
    pristine = [i.model_copy() for i in items]
    batch, vectors = list(items), list(embeddings)
    replays: set[str] | None = None
    for attempt in range(1, PLAN_ATTEMPTS + 1):
        graph = store.graph_of(entity_id)
        known = {i.id for i in batch if graph.item(i.id) is not None}
        if replays is None:
            replays = known
        elif replays - known:
            # Replayed turns forgotten since the first plan stay forgotten.
            gone = replays - known
            kept = [n for n, i in enumerate(batch) if i.id not in gone]
            batch, vectors = [batch[n] for n in kept], [vectors[n] for n in kept]
            edges = [e for e in edges if e[0] not in gone and e[1] not in gone]
            replays &= known
        how = (config, judge, action, detail)
        try:
            if attempt == PLAN_ATTEMPTS:
                # It kept meeting other writers: this time no one commits meanwhile.
                with store.exclusive(entity_id):
                    expect = replace(since, version=store.version(entity_id))
                    return _store_once(store, batch, vectors, now, how, edges, expect)
            expect = replace(since, version=store.version(entity_id))
            return _store_once(store, batch, vectors, now, how, edges, expect)
        except WriteConflictError as conflict:
            if conflict.forgotten or attempt == PLAN_ATTEMPTS:
                raise
            log.debug("entity %s changed while planning; planning again", entity_id)
            # Writers that keep meeting each other step apart a little more each time.
            time.sleep(random.random() * 0.005 * attempt)
            store.refresh(entity_id, wait=True)
            ids = {i.id for i in batch}
            batch = [p.model_copy() for p in pristine if p.id in ids]
    raise AssertionError("unreachable")  # pragma: no cover


def _store_once(
    store: Store,
    items: Sequence[MemoryItem],
    embeddings: Sequence[Sequence[float]],
    now: datetime,
    how: tuple[LifecycleConfig | None, RelationJudge | None, str, dict[str, Any] | None],
    edges: Sequence[tuple[str, str, EdgeKind]],
    expect: Expect | None = None,
) -> list[Outcome]:
    config, judge, action, detail = how
    known = [store.graph_of(i.scope.entity_id).item(i.id) is not None for i in items]
    fresh = [(i, e) for i, e, k in zip(items, embeddings, known, strict=True) if not k]
    plan = plan_additions(
        store,
        [i for i, _ in fresh],
        [e for _, e in fresh],
        now,
        config=config,
        relation_judge=judge,
        action=action,
        detail=detail,
    )
    replayed = [
        Change(i, e, "updated", {"replayed": True})
        for i, e, k in zip(items, embeddings, known, strict=True)
        if k
    ]
    if expect is not None:
        new_ids = {i.id for i, _ in fresh}
        changed = tuple(c.item.id for c in [*plan.changes, *replayed] if c.item.id not in new_ids)
        expect = replace(expect, existing=changed)
    store.apply([*plan.changes, *replayed], [*plan.edges, *edges], expect=expect)
    return [*plan.outcomes, *(Outcome(c.item) for c in replayed)]
