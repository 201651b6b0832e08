"""``demo``: a chat app's memory in under a minute, offline.

The story (`memtrellis.cli._story`): two conversations captured as a chat app captures
them, recall with the reason and the source of every hit, a fact that changes and is
superseded, recall as of a day in between, and where to look next.
"""

from __future__ import annotations

import contextlib
import shlex
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from memtrellis.cli._render import fmt_time, short_id
from memtrellis.cli._state import CliError, CliState, EmbedderChoice, get_state, plural
from memtrellis.cli._story import Story, load_sample, run_story
from memtrellis.store.graph import SUBJECT_NODE_PREFIX
from memtrellis.types import MemoryItem, RecallResult

__all__ = ["demo", "load_sample"]

#: The picture formats ``--graph`` writes, by the file's suffix.
GRAPH_FORMATS = {".html": "html", ".png": "png", ".graphml": "graphml", ".json": "json"}
_CODE = "bold green"


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


def _graph_format(file: str | None) -> str | None:
    if file is None:
        return None
    fmt = GRAPH_FORMATS.get(Path(file).suffix.lower())
    if fmt is None:
        raise CliError(f"--graph {file}: name a .html, .png, .graphml or .json file")
    return fmt


def demo(
    ctx: typer.Context,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Keep the temporary store afterwards and print its path."),
    ] = False,
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            metavar="FILE",
            help="Also draw the memory graph into FILE: .html (a page for any browser), "
            ".png (needs memtrellis[viz]), .graphml or .json.",
        ),
    ] = None,
) -> None:
    """Show what memtrellis does for a chat app, offline, in a few seconds.

    Two conversations are captured as an app captures them; then recall with the reason and
    source of each memory, a fact that changes and is superseded, and recall as of a day in
    between. Uses a temporary store (or --path when given), never your default store.
    """
    state = get_state(ctx)
    fmt = _graph_format(graph)
    sample = load_sample()
    started = time.perf_counter()
    with _demo_dir(state, keep) as (path, temporary):
        with state.open(path, create=True) as memory, memory.scope(entity_id=sample["entity_id"]):
            story = run_story(memory, sample)
            report = memory.health()
            if graph is not None and fmt is not None:
                try:
                    memory.export_graph(graph, format=fmt)  # type: ignore[arg-type]
                except OSError as exc:
                    raise CliError(f"cannot write {graph}: {exc.strerror or exc}") from None
        seconds = time.perf_counter() - started
        if state.json:
            state.emit_json(_payload(story, path, report.model_dump(mode="json"), seconds))
            return
        kept = None if temporary else path
        _tell(state.out, story, path, temporary, report.model_dump(), state, graph, kept, seconds)


# -- the story, told ------------------------------------------------------------------------
def _tell(
    out: Console,
    story: Story,
    path: str,
    temporary: bool,
    health: Mapping[str, Any],
    state: CliState,
    graph: str | None,
    kept: str | None,
    seconds: float,
) -> None:
    names = _names(story)
    out.print(_header(story, path, temporary, health))
    out.print(_step(1, "A chat app captures two conversations"))
    out.print(_captured(story))
    out.print(_step(2, "Later, before a reply: recall, with why and where from"))
    for result, k in zip(story.recalls, story.recall_k, strict=True):
        out.print(_code(f"memory.recall({result.query!r}, k={k})"))
        out.print(_recall(result, names, left_out=False))
    out.print(_step(3, "A fact changes: superseded, not deleted"))
    out.print(_supersession(story, names))
    out.print(_step(4, "What is true now, and what was true then"))
    out.print(_code(f'memory.recall({story.fact_query!r}, memory_types=["fact"])'))
    out.print(_recall(story.now, names))
    day = story.as_of.date().isoformat()
    out.print(_code(f'memory.recall({story.fact_query!r}, memory_types=["fact"], as_of={day})'))
    out.print(_recall(story.then, names, on=day))
    out.print(_step(5, "Where to look next"))
    _next(out, story, state, graph, kept)
    out.print(_footer(health, seconds, temporary))


def _step(number: int, title: str) -> Rule:
    return Rule(f"[bold]{number} · {escape(title)}[/]", align="left", style="cyan")


def _note(text: str, indent: int = 2) -> Padding:
    """A dim remark, wrapped to the terminal under its indent."""
    return Padding(Text(text, style="dim"), (0, 0, 0, indent))


def _code(line: str) -> Padding:
    return Padding(Text(line, style=_CODE), (1, 0, 0, 2))


def _header(story: Story, path: str, temporary: bool, health: Mapping[str, Any]) -> Panel:
    model = str(health.get("embedder_model_id") or "the default embedder")
    where = "a temporary store, removed afterwards" if temporary else "kept"
    body = Text.assemble(
        ("memtrellis", "bold"),
        " gives a chat model long-term memory. Here a chat app hands it two conversations "
        f"of {story.user} with her assistant, six months apart, and then asks it what is "
        "worth knowing before a reply.\n",
        ("Offline: ", "bold"),
        f"embeddings by {model} from a wheel, graph in NetworkX, vectors in Chroma, no LLM.\n",
        ("Store: ", "bold"),
        (path, "cyan"),
        f" ({where})",
    )
    return Panel(body, title="[bold]memtrellis demo[/]", border_style="cyan", box=box.ROUNDED)


def _captured(story: Story) -> Group:
    parts: list[Any] = [
        _code("memory.capture([message, reply], session_id=...)   # after each reply"),
        _note(
            "as ChatMemoryWrapper, the LlamaIndex memory block and memory.register(client) do; "
            'the turns that state a fact are stored with memory.add(turn, memory_type="fact") '
            "(fine mode's LLM distils such facts itself)",
            indent=4,
        ),
    ]
    sessions: dict[str, list[Any]] = {}
    for turn in story.turns:
        sessions.setdefault(turn.session_id, []).append(turn)
    for session_id, turns in sessions.items():
        day = turns[0].message["timestamp"][:10]
        table = Table(
            title=f"session {session_id} · {day}",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            padding=(0, 1),
            expand=True,
        )
        table.add_column("turn", style="dim", no_wrap=True)
        table.add_column("who", no_wrap=True)
        table.add_column("said")
        table.add_column("stored as", no_wrap=True)
        for turn in turns:
            message = turn.message
            who = message.get("name") or message["role"]
            item = turn.memory
            kind = Text("—", style="red")
            if item is not None:
                style = "bold magenta" if item.memory_type.value == "fact" else "cyan"
                kind = Text.assemble(
                    (short_id(item.id), "cyan"), " ", (item.memory_type.value, style)
                )
            table.add_row(
                Text(message["id"]),
                Text(who, style="bold" if turn.fact else ""),
                Text(message["content"]),
                kind,
            )
        parts.append(Padding(table, (1, 0, 0, 2)))
    stored = sum(1 for turn in story.turns if turn.memory is not None)
    parts.append(
        _note(
            f"{plural(len(story.turns), 'turn')} → {plural(stored, 'memory', 'memories')} "
            f"in {story.store_seconds:.1f} s, each with its message id, speaker, session and "
            "time"
        )
    )
    return Group(*parts)


def _names(story: Story) -> dict[str, str]:
    """Memory ids to the message ids they came from, to name graph steps readably."""
    names: dict[str, str] = {}
    for item in story.memories:
        ids = [source.message_id for source in item.sources if source.message_id]
        names[item.id] = ids[0] if ids else short_id(item.id)
    return names


def _source(item: MemoryItem) -> str:
    for source in item.sources:
        who = source.speaker or source.role or source.kind.value
        role = f" ({source.role})" if source.role and source.speaker else ""
        when = fmt_time(source.timestamp) if source.timestamp else fmt_time(item.created_at)
        session = f" · session {item.scope.session_id}" if item.scope.session_id else ""
        return f"from {source.message_id or 'text'} · {who}{role}{session} · {when}"
    return "from —"


def _graph_step(path: list[str], names: Mapping[str, str]) -> str | None:
    if len(path) < 3:
        return None
    seed, via = names.get(path[0], short_id(path[0])), path[1]
    if via == "follows":
        return f"next to {seed}"
    if via.startswith(SUBJECT_NODE_PREFIX):
        return f"shares {via.rsplit(':', 1)[-1]!r} with {seed}"
    return f"{via} {seed}"


def _why(result: RecallResult, rank: int, names: Mapping[str, str]) -> Text:
    entry = result.items[rank]
    why = entry.explanation
    parts: list[str] = []
    if why.dense_score is not None:
        parts.append(f"dense {why.dense_score:.2f} (#{why.dense_rank})")
    if why.keyword_score is not None:
        parts.append(f"keyword {why.keyword_score:.2f} (#{why.keyword_rank})")
    step = _graph_step(why.graph_path, names)
    if step:
        parts.append(f"graph: {step}")
    if why.confidence is not None:
        parts.append(f"confidence {why.confidence:.2f}")
    if why.replaces:
        parts.append("replaces " + ", ".join(names.get(i, short_id(i)) for i in why.replaces))
    return Text("why: " + " · ".join(parts) + f" → final {why.final_score:.3f}", style="dim")


def _recall(
    result: RecallResult, names: Mapping[str, str], *, left_out: bool = True, on: str = ""
) -> Padding:
    """The hits best first, each with its source and why; then what was left out (a
    superseded or not yet valid memory that matched) and the summary line."""
    table = Table(box=box.SIMPLE, show_header=False, padding=(0, 1), show_edge=False)
    table.add_column("#", justify="right", style="bold")
    table.add_column("memory")
    for rank, entry in enumerate(result.items):
        cell = Text(entry.memory.text, style="bold")
        if entry.memory.memory_type.value == "fact":
            cell.append("  fact", style="magenta")
        cell.append("\n" + _source(entry.memory), style="cyan")
        cell.append("\n")
        cell.append_text(_why(result, rank, names))
        table.add_row(str(rank + 1), cell)
    rows: list[Any] = [table] if result.items else [Text("nothing recalled", style="yellow")]
    for skipped in result.skipped if left_out else ():
        name = names.get(skipped.id, short_id(skipped.id))
        reason = skipped.reason
        if on and reason == "not yet valid":
            reason += f" on {on}"
        if skipped.superseded_by:
            reason += f" by {names.get(skipped.superseded_by, short_id(skipped.superseded_by))}"
        rows.append(Text(f"left out: {name}, {reason}", style="yellow"))
    rows.append(
        Text(
            f"{plural(len(result.items), 'memory', 'memories')} · "
            f"{plural(result.tokens, 'token')} · {result.latency_ms:.0f} ms",
            style="dim",
        )
    )
    return Padding(Group(*rows), (0, 0, 0, 4))


def _validity(item: MemoryItem) -> str:
    start = fmt_time(item.valid_from) if item.valid_from else "—"
    if item.valid_until is None:
        return f"valid from {start}, current"
    return f"valid {start} → {fmt_time(item.valid_until)}"


def _supersession(story: Story, names: Mapping[str, str]) -> Group:
    old, new = story.old_fact, story.new_fact
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1))
    table.add_column("fact")
    table.add_column("from", style="dim", no_wrap=True)
    table.add_column("validity", no_wrap=True)
    old_text = Text(old.text, style="strike dim")
    if old.superseded_by:
        old_text.append(f"\nsuperseded by {names.get(old.superseded_by, '?')}", style="yellow")
    table.add_row(old_text, Text(names.get(old.id, "")), Text(_validity(old)))
    table.add_row(Text(new.text, style="bold"), Text(names.get(new.id, "")), Text(_validity(new)))
    reason = story.superseded_reason or "the relation judge"
    lines = Text(style="dim")
    lines.append(f"The lifecycle rules saw the same subject and attribute with {reason}")
    lines.append(": no LLM was asked.\nThe old fact keeps its sources and stays in the graph ")
    lines.append("(contradicts and supersedes edges), so the change is history, not loss:\n")
    chain = " → ".join(names.get(v.id, short_id(v.id)) for v in story.versions)
    lines.append(f"  memory.versions(...): {chain}\n", style=_CODE)
    events = []
    for event in story.old_history:
        by = event.detail.get("by")
        events.append(event.action + (f" by {names.get(str(by), short_id(str(by)))}" if by else ""))
    lines.append(f"  memory.history(...):  {', then '.join(events)}", style=_CODE)
    return Group(Padding(table, (1, 0, 0, 2)), Padding(lines, (0, 0, 0, 2)))


def _next(out: Console, story: Story, state: CliState, graph: str | None, kept: str | None) -> None:
    flag = " --embedder hashing" if state.embedder is EmbedderChoice.HASHING else ""
    store = shlex.quote(kept) if kept is not None else "STORE"
    base = f"memtrellis --path {store}{flag} --entity {story.entity_id}"
    picture = "the memory graph as a page for any browser (.png with memtrellis[viz])"
    steps: list[tuple[str, str]] = []
    if kept is None:
        keep = "keep this store to explore it (STORE is the path it prints)"
        steps.append((keep, "memtrellis demo --keep"))
    steps.append(("every memory, the replaced fact too", f"{base} list --include-superseded"))
    steps.append(("ask your own question", f"{base} recall 'What should I avoid when I cook?'"))
    if graph is not None:
        steps.append(
            (f"the memory graph was drawn into {graph}; again", f"{base} graph --html ines.html")
        )
    elif kept is not None:
        steps.append((picture, f"{base} graph --html ines.html"))
    else:
        steps.append((picture, "memtrellis demo --graph ines.html"))
    out.print()
    for what, command in steps:
        out.print(Text(f"  {what}:", style="dim"))
        # Soft-wrapped: a command stays whole to copy however wide it is.
        out.print(Text(f"    {command}", style=_CODE), soft_wrap=True)
    out.print(
        Padding(
            _note(
                "Read on: README.md (Quickstart; LangChain, LlamaIndex, OpenAI and Anthropic "
                "clients), docs/concepts.md, docs/lifecycle.md (supersession, as_of), "
                "docs/graph.md, docs/getting-started.md"
            ),
            (1, 0, 0, 0),
        )
    )


def _footer(health: Mapping[str, Any], seconds: float, temporary: bool) -> Text:
    edges = {k: v for k, v in dict(health.get("edges_by_kind") or {}).items() if v}
    shown = ", ".join(f"{kind} {count}" for kind, count in edges.items()) or "none"
    total = int(health.get("total_memories") or 0)
    line = (
        f"\n{plural(total, 'memory', 'memories')} "
        f"({int(health.get('superseded') or 0)} superseded) · edges: {shown} · "
        f"done in {seconds:.1f} s"
    )
    if temporary:
        line += " · the temporary store was removed"
    return Text(line, style="dim")


def _payload(story: Story, path: str, health: dict[str, Any], seconds: float) -> dict[str, Any]:
    def dump(item: MemoryItem) -> dict[str, Any]:
        return item.model_dump(mode="json")

    return {
        "store": path,
        "entity_id": story.entity_id,
        "turns": [
            {
                "session_id": turn.session_id,
                "message_id": turn.message["id"],
                "role": turn.message["role"],
                "content": turn.message["content"],
                "memory_id": turn.memory.id if turn.memory else None,
                "memory_type": turn.memory.memory_type.value if turn.memory else None,
            }
            for turn in story.turns
        ],
        "memories": [dump(item) for item in story.memories],
        "recalls": [result.model_dump(mode="json") for result in story.recalls],
        "supersession": {
            "old": dump(story.old_fact),
            "new": dump(story.new_fact),
            "reason": story.superseded_reason,
            "versions": [item.id for item in story.versions],
        },
        "now": story.now.model_dump(mode="json"),
        "as_of": story.as_of.isoformat(),
        "then": story.then.model_dump(mode="json"),
        "health": health,
        "seconds": round(seconds, 2),
    }
