"""Train the relation model (`memtrellis.lifecycle.relation_model`) on the labelled pairs.

Reads every ``tests/data/relation_pairs_*.json`` part, turns each pair into features
(`memtrellis.lifecycle.pair_features`, cosines from the packaged MiniLM), and fits a
multinomial logistic regression (L2, Adam, written here: no ML library is needed).

The threshold on the probability of ``supersedes`` is chosen out of sample: each part is
held out in turn while the model is fitted on the others (leave one part out), and the
threshold is the lowest at which the model adds at most ``--ceiling`` (1%) of the
held-out compatible and unrelated pairs, and of all held-out non-changes, to those the
rules supersede, asked as the lifecycle asks it (the rules' supersessions stand; the model
judges only where `may_judge` lets it). The script prints
each held-out part's figures at that threshold, then fits on every part and writes the
weights into the package:

    python tools/train_relation_model.py          # writes lifecycle/relation_model.json
    python tools/train_relation_model.py --check  # the leave-one-part-out figures only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from memtrellis.embeddings.minilm import default_embedder
from memtrellis.lifecycle.pair_features import FEATURES
from memtrellis.lifecycle.relation_model import (
    LABELS,
    RelationModel,
    may_judge,
    pair_items,
    pair_rows,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = ROOT / "src" / "memtrellis" / "lifecycle" / "relation_model.json"
SUPERSEDES = LABELS.index("supersedes")
SAFE = (LABELS.index("extends"), LABELS.index("unrelated"))
THRESHOLDS = tuple(round(0.5 + 0.01 * n, 2) for n in range(50))
#: The score of a pair the rules supersede: above every threshold.
RULES = 2.0


Part = tuple[np.ndarray, np.ndarray, np.ndarray]


def load_part(path: Path) -> Part:
    """The features and labels of one part, and for each pair what the system's verdict
    is without the model: 1 where the rules supersede, -1 where the model may not judge
    (`may_judge`), 0 where the model decides."""
    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    items = [(new, old) for old, new in (pair_items(p["old"], p["new"]) for p in pairs)]
    rows, rules = pair_rows(items, default_embedder().embed_documents)
    fixed = [
        1 if rule.label == "supersedes" else 0 if may_judge(new, old) else -1
        for rule, (new, old) in zip(rules, items, strict=True)
    ]
    return rows, np.asarray([LABELS.index(p["label"]) for p in pairs]), np.asarray(fixed)


def fit(
    x: np.ndarray, y: np.ndarray, l2: float, steps: int = 600, rate: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, scale, weights and bias of a logistic regression fitted to ``x``, ``y``."""
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale
    target = np.eye(len(LABELS))[y]
    params = [np.zeros((z.shape[1], len(LABELS))), np.zeros(len(LABELS))]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    for step in range(1, steps + 1):
        logits = z @ params[0] + params[1]
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        error = (p - target) / len(y)
        grads = [z.T @ error + l2 * params[0] / len(y), error.sum(axis=0)]
        for n, (param, grad) in enumerate(zip(params, grads, strict=True)):
            first[n] = 0.9 * first[n] + 0.1 * grad
            second[n] = 0.999 * second[n] + 0.001 * grad * grad
            corrected = first[n] / (1 - 0.9**step)
            param -= rate * corrected / (np.sqrt(second[n] / (1 - 0.999**step)) + 1e-8)
    return mean, scale, params[0], params[1]


def model_of(
    fitted: tuple[np.ndarray, ...], threshold: float, sizes: dict[str, int]
) -> RelationModel:
    mean, scale, weights, bias = fitted
    return RelationModel(FEATURES, mean, scale, weights, bias, threshold, sizes)


def figures(chance: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, Any]:
    """Supersessions caught, and non-changes superseded, at ``threshold``."""
    said = chance >= threshold
    changes, safe, others = y == SUPERSEDES, np.isin(y, SAFE), y != SUPERSEDES
    return {
        "caught": float(said[changes].mean()) if changes.any() else None,
        "safe_superseded": [int(said[safe].sum()), int(safe.sum())],
        "any_superseded": [int(said[others].sum()), int(others.sum())],
    }


def held_out(parts: dict[str, Part], l2: float) -> dict[str, np.ndarray]:
    """Each part's probabilities of ``supersedes`` from a model fitted on the others, as the
    lifecycle uses them: `RULES` where the rules supersede, 0 where the model may not
    judge."""
    chance = {}
    for name, (rows, _, fixed) in parts.items():
        train = [parts[n] for n in parts if n != name]
        x, y = np.vstack([t[0] for t in train]), np.concatenate([t[1] for t in train])
        model = model_of(fit(x, y, l2), 1.0, {})
        said = model.probabilities(rows)[:, SUPERSEDES]
        chance[name] = np.where(fixed == 1, RULES, np.where(fixed == -1, 0.0, said))
    return chance


def lowest_threshold(chance: np.ndarray, labels: np.ndarray, ceiling: float) -> float:
    """The lowest threshold at which the model adds at most ``ceiling`` of the compatible
    and unrelated pairs, and of all non-changes, to those the rules supersede."""
    rules = figures(chance, labels, RULES)
    for threshold in THRESHOLDS:
        found = figures(chance, labels, threshold)
        added = [
            (found[k][0] - rules[k][0], found[k][1]) for k in ("safe_superseded", "any_superseded")
        ]
        if all(said <= ceiling * total for said, total in added):
            return threshold
    return THRESHOLDS[-1]


def table(rows: list[tuple[str, np.ndarray, np.ndarray]], threshold: float) -> str:
    """The held-out figures as a Markdown table."""
    lines = [
        "| held-out part | pairs | supersessions caught | extends/unrelated superseded"
        " | any non-change superseded |",
        "|---|---|---|---|---|",
    ]
    for name, chance, y in rows:
        found = figures(chance, y, threshold)
        caught = "-" if found["caught"] is None else f"{100 * found['caught']:.0f}%"
        safe, other = found["safe_superseded"], found["any_superseded"]
        lines.append(
            f"| {name} | {len(y)} | {caught} | {safe[0]} of {safe[1]} | {other[0]} of {other[1]} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty")
    parser.add_argument("--ceiling", type=float, default=0.01, help="non-changes superseded")
    parser.add_argument("--check", action="store_true", help="do not write the weights")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    files = sorted(DATA.glob("relation_pairs_*.json"))
    parts = {path.stem.removeprefix("relation_pairs_"): load_part(path) for path in files}
    chance = held_out(parts, args.l2)
    every = np.concatenate(list(chance.values()))
    labels = np.concatenate([y for _, y, _ in parts.values()])
    threshold = lowest_threshold(every, labels, args.ceiling)
    print(f"threshold {threshold} (the model adds at most {args.ceiling:.0%} of non-changes)")
    rows = [(name, chance[name], y) for name, (_, y, _) in parts.items()]
    print("rules alone:")
    print(table([*rows, ("all", every, labels)], RULES))
    print("rules and model:")
    print(table([*rows, ("all", every, labels)], threshold))
    if args.check:
        return 0
    sizes = {name: len(y) for name, (_, y, _) in parts.items()}
    fitted = fit(np.vstack([x for x, _, _ in parts.values()]), labels, args.l2)
    model = model_of(fitted, threshold, sizes)
    args.out.write_text(json.dumps(model.to_dict(), indent=0) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
