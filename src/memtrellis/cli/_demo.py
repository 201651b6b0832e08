"""``demo``: remember a sample conversation, then recall from it and explain why."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from importlib import resources
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.rule import Rule

from memtrellis.cli._render import health_table, memories_table, recall_table
from memtrellis.cli._state import CliError, CliState, EmbedderChoice, get_state, iter_all
from memtrellis.types import MemoryItem

__all__ = ["demo", "load_sample"]

SAMPLE = "sample_conversation.json"
#: How many memories each demo recall shows.
DEMO_K = 3


def load_sample() -> dict[str, Any]:
    """The sample conversation shipped with the package (three sessions and some queries)."""
    text = (
        resources.files("memtrellis.cli")
        .joinpath("data")
        .joinpath(SAMPLE)
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = json.loads(text)
    return data


@contextlib.contextmanager
def _demo_dir(state: CliState, keep: bool) -> Iterator[tuple[str, bool]]:
    """The store directory: ``--path`` when given, else a fresh temporary one.

    The user's default store ($MEMTRELLIS_HOME or ./.memtrellis) is never used, so trying
    the demo cannot change memories someone relies on. Yields ``(path, is_temporary)``.
    """
    if state.path is not None:
        yield state.path, False
    elif keep:
        yield tempfile.mkdtemp(prefix="memtrellis-demo-"), False
    else:
        # Chroma may still hold file handles on some platforms when cleanup runs.
        with tempfile.TemporaryDirectory(
            prefix="memtrellis-demo-", ignore_cleanup_errors=True
        ) as path:
            yield path, True


def _sort_key(item: MemoryItem) -> tuple[str, str]:
    stamps = [source.timestamp for source in item.sources if source.timestamp is not None]
    when = min(stamps) if stamps else item.created_at
    return when.isoformat(), item.id


def demo(
    ctx: typer.Context,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Keep the temporary store afterwards and print its path."),
    ] = False,
) -> None:
    """Remember a sample conversation, recall from it with explanations and show health.

    Uses a temporary store (or --path when given), never your default store.
    """
    state = get_state(ctx)
    sample = load_sample()
    sessions: list[dict[str, Any]] = sample.get("sessions", [])
    queries: list[str] = sample.get("queries", [])
    if not sessions:
        raise CliError("the sample conversation has no sessions")
    human = not state.json
    with _demo_dir(state, keep) as (path, temporary):
        if human:
            state.out.print(Rule(f"memtrellis demo: {escape(sample.get('title', ''))}"))
            note = "temporary, removed afterwards" if temporary else "kept"
            state.out.print(f"Store: [cyan]{escape(path)}[/] ({note})")
        with state.open(path) as memory:
            added: dict[str, None] = {}
            for session in sessions:
                messages = session["messages"]
                items = memory.add(messages, session_id=session["session_id"])
                added.update(dict.fromkeys(item.id for item in items))
                if human:
                    state.out.print(
                        f"Session [bold]{escape(session['session_id'])}[/]: "
                        f"{len(messages)} messages → {len(items)} memories"
                    )
            # Re-read rather than reuse what add returned: later sessions supersede earlier
            # memories, and the table should show that.
            stored = sorted((item for item in iter_all(memory) if item.id in added), key=_sort_key)
            results = [memory.recall(query, k=DEMO_K) for query in queries]
            report = memory.health()
        if state.json:
            state.emit_json(
                {
                    "store": path,
                    "memories": [item.model_dump(mode="json") for item in stored],
                    "recalls": [result.model_dump(mode="json") for result in results],
                    "health": report.model_dump(mode="json"),
                }
            )
            return
        state.out.print(memories_table(stored, title=f"{len(stored)} memories stored"))
        state.out.print(Rule("recall, with explanations"))
        for result in results:
            state.out.print(recall_table(result))
        state.out.print(health_table(report.model_dump()))
        if keep and state.path is None:
            flag = " --embedder hashing" if state.embedder is EmbedderChoice.HASHING else ""
            state.out.print(
                f"The demo store was kept: try [bold]memtrellis --path {escape(path)}{flag} "
                "recall 'Pimiento'[/]"
            )
