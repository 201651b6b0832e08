"""``export`` and ``import``: memories as JSON lines, through
[`Memory.export`][memtrellis.Memory.export] and [`Memory.import_`][memtrellis.Memory.import_]
(the format: [`memtrellis.transfer`][memtrellis.transfer])."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.markup import escape

from memtrellis.cli._state import CliError, get_state, plural

__all__ = ["export", "import_"]

#: Exit code of an import that stored the good lines but skipped some invalid ones.
EXIT_PARTIAL = 1


@contextlib.contextmanager
def _output(file: str) -> Iterator[IO[str]]:
    if file == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    # Opened outside the with-block so that only a failure to open is reported as one.
    try:
        stream = Path(file).open("w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot write {file}: {exc.strerror or exc}") from None
    with stream:
        yield stream


@contextlib.contextmanager
def _input(file: str) -> Iterator[IO[str]]:
    if file == "-":
        yield sys.stdin
        return
    try:
        stream = Path(file).open(encoding="utf-8", newline="")  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot read {file}: {exc.strerror or exc}") from None
    with stream:
        try:
            yield stream
        except UnicodeDecodeError as exc:
            raise CliError(f"{file} is not UTF-8 text: {exc.reason}") from None


def export(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="JSON-lines file to write ('-' for stdout).")],
    all_entities: Annotated[
        bool, typer.Option("--all", help="Export every entity of the store, not only --entity.")
    ] = False,
) -> None:
    """Export every memory of the entity, superseded and expired ones included, as JSON lines
    (with each memory's history and edges)."""
    state = get_state(ctx)
    # The store is checked before the output file is made: a mistyped --path writes nothing.
    with state.open(create=False) as memory, _output(file) as stream:
        count = memory.export(stream, entity_id=None if all_entities else state.entity)
    if state.json and file != "-":
        state.emit_json({"exported": count, "file": file})
    else:
        # With '-' stdout carries the data, so the summary goes to stderr.
        console = state.err if file == "-" else state.out
        noun = "memory" if count == 1 else "memories"
        where = "stdout" if file == "-" else escape(file)
        whose = "every entity" if all_entities else f"entity {state.entity!r}"
        console.print(f"Exported {count} {noun} of {whose} to {where}.")


def import_(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="JSON-lines file to read ('-' for stdin).")],
    rescope: Annotated[
        bool,
        typer.Option(
            "--rescope",
            help="Store every memory under --entity (and --process, if given) instead of "
            "the scope recorded in the file.",
        ),
    ] = False,
) -> None:
    """Import memories from JSON lines (as written by export).

    Invalid lines are skipped and reported by line number; the others are stored. The exit
    code is 0 when every line was stored and 1 when some were skipped.
    """
    state = get_state(ctx)
    with _input(file) as stream, state.open() as memory:
        report = memory.import_(
            stream,
            entity_id=state.entity if rescope else None,
            process_id=state.process if rescope else None,
        )
    skipped = [(s.line, s.error) for s in report.skipped]
    imported = report.imported
    if state.json:
        state.emit_json(
            {
                "imported": imported,
                "skipped": [{"line": number, "error": why} for number, why in skipped],
            }
        )
    else:
        noun = "memory" if imported == 1 else "memories"
        state.out.print(f"Imported {imported} {noun} from {escape(file)}.")
        if skipped:
            state.out.print(f"[yellow]Skipped {plural(len(skipped), 'invalid line')}:[/]")
            for number, why in skipped:
                state.out.print(f"  line {number}: {escape(why)}", soft_wrap=True)
    if skipped:
        raise typer.Exit(EXIT_PARTIAL)
