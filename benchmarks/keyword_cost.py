"""What matching misspelt query words costs the keyword search, at the size of one heavy user.

Issue 21. One entity's BM25 index (`memtrellis.store.KeywordIndex`) over ``--size``
synthetic chat messages (``_synth.py``, the corpus of ``latency.py``: at 50,000 messages,
the heavy user of its 100k store), asked the user's own questions as they are and with a
typo in a third of their longer words (``_perturb.typo``); each question is searched with
and without spelling neighbours (``fuzzy=True``/``False``), interleaved, for the top 200
(what recall asks for). No embedder: only the keyword search is timed. Prints p50/p95 of
each and their ratio, and how often the misspelt question's top 10 holds the message the
question was phrased from.

    python benchmarks/keyword_cost.py                   # 50,000 messages, ~1 min
    python benchmarks/keyword_cost.py --size 5000 --queries 100
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections.abc import Sequence

from _locomo import percentile
from _perturb import typo
from _synth import UserStream

from memtrellis.store import KeywordIndex

_LONG = re.compile(r"[A-Za-z]{5,}")


def misspelt(text: str, rng: random.Random) -> str:
    """A typo in about a third of the words of five letters or more (at least one)."""
    words = _LONG.findall(text)
    if not words:
        return text
    chosen = {w for w in words if rng.random() < 1 / 3} or {rng.choice(words)}
    return _LONG.sub(lambda m: typo(m.group(0), rng) if m.group(0) in chosen else m.group(0), text)


def main(argv: Sequence[str] | None = None) -> int:
    """Build the index, time the searches, print the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    messages = UserStream("user-00", seed=args.seed).take(args.size)
    index = KeywordIndex()
    started = time.perf_counter()
    for message in messages:
        index.add("u", message.id, message.text)
    built = time.perf_counter() - started
    rng = random.Random(args.seed)
    asked = [m for m in messages if m.question][-args.queries :]
    timings: dict[str, list[float]] = {"exact": [], "fuzzy": [], "exact typo": [], "fuzzy typo": []}
    found = {"exact typo": 0, "fuzzy typo": 0}
    for message in asked:
        assert message.question is not None
        wrong = misspelt(message.question, rng)
        for name, query, fuzzy in (
            ("exact", message.question, False),
            ("fuzzy", message.question, True),
            ("exact typo", wrong, False),
            ("fuzzy typo", wrong, True),
        ):
            began = time.perf_counter()
            hits = index.search("u", query, 200, fuzzy=fuzzy)
            timings[name].append((time.perf_counter() - began) * 1000.0)
            if name in found:
                found[name] += message.id in [h for h, _ in hits[:10]]
    print(
        f"{args.size} messages ({built:.1f} s to index), {len(asked)} questions; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for name, values in timings.items():
        p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
        print(f"  {name:<11} p50 {p50:6.3f} ms  p95 {p95:6.3f} ms")
    for plain in ("exact", "exact typo"):
        fuzzy = plain.replace("exact", "fuzzy")
        ratio = percentile(timings[fuzzy], 0.5) / percentile(timings[plain], 0.5)
        print(f"  p50 {fuzzy} / {plain}: {ratio:.2f}x")
    for name, count in found.items():
        print(f"  {name}: the source message in the top 10 for {100 * count / len(asked):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
