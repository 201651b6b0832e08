"""Hybrid recall: dense and keyword scores fused, then context from the graph.

1. Dense candidates from the entity's Chroma collection (process/session as filters).
2. Keyword candidates from the entity's BM25 shard.
3. Score fusion: ``0.5 * cosine + 0.5 * bm25 / best bm25``. A candidate only one search
   found takes the lowest fetched cosine as its dense part. The cosine is read from the
   embedder's `similarity_floor` when it declares one (e5: 0.7). (Reciprocal-rank fusion was
   tried first: with a small embedder it let weak dense ranks drown strong keyword hits
   and fell below BM25 alone on LoCoMo; scores keep how sure each search is.)
4. Conversation context: each of the 20 best candidates lends 0.3 of its score to the
   message before and after it (0.15 two messages away), along ``follows`` edges,
   passing over slight messages such as "lol" (`memtrellis.recall.neighbours`). An
   answer is often the turn next to the one that matches the question. (Letting every
   candidate lend was slower and worse: weak candidates summed into noise.)
5. Graph hops. The subjects the question names (`memtrellis.recall.subjects`: the
   entity's own subject names, exactly or fuzzily, common words left out) start hops of
   their own: each memory that mentions one (hubs and speakers left out) gains
   `NAMED_SHARE` of the best fused score, spread over the memories that mention it (a
   name few memories mention points at them). Then the top k seeds, best first (those
   memories among them), lend `EDGE_SHARE` of their score along ``supports`` and
   ``extends`` edges, and reach up to k memories that share a subject with them and that
   no search found; those score 0.2 of the seed's score. The strongest hop is recorded
   in ``graph_path`` and, step by step from where it started, in ``explanation.path``.
   (Boosting found memories through a shared subject pushed direct answers out.)
6. Cues: a memory said by a speaker the query names ("What did Caroline say ...") or
   dated in the span it names ("last summer", "去年夏天") gains a share of its relevance,
   the time's the larger the fewer candidates the span holds (`memtrellis.recall.cues`);
   the explanation's ``boosts`` say which.
7. Confidence: the score so far (relevance) is multiplied by the memory's effective
   confidence (its confidence, a capped bonus per ``supports`` edge, time decay) and a
   small capped prior for memories recalled before (`memtrellis.lifecycle.confidence`).
   Only the candidates whose own bound can still reach the top k are weighed
   (`memtrellis.recall.scoring`).
8. Expired, superseded and not-yet-valid memories (at ``now``, which ``as_of`` moves)
   are left out unless asked for (a conversation turn is superseded by a ``supersedes``
   edge from a newer turn, see `memtrellis.lifecycle.turns`; `memtrellis.recall.visibility`),
   and the search hits left out are reported; a token budget cuts the list before it is
   exceeded.
9. Optional second stage (``RecallRequest.reranker``, `memtrellis.recall.rerank`): the
   best ``depth`` candidates after step 7 are reordered by a reranker, run outside the
   shard's lock; off by default (``docs/benchmarks.md``, "Embedders and reranking").

Measured on LoCoMo (``benchmarks/locomo.py``, ``benchmarks/recall_ab.py``): see
``docs/benchmarks.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice

from memtrellis.context.render import line_tokens
from memtrellis.context.render import memory_line as context_line
from memtrellis.recall import neighbours
from memtrellis.recall.cues import ANCHOR_SCAN, Voice, apply_cues
from memtrellis.recall.paths import route_path
from memtrellis.recall.request import RecallRequest
from memtrellis.recall.scoring import Score, Step, Traits, rank, traits
from memtrellis.recall.subjects import NamedSubject, named_subjects
from memtrellis.recall.visibility import SCOPE, Visibility, hidden
from memtrellis.store import MemoryGraph, Store
from memtrellis.types import (
    EdgeKind,
    MemoryItem,
    RecalledMemory,
    SkippedMemory,
)

__all__ = ["DENSE_WEIGHT", "RecallRequest", "hybrid_recall", "memory_line", "similarity_floor"]

#: Weight of the cosine similarity; the normalised BM25 score gets the rest.
DENSE_WEIGHT = 0.5
#: Share of a candidate's score lent to the adjacent message, halved per further step.
NEIGHBOUR_SHARE = 0.3
NEIGHBOUR_RADIUS = 2
#: Only the best-fused candidates lend to their neighbours (see the module notes).
CONTEXT_LENDERS = 20
#: A memory no search found, reached through an entity it shares with one of the top
#: seeds, scores this share of the seed's score.
ENTITY_HOP_SHARE = 0.2
#: A memory that mentions a subject the question names gains this share of the best
#: fused score (times the name's match, 1 when exact).
NAMED_SHARE = 0.5
#: A memory a top seed supports or extends (or that supports or extends it) gains this
#: share of the seed's score: a relation the lifecycle recorded between the two.
EDGE_SHARE = 0.3
_EDGES = (EdgeKind.SUPPORTS.value, EdgeKind.EXTENDS.value)
#: Only the best this many seeds lend along those edges to candidates already found
#: (any seed reaches one no search found).
EDGE_LIFTERS = 1
_MIN_FETCH = 100
#: Most search hits reported as left out of one recall.
MAX_SKIPPED = 20


def similarity_floor(embedder: object) -> float:
    """The cosine that unrelated texts typically reach with ``embedder``: its
    ``similarity_floor`` attribute when it declares one in ``[0, 1)``, else 0.

    Fusion adds the cosine to a keyword score scaled to 0..1 and to the shares lent by
    neighbours, which suits a model whose cosines spread over 0..1 (MiniLM). Models
    trained with a low temperature (e5) put nearly every pair of texts between 0.7 and 1:
    read raw, their cosine barely separates candidates. Such an embedder declares the
    floor, and its cosines are read as ``(s - floor) / (1 - floor)``.

    Examples:
        >>> from memtrellis.embeddings import E5Embedder
        >>> from memtrellis.testing import HashingEmbedder
        >>> similarity_floor(E5Embedder()), similarity_floor(HashingEmbedder())
        (0.7, 0.0)
    """
    value = getattr(embedder, "similarity_floor", 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        return 0.0
    return float(value)


def memory_line(item: MemoryItem, confidence: float | None = None) -> str:
    """The line a memory takes in a budgeted list, and is counted in: the line the
    memory-context block shows it in ([`memory_line`][memtrellis.context.memory_line])."""
    return context_line(item, confidence=confidence)


def _lend_context(
    graph: MemoryGraph,
    scores: dict[str, Score],
    visible: Callable[[str], bool],
    floor: float,
    k: int,
    named: Sequence[NamedSubject] = (),
    slight: Callable[[str], bool] | None = None,
) -> None:
    """Steps 4 and 5: conversation neighbours and graph hops, added to ``scores``.

    ``slight``: which memories the conversation walk passes over
    (`memtrellis.recall.neighbours`)."""
    by_fused = sorted(scores.items(), key=lambda kv: (-kv[1].fused, kv[0]))
    for memory_id, entry in by_fused[:CONTEXT_LENDERS]:
        walk = neighbours.conversation_neighbours(graph, memory_id, NEIGHBOUR_RADIUS, slight)
        for other, distance in walk:
            if other in scores or visible(other):
                share = NEIGHBOUR_SHARE * 0.5 ** (distance - 1)
                target = scores.get(other) or scores.setdefault(other, Score(fused=floor))
                target.lend(share * entry.fused, [memory_id, "follows", other])
    seeds = [(memory_id, entry.fused) for memory_id, entry in by_fused[:k]]
    if named:
        seeds = _lend_named(graph, scores, visible, floor, k, named, seeds, by_fused)
    reached = 0
    for place, (memory_id, seed_score) in enumerate(seeds):
        entry = scores[memory_id]
        start: list[Step] = entry.route[:-1] if entry.route else []
        for other, kind, forward in _related(graph, memory_id):
            # A candidate the searches found already is lifted by the best seed only:
            # lifts from every seed pushed direct answers out (measured on the Chinese
            # set, where document chunks extend one another); one no search found is
            # reached from any of them.
            if other in scores and place >= EDGE_LIFTERS:
                continue
            if other != memory_id and visible(other):
                target = scores.get(other) or scores.setdefault(other, Score(fused=floor))
                route = [*start, (memory_id, kind, forward), (other, None, None)]
                target.lend(EDGE_SHARE * seed_score, [memory_id, kind, other], route)
        if reached >= k:
            continue
        for subject, other in graph.neighbours_by_subject(memory_id):
            # Reach only: a memory the searches or a neighbour already brought in keeps
            # its score (boosting those pushed direct answers out of the top k). At most k
            # are reached, from the best seeds: more could not all rank, and each one
            # costs a visibility check and a weighing.
            if reached >= k:
                break
            if other not in scores and visible(other):
                hop = Score(fused=floor)
                route = [*start, (memory_id, "mentions", True), (subject, "mentions", False)]
                hop.lend(
                    ENTITY_HOP_SHARE * seed_score,
                    [memory_id, subject, other],
                    [*route, (other, None, None)],
                )
                scores[other] = hop
                reached += 1


def _lend_named(
    graph: MemoryGraph,
    scores: dict[str, Score],
    visible: Callable[[str], bool],
    floor: float,
    k: int,
    named: Sequence[NamedSubject],
    seeds: list[tuple[str, float]],
    by_fused: list[tuple[str, Score]],
) -> list[tuple[str, float]]:
    """Hops from the subjects the question names; returns the top k seeds with the
    memories that mention them counted in.

    Each memory that mentions one (the newest k) gains `NAMED_SHARE` of the best fused
    score (times the match) when no search found it, or when the question misspells the
    name (a fuzzy match the keyword search could not credit): the question is about what
    it mentions. A subject that is also a speaker of the candidates is left to the
    speaker cue (`memtrellis.recall.cues`): the memories that name a speaker are mostly
    what others said to them.
    """
    best = by_fused[0][1].fused if by_fused else 1.0
    voices = _speakers(graph, by_fused[:CONTEXT_LENDERS])
    pool = dict(seeds)
    for subject in named:
        if subject.hub or subject.name.casefold() in voices:
            continue
        # The name's share is spread over the memories that mention it, as a walk from
        # the subject would: a name few memories mention points at them.
        amount = NAMED_SHARE * best * subject.score / 100.0 / subject.mentions
        for other in graph.newest_mentioning(subject.node, k):
            if not visible(other):
                continue
            if other in scores and subject.score >= 100.0:
                # Written as the question writes it: the keyword search credited the
                # name already, and lending again lifted mere mentions over the answer
                # ("Does Pimiento like the beach?"). A misspelt name the search missed
                # still lends, and a memory no search found is still reached.
                continue
            route: list[Step] = [(subject.node, "mentions", False), (other, None, None)]
            target = scores.get(other) or scores.setdefault(other, Score(fused=floor))
            target.lend(amount, [subject.node, "mentions", other], route)
            pool[other] = max(pool.get(other, 0.0), target.fused + target.context)
    return sorted(pool.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def _speakers(graph: MemoryGraph, candidates: Sequence[tuple[str, Score]]) -> set[str]:
    """The speakers (case-folded) of the given candidates' sources."""
    out: set[str] = set()
    for memory_id, _ in candidates:
        item = graph.item(memory_id)
        if item is not None:
            out.update(s.speaker.casefold() for s in item.sources if s.speaker)
    return out


def _related(graph: MemoryGraph, memory_id: str) -> list[tuple[str, str, bool]]:
    """``(other memory, kind, forward)`` along the ``supports``/``extends`` edges of one."""
    out: list[tuple[str, str, bool]] = []
    for links, forward in ((graph.g._succ, True), (graph.g._pred, False)):
        for other, keys in links.get(memory_id, {}).items():
            for kind in _EDGES:
                if kind in keys:
                    out.append((other, kind, forward))
                    break
    return out


def _skipped(
    graph: MemoryGraph,
    searched: list[str],
    seen: dict[str, str | None],
    turns: dict[str, str] | None = None,
) -> list[SkippedMemory]:
    """Search hits left out as out of date (not those of other scopes), best first."""
    out: dict[str, SkippedMemory] = {}
    for memory_id in searched:
        reason = seen.get(memory_id)
        if reason is None or reason == SCOPE or memory_id in out:
            continue
        item = graph.item(memory_id)
        by = item.superseded_by if item else None
        out[memory_id] = SkippedMemory(
            id=memory_id, reason=reason, superseded_by=by or (turns or {}).get(memory_id)
        )
        if len(out) >= MAX_SKIPPED:
            break
    return list(out.values())


def hybrid_recall(
    store: Store, req: RecallRequest
) -> tuple[list[RecalledMemory], int, bool, list[SkippedMemory]]:
    """Rank memories for ``req``.

    Returns ``(items, tokens used, cut by the budget, search hits left out as out of
    date)``.
    """
    fetch = req.fetch if req.fetch is not None else max(req.k * 4, _MIN_FETCH)
    among: list[str] | None = None  # with types or tags: the only memories searched
    if req.filtered:
        with store.reading(req.entity_id) as shard:
            graph = shard.graph
            among = [m.id for m in graph.items(req.entity_id) if req.wanted(m)]
    dense = (
        store.vectors.query(
            req.entity_id,
            req.embedding,
            fetch,
            process_id=req.process_id,
            session_id=req.session_id,
            ids=among,
        )
        if among is None or among
        else []
    )
    with store.reading(req.entity_id) as shard:
        graph = shard.graph

        visible = Visibility(graph, req)
        seen, turns = visible.seen, visible.turns

        scores: dict[str, Score] = {}
        found = [(i, s) for i, s in dense if visible(i)]
        floor = DENSE_WEIGHT * req.dense_part(min((s for _, s in dense), default=0.0))
        for place, (memory_id, similarity) in enumerate(found, start=1):
            scores[memory_id] = Score(
                dense=similarity, dense_rank=place, fused=DENSE_WEIGHT * req.dense_part(similarity)
            )
        # Filtered: every hit, so that the ones that pass are not cut off by the others.
        wanted_hits = fetch * 2 if among is None else len(shard.keywords) or 1
        keyword_hits = shard.keywords.search(req.entity_id, req.query, wanted_hits)
        keyword = [(i, s) for i, s in keyword_hits if visible(i)]
        best = keyword[0][1] if keyword else 1.0
        for place, (memory_id, score) in enumerate(keyword, start=1):
            entry = scores.get(memory_id) or scores.setdefault(memory_id, Score(fused=floor))
            entry.keyword, entry.keyword_rank = score, place
            entry.fused += (1.0 - DENSE_WEIGHT) * score / best

        if req.graph_context:
            named = named_subjects(
                req.query,
                graph,
                req.entity_id,
                lambda term: shard.keywords.document_frequency(req.entity_id, term),
            )
            slight = (
                neighbours.slight_test(shard.keywords, req.entity_id)
                if neighbours.SKIP_SLIGHT
                else None
            )
            _lend_context(graph, scores, visible, floor, req.k, named, slight)
        # What recall reads of each candidate alone, looked up once for the cues and the
        # weighing (a forgotten one is None).
        read = {memory_id: traits(graph, memory_id) for memory_id in scores}
        # Step 6: speaker and time named in the query (recall.cues).
        apply_cues(
            req.query,
            scores,
            graph.item,
            lambda: list(islice(graph.newest_ids(req.entity_id), ANCHOR_SCAN)),
            req.now,
            voice=lambda memory_id: _voice(
                read[memory_id] if memory_id in read else traits(graph, memory_id)
            ),
        )

        searched = [i for i, _ in dense] + [i for i, _ in keyword_hits]
        stage = req.reranker
        if stage is None:
            ranked = rank(graph, scores, req.k, req.now, req.lifecycle, read)
            return _results(graph, scores, ranked, req, searched, seen, turns)
        ranked = rank(graph, scores, max(req.k, stage.depth), req.now, req.lifecycle, read)
        head = [(i, _text(graph, i), scores[i].final) for i in ranked[: stage.depth]]
    # The reranker's model runs outside the shard's lock: the entity's writers and other
    # recalls go on meanwhile, and what changed is checked again below.
    order = stage.order(req.query, head)
    if order is not None:  # None: the reranker failed (logged), first-stage order
        for memory_id, value in order.items():
            scores[memory_id].rerank = value
        ranked = [*order, *ranked[stage.depth :]]
    with store.reading(req.entity_id) as shard:
        return _results(shard.graph, scores, ranked, req, searched, seen, turns, recheck=True)


def _voice(found: tuple[MemoryItem, Traits] | None) -> Voice | None:
    """A memory's `Voice` from what `traits` read of it (kept on its node until the item
    changes)."""
    return found[1].voice if found is not None else None


def _text(graph: MemoryGraph, memory_id: str) -> str:
    item = graph.item(memory_id)
    return item.search_text() if item is not None else ""


def _results(
    graph: MemoryGraph,
    scores: dict[str, Score],
    ranked: list[str],
    req: RecallRequest,
    searched: list[str],
    seen: dict[str, str | None],
    turns: dict[str, str],
    *,
    recheck: bool = False,
) -> tuple[list[RecalledMemory], int, bool, list[SkippedMemory]]:
    """Step 8: the top k as results within the token budget, and the hits left out.

    ``recheck``: the shard was let go since ranking (a reranker ran), so a memory that
    was forgotten or went out of date meanwhile is left out.
    """
    results: list[RecalledMemory] = []
    used = 0
    truncated = False
    skipped = _skipped(graph, searched, seen, turns)
    for memory_id in ranked:
        if len(results) >= req.k:
            break
        item = graph.item(memory_id)
        if recheck and (item is None or hidden(item, req) is not None):
            continue
        assert item is not None
        entry = scores[memory_id]
        explanation = entry.explain()
        if len(entry.route) > 1:
            explanation.path = route_path(graph, entry.route, req.now, req.lifecycle)
        explanation.replaces = [s.id for s in skipped if s.superseded_by == memory_id]
        if req.token_budget is not None:
            cost = line_tokens(memory_line(item, explanation.confidence))
            if used + cost > req.token_budget:
                truncated = True
                break
            used += cost
        results.append(
            RecalledMemory(
                memory=item.detached(),
                score=explanation.final_score,
                explanation=explanation,
            )
        )
    if req.token_budget is None:
        used = sum(line_tokens(memory_line(r.memory, r.explanation.confidence)) for r in results)
    return results, used, truncated, skipped
