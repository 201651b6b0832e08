"""Relation rules on the labelled statement pairs: per-label precision and recall.

The pairs are ``tests/data/relation_pairs_*.json``: five ``tuning`` parts, each written
as a held-out part and then used to change the rules, and eight parts ``w1``-``w8`` by
writers who never saw the rules, which the relation model is trained on (see
``tests/data/README.md``); ``--pairs FILE`` runs a part kept outside the repository (a
blind held-out part) the same way. Each pair is an old and a new statement of one
entity, labelled ``duplicate``, ``supersedes``, ``contradicts``, ``extends`` or
``unrelated``.

Each pair is read as the lifecycle reads two plain-text facts: entities found in the
text (``heuristic_entities``) and resolved against the old one's (``resolve_entities``),
the cosine similarity of the two texts from the embedder (``--embedder``: the packaged
MiniLM by default, ``hashing`` for the tests' embedder), then ``relate(new, old,
similarity)``. A rules verdict counts as its `Relation.label`: ``supersedes`` for a
superseding contradiction, ``contradicts`` for one that keeps both, and ``supports``
(the same claim in other words) counts as ``duplicate``.

**Rules + judge**: the real relation judge (``LLMRelationJudge``, its prompt and its
reply parser) over a scripted chat model that answers from the pair's label, asked
only where the rules defer (their verdict is not ``sure``), as the lifecycle asks it:
it shows what an LLM judge that is always right adds to the rules, and where the rules
alone decide. The judge's
labels: ``contradicts`` (supersedes), ``conflicts`` (kept both), ``duplicate``,
``extends``, ``unrelated``.

**Rules + model**: the packaged relation model (``ModelRelationJudge``,
`memtrellis.lifecycle.relation_model`) asked where the rules are not sure, as the
lifecycle asks it with ``LifecycleConfig(relation_model=True)`` and no LLM. Every part
in ``tests/data`` is its training data, so its figures there are in-sample; its
out-of-sample figures are the leave-one-part-out ones of
``tools/train_relation_model.py --check`` and a blind part's (``--pairs``).

Targets (issue 22): a superseding change is caught at least 90% of the time (recall of
``supersedes``), and an ``extends`` or ``unrelated`` pair is wrongly superseded at most
1% of the time.

    python benchmarks/relations.py                      # MiniLM, every part
    python benchmarks/relations.py --parts --pairs /path/to/relation_pairs_heldout3.json
    python benchmarks/relations.py --embedder hashing --errors
    python benchmarks/relations.py --json benchmarks/results/relations.json --markdown
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memtrellis.lifecycle.plan import Candidate
from memtrellis.lifecycle.relate import Relation, relate
from memtrellis.lifecycle.relation_judge import LLMRelationJudge
from memtrellis.lifecycle.relation_model import ModelRelationJudge, pair_items
from memtrellis.testing import ScriptedLLM
from memtrellis.types import MemoryItem

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PARTS = (
    "tuning",
    "tuning2",
    "tuning3",
    "tuning4",
    "tuning5",
    "w1",
    "w2",
    "w3",
    "w4",
    "w5",
    "w6",
    "w7",
    "w8",
)
SYSTEMS = ("rules", "rules + model", "rules + judge")
LABELS = ("duplicate", "supersedes", "contradicts", "extends", "unrelated")
#: What the scripted judge answers for each label.
JUDGE_ANSWER = {
    "duplicate": "duplicate",
    "supersedes": "contradicts",
    "contradicts": "conflicts",
    "extends": "extends",
    "unrelated": "unrelated",
}


def load_pairs(part: str | Path) -> list[dict[str, str]]:
    """The pairs of one part (``tuning`` ... ``tuning5``, or the path of a pair file)."""
    path = part if isinstance(part, Path) else DATA / f"relation_pairs_{part}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return list(data["pairs"])


def items_of(pair: dict[str, str]) -> tuple[MemoryItem, MemoryItem]:
    """The old and the new memory of a pair, with entities as the lifecycle finds them."""
    return pair_items(pair["old"], pair["new"])


def label_of(relation: Relation) -> str:
    """A verdict as a label of the set (``supports`` counts as ``duplicate``)."""
    return "duplicate" if relation.label == "supports" else relation.label


def similarities(pairs: Sequence[dict[str, str]], embed: Callable[[list[str]], Any]) -> list[float]:
    """Cosine similarity of each pair's two texts."""
    texts = [t for p in pairs for t in (p["old"], p["new"])]
    vectors = np.asarray(embed(texts), dtype=np.float64)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return [float(vectors[2 * n] @ vectors[2 * n + 1]) for n in range(len(pairs))]


def judged(pair: dict[str, str], new: MemoryItem, old: MemoryItem, similarity: float) -> Relation:
    """The real relation judge's verdict, over a chat model answering from the label."""
    answer = {"relations": [{"index": 0, "relation": JUDGE_ANSWER[pair["label"]]}]}
    judge = LLMRelationJudge(ScriptedLLM([json.dumps(answer)]))
    [verdict] = judge(new, [Candidate(old, similarity)])
    assert verdict is not None
    return verdict


def evaluate(
    pairs: Sequence[dict[str, str]],
    sims: Sequence[float],
    *,
    with_judge: bool = False,
    model: ModelRelationJudge | None = None,
) -> dict[str, Any]:
    """Per-label precision and recall, the targets' figures, and the errors: of the rules
    alone, or with the scripted judge (``with_judge``) or the relation ``model`` asked
    where the rules are not sure."""
    confusion: Counter[tuple[str, str]] = Counter()
    errors: list[dict[str, Any]] = []
    asked = 0
    for pair, similarity in zip(pairs, sims, strict=True):
        old, new = items_of(pair)
        relation = relate(new, old, similarity)
        if with_judge and not relation.sure:
            asked += 1
            relation = judged(pair, new, old, similarity)
        elif model is not None and not relation.sure:
            asked += 1
            relation = model(new, [Candidate(old, similarity)])[0] or relation
        got = label_of(relation)
        confusion[(pair["label"], got)] += 1
        if got != pair["label"]:
            errors.append({**pair, "got": got, "reason": relation.reason, "similarity": similarity})
    per_label = {}
    for label in LABELS:
        hits = confusion[(label, label)]
        predicted = sum(confusion[(g, label)] for g in LABELS)
        gold = sum(confusion[(label, g)] for g in LABELS)
        per_label[label] = {
            "n": gold,
            "predicted": predicted,
            "precision": hits / predicted if predicted else None,
            "recall": hits / gold if gold else None,
        }
    safe = sum(per_label[label]["n"] for label in ("extends", "unrelated"))
    wrong = sum(confusion[(label, "supersedes")] for label in ("extends", "unrelated"))
    not_changes = len(pairs) - per_label["supersedes"]["n"]
    wrong_any = sum(confusion[(label, "supersedes")] for label in LABELS if label != "supersedes")
    return {
        "pairs": len(pairs),
        "per_label": per_label,
        "supersedes_caught": per_label["supersedes"]["recall"],
        "compatible_superseded": wrong / safe if safe else 0.0,
        "compatible_superseded_count": [wrong, safe],
        "any_wrongly_superseded_count": [wrong_any, not_changes],
        "judge_asked": asked,
        "accuracy": sum(confusion[(label, label)] for label in LABELS) / max(1, len(pairs)),
        "errors": errors,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}"


def markdown(results: dict[str, dict[str, Any]]) -> str:
    """The per-label table of every part and system, as Markdown."""
    lines = [
        "| part | system | " + " | ".join(f"{label} P / R" for label in LABELS) + " |",
        "|---|---|" + "---|" * len(LABELS),
    ]
    for name, figures in results.items():
        part, system = name.split(":")
        cells = [
            f"{_pct(figures['per_label'][label]['precision'])} / "
            f"{_pct(figures['per_label'][label]['recall'])}"
            for label in LABELS
        ]
        lines.append(f"| {part} ({figures['pairs']}) | {system} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "| part | system | supersessions caught | extends/unrelated superseded | "
        "any non-change superseded | judge or model asked |"
    )
    lines.append("|---|---|---|---|---|---|")
    for name, figures in results.items():
        part, system = name.split(":")
        wrong, safe = figures["compatible_superseded_count"]
        anyw, total = figures["any_wrongly_superseded_count"]
        lines.append(
            f"| {part} | {system} | {_pct(figures['supersedes_caught'])}% | "
            f"{wrong} of {safe} | {anyw} of {total} | {figures['judge_asked']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--parts", nargs="*", choices=PARTS, default=list(PARTS))
    parser.add_argument(
        "--pairs", type=Path, nargs="*", default=[], help="pair files outside tests/data too"
    )
    parser.add_argument("--errors", action="store_true", help="print every wrong verdict")
    parser.add_argument("--markdown", action="store_true", help="print the Markdown tables")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if args.embedder == "hashing":
        from memtrellis.testing import HashingEmbedder

        embed: Callable[[list[str]], Any] = HashingEmbedder().embed_documents
    else:
        from memtrellis.embeddings.minilm import default_embedder

        embed = default_embedder().embed_documents
    model = ModelRelationJudge()
    results: dict[str, dict[str, Any]] = {}
    for part in [*args.parts, *args.pairs]:
        pairs = load_pairs(part)
        if isinstance(part, Path):
            part = part.stem.removeprefix("relation_pairs_")
        sims = similarities(pairs, embed)
        for system in SYSTEMS:
            figures = evaluate(
                pairs,
                sims,
                with_judge=system == "rules + judge",
                model=model if system == "rules + model" else None,
            )
            results[f"{part}:{system}"] = figures
            print(f"\n{part} ({len(pairs)} pairs), {system}, embedder {args.embedder}")
            for label, row in figures["per_label"].items():
                print(
                    f"  {label:12} n={row['n']:4}  precision {_pct(row['precision']):>3}%"
                    f"  recall {_pct(row['recall']):>3}%"
                )
            wrong, safe = figures["compatible_superseded_count"]
            print(
                f"  supersessions caught {_pct(figures['supersedes_caught'])}% (target >= 90);"
                f" extends/unrelated superseded {wrong} of {safe} (target <= 1%);"
                f" judge or model asked {figures['judge_asked']}"
            )
            if args.errors and system != "rules + judge":
                for error in figures["errors"]:
                    print(
                        f"    {error['id']}: {error['label']} -> {error['got']}"
                        f" ({error['reason']}): {error['old']} | {error['new']}"
                    )
    if args.markdown:
        print("\n" + markdown(results))
    if args.json:
        slim = {k: {f: v for f, v in r.items() if f != "errors"} for k, r in results.items()}
        args.json.write_text(json.dumps({"embedder": args.embedder, **slim}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
