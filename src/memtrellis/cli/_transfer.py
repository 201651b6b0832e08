"""``export`` and ``import``: an entity's memories as JSON lines, one ``MemoryItem`` a line."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from memtrellis.cli._state import EVERYTHING, PAGE_SIZE, CliError, get_state
from memtrellis.errors import InvalidInputError
from memtrellis.types import MemoryItem, Scope

__all__ = ["export", "import_"]

#: Exit code of an import that stored the good lines but skipped some invalid ones.
EXIT_PARTIAL = 1


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


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


def _read_lines(file: str) -> list[str]:
    try:
        if file == "-":
            return sys.stdin.read().splitlines()
        return Path(file).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CliError(f"cannot read {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{file} is not UTF-8 text: {exc.reason}") from None


def _reason(exc: ValidationError) -> str:
    """The first validation problem on one short line."""
    errors = exc.errors(include_url=False)
    if not errors:
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{more}"


def export(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="JSON-lines file to write ('-' for stdout).")],
) -> None:
    """Export every memory of the entity, superseded and expired ones included, as JSON lines."""
    state = get_state(ctx)
    count = 0
    with state.open() as memory, _output(file) as stream, _progress(state.err) as progress:
        task = progress.add_task("exporting", total=None)
        offset = 0
        while True:
            page = memory.list(limit=PAGE_SIZE, offset=offset, filters=EVERYTHING)
            for item in page:
                stream.write(item.model_dump_json() + "\n")
            count += len(page)
            progress.update(task, completed=count)
            if len(page) < PAGE_SIZE:
                break
            offset += len(page)
        progress.update(task, total=count, completed=count)
    if state.json and file != "-":
        state.emit_json({"exported": count, "file": file})
    else:
        # With '-' stdout carries the data, so the summary goes to stderr.
        console = state.err if file == "-" else state.out
        noun = "memory" if count == 1 else "memories"
        where = "stdout" if file == "-" else escape(file)
        console.print(f"Exported {count} {noun} of entity {state.entity!r} to {where}.")


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
    lines = _read_lines(file)
    skipped: list[tuple[int, str]] = []
    imported = 0
    with state.open() as memory, _progress(state.err) as progress:
        task = progress.add_task("importing", total=len(lines))
        for number, line in enumerate(lines, start=1):
            progress.advance(task)
            if not line.strip():
                continue
            try:
                item = MemoryItem.model_validate_json(line)
                if rescope:
                    scope = Scope(
                        entity_id=state.entity,
                        process_id=state.process or item.scope.process_id,
                        session_id=item.scope.session_id,
                    )
                    item = item.model_copy(update={"scope": scope})
                memory.store(item, lifecycle=False)  # restore exactly what was exported
            except ValidationError as exc:
                skipped.append((number, _reason(exc)))
            except InvalidInputError as exc:
                skipped.append((number, " ".join(str(exc).split())))
            else:
                imported += 1
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
            state.out.print(f"[yellow]Skipped {len(skipped)} invalid line(s):[/]")
            for number, why in skipped:
                state.out.print(f"  line {number}: {escape(why)}", soft_wrap=True)
    if skipped:
        raise typer.Exit(EXIT_PARTIAL)
