"""``graph``: one entity's memory graph as an HTML page, GraphML, node-link JSON or a PNG."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from memtrellis.cli._state import CliError, get_state

if TYPE_CHECKING:
    from memtrellis.graph_export import ExportFormat

__all__ = ["graph"]


def _file_option(flag: str, what: str) -> Any:
    return typer.Option(flag, metavar="PATH", help=f"Write {what} to PATH.")


def graph(
    ctx: typer.Context,
    html: Annotated[
        str | None, _file_option("--html", "a self-contained page to open in a browser")
    ] = None,
    graphml: Annotated[str | None, _file_option("--graphml", "GraphML")] = None,
    json_file: Annotated[str | None, _file_option("--json", "node-link JSON")] = None,
    png: Annotated[str | None, _file_option("--png", "a PNG picture (needs matplotlib)")] = None,
    entity_id: Annotated[
        str | None,
        typer.Option("--entity-id", help="Whose graph. Default: the global --entity."),
    ] = None,
    all_entities: Annotated[
        bool, typer.Option("--all-entities", help="Every entity's graph, for an administrator.")
    ] = False,
    max_memories: Annotated[
        int | None,
        typer.Option(
            "--max-memories",
            min=0,
            help="Keep the newest N memories. Default: all (HTML 500, PNG 200).",
        ),
    ] = None,
    path: Annotated[
        str | None,
        typer.Option("--path", metavar="STORE", help="Store directory (overrides the global one)."),
    ] = None,
) -> None:
    """Export the memory graph: memories, the entities they mention and the edges between them.

    Give one or more of --html, --graphml, --json and --png. Only the chosen entity's
    memories are written; --all-entities writes every entity's.
    """
    state = get_state(ctx)
    chosen: list[tuple[ExportFormat, str | None]] = [
        ("html", html),
        ("graphml", graphml),
        ("json", json_file),
        ("png", png),
    ]
    outputs = [(fmt, file) for fmt, file in chosen if file]
    if not outputs:
        raise CliError("say where to write the graph: --html, --graphml, --json or --png PATH")
    if all_entities and entity_id is not None:
        raise CliError("--entity-id and --all-entities cannot be used together")
    tenant = None if all_entities else (entity_id if entity_id is not None else state.entity)
    written: list[dict[str, str]] = []
    with state.open(path, create=False) as memory:
        if tenant is None:
            count = memory.health().total_memories
        else:
            count = len(memory.list(entity_id=tenant, limit=10**9))
        for fmt, file in outputs:
            try:
                memory.export_graph(
                    file,
                    format=fmt,
                    entity_id=tenant,
                    all_entities=tenant is None,
                    max_memories=max_memories,
                )
            except OSError as exc:
                raise CliError(f"cannot write {file}: {exc.strerror or exc}") from None
            written.append({"format": fmt, "file": file})
    if state.json:
        state.emit_json({"entity_id": tenant, "memories": count, "written": written})
        return
    scope = "every entity" if tenant is None else f"entity {tenant!r}"
    noun = "memory" if count == 1 else "memories"
    for entry in written:
        state.out.print(
            f"Wrote the {entry['format']} graph of {escape(scope)} ({count} {noun}) "
            f"to {escape(entry['file'])}.",
            soft_wrap=True,
        )
