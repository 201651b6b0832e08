"""The everyday commands: add, recall, list, get, forget, history, health."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from memtrellis.cli._render import (
    health_table,
    history_table,
    item_details,
    memories_table,
    recall_table,
    short_id,
)
from memtrellis.cli._state import (
    CliError,
    CliState,
    entity_counts,
    get_state,
    plural,
    resolve_id,
)
from memtrellis.types import MemoryType

__all__ = [
    "add",
    "forget",
    "get",
    "health",
    "history",
    "list_memories",
    "load_messages",
    "recall",
]

SessionOption = Annotated[
    str | None,
    typer.Option("--session", metavar="ID", help="Session id to scope the memories to."),
]
TypeOption = Annotated[
    MemoryType | None,
    typer.Option("--type", case_sensitive=False, help="Memory type."),
]
TagOption = Annotated[
    list[str] | None, typer.Option("--tag", metavar="TAG", help="A tag; repeat for several.")
]
SupersededOption = Annotated[
    bool, typer.Option("--include-superseded", help="Also show memories replaced by newer ones.")
]
ExpiredOption = Annotated[
    bool, typer.Option("--include-expired", help="Also show memories past their valid_until.")
]


def load_messages(file: str) -> list[Any]:
    """Read a JSON message list (or ``{"messages": [...]}``, or one message) from a file.

    Raises:
        CliError: The file cannot be read or does not hold messages.
    """
    try:
        raw = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"{file} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if isinstance(data, (Mapping, str)):
        data = [data]
    if not isinstance(data, list) or not data:
        raise CliError(f"{file} holds no messages: expected a JSON list of message objects")
    return data


def add(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(help="Text to remember.")] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file", "-f", help="JSON file with a list of chat messages ('-' for stdin)."
        ),
    ] = None,
    session: SessionOption = None,
    memory_type: TypeOption = None,
    tags: TagOption = None,
) -> None:
    """Remember a piece of text or a conversation (a JSON list of messages)."""
    state = get_state(ctx)
    if (text is None) == (file is None):
        raise typer.BadParameter("give either TEXT or --file, not both and not neither")
    data: Any = text if file is None else load_messages(file)
    with state.open() as memory:
        items = memory.add(data, session_id=session, memory_type=memory_type, tags=tags or ())
    if state.json:
        state.emit_json([item.model_dump(mode="json") for item in items])
    elif not items:
        state.out.print("[yellow]Nothing worth remembering was found in that input.[/]")
    else:
        state.out.print(
            memories_table(items, title=f"{plural(len(items), 'memory', 'memories')} added")
        )


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to recall memories about.")],
    k: Annotated[
        int, typer.Option("-k", "--top-k", metavar="N", min=1, help="Most memories to return.")
    ] = 10,
    budget: Annotated[
        int | None,
        typer.Option("--budget", metavar="TOKENS", min=1, help="Token budget for the memories."),
    ] = None,
    session: SessionOption = None,
    include_superseded: SupersededOption = False,
    include_expired: ExpiredOption = False,
) -> None:
    """Recall the memories most relevant to QUERY, with why each was chosen."""
    state = get_state(ctx)
    with state.open(create=False) as memory:
        result = memory.recall(
            query,
            session_id=session,
            k=k,
            token_budget=budget,
            include_superseded=include_superseded,
            include_expired=include_expired,
        )
        hint = None if result.items else _elsewhere(memory, state)
    if state.json:
        state.emit_json(result.model_dump(mode="json"))
    else:
        state.out.print(recall_table(result))
    if hint:
        state.err.print(f"[yellow]{escape(hint)}[/]", soft_wrap=True)


def list_memories(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", min=1, help="Most memories to show.")
    ] = 50,
    offset: Annotated[
        int, typer.Option("--offset", metavar="N", min=0, help="Memories to skip.")
    ] = 0,
    memory_type: TypeOption = None,
    tags: TagOption = None,
    session: SessionOption = None,
    include_superseded: SupersededOption = False,
    include_expired: ExpiredOption = False,
) -> None:
    """List stored memories of the entity (ids are shown as prefixes that other commands take)."""
    state = get_state(ctx)
    filters: dict[str, Any] = {
        "include_superseded": include_superseded,
        "include_expired": include_expired,
    }
    if memory_type is not None:
        filters["memory_type"] = memory_type
    if tags:
        filters["tags"] = list(tags)
    with state.open(create=False) as memory:
        items = memory.list(session_id=session, limit=limit, offset=offset, filters=filters)
        hint = None if items else _elsewhere(memory, state)
    if state.json:
        state.emit_json([item.model_dump(mode="json") for item in items])
        if hint:  # stdout stays parseable
            state.err.print(f"[yellow]{escape(hint)}[/]", soft_wrap=True)
        return
    if not items:
        state.out.print(f"[yellow]{escape(hint or _no_match(state.entity))}[/]", soft_wrap=True)
        return
    first = offset + 1
    title = f"memories {first}–{offset + len(items)} of entity {state.entity!r}"
    state.out.print(memories_table(items, title=escape(title)))


def _no_match(entity: str) -> str:
    return f"no memories of entity {entity!r} match (try without the filters or --offset)"


def _elsewhere(memory: Any, state: CliState) -> str | None:
    """Why nothing was found, when it is that ``--entity`` has no memories at all: the
    entities the store does hold (``None`` when the entity has memories)."""
    if memory.list(limit=1):
        return None
    counts, total = entity_counts(memory)
    head = f"no memories of entity {state.entity!r}"
    if not counts:
        return f"{head}: the store holds no memories yet (add some with `memtrellis add TEXT`)"
    shown = ", ".join(f"{name} ({count})" for name, count in counts.items())
    more = (
        f" and {plural(total - len(counts), 'other entity', 'other entities')}"
        if total > len(counts)
        else ""
    )
    first = next(iter(counts))
    return f"{head}; this store holds: {shown}{more}. Pass --entity, e.g. --entity {first}"


def get(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Memory id or a unique prefix of it.")],
) -> None:
    """Show one memory with all its fields and sources."""
    state = get_state(ctx)
    with state.open(create=False) as memory:
        item = memory.get(resolve_id(memory, memory_id))
    if state.json:
        state.emit_json(item.model_dump(mode="json"))
    else:
        state.out.print(item_details(item))


def forget(
    ctx: typer.Context,
    memory_id: Annotated[
        str | None, typer.Argument(help="Memory id (or unique prefix) to forget.")
    ] = None,
    all_for_entity: Annotated[
        bool, typer.Option("--all-for-entity", help="Forget every memory of --entity.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Forget one memory, or every memory of the entity with --all-for-entity."""
    state = get_state(ctx)
    if (memory_id is None) == (not all_for_entity):
        raise typer.BadParameter("give either a memory ID or --all-for-entity")
    with state.open(create=False) as memory:
        target: str | None = None
        if memory_id is not None:
            item = memory.get(resolve_id(memory, memory_id))
            target = item.id
            question = f"Forget memory {short_id(item.id)} ({item.text[:60]!r})?"
        else:
            question = f"Forget EVERY memory of entity {state.entity!r}? This cannot be undone."
        if not yes:
            # The prompt goes to stderr so that --json output on stdout stays parseable.
            typer.confirm(question, abort=True, err=True)
        if target is not None:
            count = memory.forget(target)
        else:
            count = memory.forget(entity_id=state.entity)
    if state.json:
        state.emit_json({"forgotten": count})
    else:
        state.out.print(f"Forgot {plural(count, 'memory', 'memories')}.")


def history(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Memory id or a unique prefix of it.")],
) -> None:
    """Show how a memory came to be: created, updated, superseded..."""
    state = get_state(ctx)
    with state.open(create=False) as memory:
        full_id = resolve_id(memory, memory_id)
        events = memory.history(full_id)
    if state.json:
        state.emit_json([event.model_dump(mode="json") for event in events])
    else:
        state.out.print(history_table(events, memory_id=full_id))


def health(ctx: typer.Context) -> None:
    """Show the store's health: counts, edges, recall latency, size on disk."""
    state = get_state(ctx)
    with state.open(create=False) as memory:
        report = memory.health()
    if state.json:
        state.emit_json(report.model_dump(mode="json"))
    else:
        state.out.print(health_table(report.model_dump()))
