"""The typer application: global options, command registration and error handling."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from memtrellis.cli import _commands, _demo, _graph, _migrate, _repair, _service, _transfer
from memtrellis.cli._state import CliError, CliState, EmbedderChoice, make_console
from memtrellis.errors import MemtrellisError

__all__ = ["EXIT_ERROR", "app", "main"]

#: Exit code for every memtrellis error (and for command-line usage errors, as click does).
EXIT_ERROR = 2


def _plain_flags(params: list[Any]) -> list[Any]:
    """Show flags as flags in the help: typer labels every boolean option ``<bool>`` as if it
    took a value (``--json <bool>``), though ``--json`` alone is how it is given."""
    for param in params:
        if getattr(param, "is_flag", False) and getattr(param, "metavar", "") is None:
            param.metavar = ""
    return params


class _Group(TyperGroup):
    """Turns memtrellis errors into one red line and exit code 2 instead of a traceback,
    and shows the flags of its commands without a value."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, TyperGroup):
            _plain_flags([*command.params, command.get_help_option(ctx)])
        return command

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (MemtrellisError, CliError) as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            make_console(stderr=True).print(
                f"[bold red]Error:[/] [red]{escape(message)}[/]", soft_wrap=True
            )
            raise typer.Exit(EXIT_ERROR) from None


app = typer.Typer(
    name="memtrellis",
    cls=_Group,
    help="Long-term memory for chat models: add, recall, inspect and move memories.",
    no_args_is_help=True,
    add_completion=False,
    # Locals of a failing frame can hold memory text; never print them.
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"memtrellis {version('memtrellis')}")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            typer.echo("memtrellis (version unknown)")
        raise typer.Exit()


@app.callback()
def _callback(
    ctx: typer.Context,
    path: Annotated[
        str | None,
        typer.Option(
            "--path",
            metavar="PATH",
            help="Store directory. Default: $MEMTRELLIS_HOME, else ./.memtrellis.",
        ),
    ] = None,
    entity: Annotated[
        str, typer.Option("--entity", metavar="ID", help="Whose memories (entity_id).")
    ] = "default",
    process: Annotated[
        str | None,
        typer.Option("--process", metavar="ID", help="Which app or agent (process_id)."),
    ] = None,
    chroma_url: Annotated[
        str | None,
        typer.Option("--chroma-url", metavar="URL", help="Use a Chroma server at URL."),
    ] = None,
    postgres_url: Annotated[
        str | None,
        typer.Option(
            "--postgres-url",
            metavar="URL",
            help="Keep shards, logs and locks in PostgreSQL at URL (with --chroma-url).",
        ),
    ] = None,
    embedder: Annotated[
        EmbedderChoice,
        typer.Option(
            "--embedder",
            case_sensitive=False,
            help="minilm: the offline default model; multilingual: USE multilingual v3 "
            "(Chinese and other languages); multilingual-e5: multilingual-e5-small; "
            "hashing: deterministic, for tests.",
        ),
    ] = EmbedderChoice.MINILM,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print machine-readable JSON instead of tables.")
    ] = False,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Long-term memory for chat models: add, recall, inspect and move memories."""
    ctx.obj = CliState(
        path=path,
        entity=entity,
        process=process,
        chroma_url=chroma_url,
        postgres_url=postgres_url,
        embedder=embedder,
        json=json_output,
    )


app.command("demo")(_demo.demo)
app.command("add")(_commands.add)
app.command("recall")(_commands.recall)
app.command("list")(_commands.list_memories)
app.command("get")(_commands.get)
app.command("forget")(_commands.forget)
app.command("history")(_commands.history)
app.command("health")(_commands.health)
app.command("export")(_transfer.export)
app.command("import")(_transfer.import_)
app.command("graph")(_graph.graph)
app.command("repair")(_repair.repair)
app.command("migrate")(_migrate.migrate)
app.command("serve")(_service.serve)
app.command("mcp")(_service.mcp)
app.add_typer(_service.keys_app, name="keys", cls=_Group)


def main() -> None:
    """Run the command line (the ``memtrellis`` console script)."""
    app(prog_name="memtrellis")
