"""One long message: does storing and recalling it cost time linear in its length?

Issue 19, item 4. A 400 KB message took 51 s to ``add`` (the entity heuristic searched the
text before every word for a sentence end) and a 1 MB captured one stalled the capture
worker. For each size (10 KB, 100 KB, 1 MB by default) the script builds English-like
text (words, capitalised names, sentence ends) in a fresh store with the hashing
embedder and times, each once:

* ``add-message``: ``Memory.add([{"role": "user", "content": text}])`` (fast mode: the
  message is one memory; the path of a captured turn) after a short related memory, so
  the lifecycle relates the long one to an existing one;
* ``add-text``: ``Memory.add(text)`` (the text as a document, cut into windows);
* ``add-fine``: the message in fine mode with a scripted LLM that answers at once (the
  message cut into token windows, one extraction call each: the LLM's own time left out);
* ``capture``: ``Memory.capture`` of the message and ``flush`` (the worker's path);
* ``context``: ``build_context(Memory.recall(...))`` of a question that recalls the long
  memory (recall and rendering).

It prints the seconds and, per stage, the ratio of each size's time to the previous
size's (10x the text: about 10x is linear, about 100x quadratic).

Run:  python benchmarks/long_message.py            (about 1 min on 2 cores)
      python benchmarks/long_message.py --sizes 10000 100000 400000
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memtrellis import Memory
from memtrellis.context import build_context
from memtrellis.testing import HashingEmbedder, ScriptedLLM

_WORDS = str.split(
    "the a of to and in is was we she he they went said met saw moved lives works likes "
    "coffee train city river morning evening report meeting garden letter book"
)
_NAMES = ["Clara Smith", "Porto", "Bruno", "Ana", "Lyon", "Blue Fox", "Dana"]
_ENDS = [".", "!", "?", ";", ",", "", "", "", ""]


def make_text(size: int, seed: int = 7) -> str:
    """English-like text of ``size`` characters: words, names, punctuation, paragraphs."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_NAMES) if rng.random() < 0.08 else rng.choice(_WORDS)
        end = rng.choice(_ENDS)
        if end in ".!?" and rng.random() < 0.05:
            end += "\n\n"
        piece = word + end + " "
        parts.append(piece)
        length += len(piece)
    return "".join(parts)[:size]


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(size: int, root: Path) -> dict[str, float]:
    """Seconds of each stage for one text of ``size`` characters, in fresh stores."""
    text = make_text(size)
    figures: dict[str, float] = {}
    with Memory(root / f"m{size}", entity_id="u", embedder=HashingEmbedder()) as memory:
        memory.add("Clara Smith went to Porto on a train in the morning.")
        figures["add-message"] = _timed(lambda: memory.add([{"role": "user", "content": text}]))
        figures["context"] = _timed(
            lambda: build_context(memory.recall("Where did Clara Smith go?", k=3), token_budget=600)
        )
    with Memory(root / f"t{size}", entity_id="u", embedder=HashingEmbedder()) as memory:
        figures["add-text"] = _timed(lambda: memory.add(text))
    llm = ScriptedLLM(lambda messages: '{"memories": [{"value": "Clara Smith went to Porto"}]}')
    with Memory(root / f"f{size}", entity_id="u", embedder=HashingEmbedder(), llm=llm) as memory:
        message = [{"role": "user", "content": text}]
        figures["add-fine"] = _timed(lambda: memory.add(message, mode="fine"))
    with Memory(root / f"c{size}", entity_id="u", embedder=HashingEmbedder()) as memory:

        def capture() -> None:
            memory.capture([{"role": "user", "content": text}], mode="fast")
            memory.flush(timeout=600)

        figures["capture"] = _timed(capture)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memtrellis-long-"))
    try:
        measure(1_000, root / "warm")  # imports, tokenizer, Chroma start-up
        results = {size: measure(size, root) for size in args.sizes}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    stages = list(next(iter(results.values())))
    print(f"{'size':>10} " + " ".join(f"{s:>12}" for s in stages))
    for size, figures in results.items():
        print(f"{size:>10} " + " ".join(f"{figures[s]:>11.3f}s" for s in stages))
    sizes = list(results)
    for before, after in itertools.pairwise(sizes):
        ratios = " ".join(
            f"{results[after][s] / max(results[before][s], 1e-9):>11.1f}x" for s in stages
        )
        print(f"{f'{before}->{after}':>10} {ratios}   (text {after / before:.0f}x longer)")


if __name__ == "__main__":
    main()
