"""``serve`` (the HTTP API), ``mcp`` (the MCP server over stdio) and ``keys`` (API keys).

FastAPI, uvicorn and the MCP SDK are imported inside the commands, so the rest of the
command line (and ``import memtrellis``) never loads them.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Annotated, Any

import typer
from rich.markup import escape

from memtrellis.cli._state import CliError, CliState, get_state
from memtrellis.errors import MissingDependencyError

__all__ = ["is_loopback", "keys_app", "mcp", "serve"]

DEFAULT_PORT = 8420

keys_app = typer.Typer(
    help="API keys of the HTTP service: add, list, revoke.", no_args_is_help=True
)

KeysFileOption = Annotated[
    str | None,
    typer.Option(
        "--keys-file", metavar="PATH", help="Keys file. Default: <store>/service-keys.json."
    ),
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine.

    Examples:
        >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _require(module: str, package: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise MissingDependencyError(package, extra="service") from None


def _key_ring(state: CliState, keys_file: str | None) -> Any:
    from memtrellis.memory import default_store_path
    from memtrellis.service.auth import KeyRing, default_keys_path

    if keys_file is not None:
        return KeyRing(keys_file)
    return KeyRing(
        default_keys_path(state.path if state.path is not None else default_store_path())
    )


def serve(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind. Default: loopback only.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port.")] = DEFAULT_PORT,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth", help="Serve without API keys (only allowed on a loopback address)."
        ),
    ] = False,
    keys_file: KeysFileOption = None,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", min=1024, help="Largest request body accepted.")
    ] = 1 << 20,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level (info, warning, ...).")
    ] = "info",
) -> None:
    """Serve the JSON HTTP API (FastAPI on uvicorn); Ctrl-C drains the capture queue and stops.

    Every request needs an API key from `memtrellis keys add` unless --no-auth is given,
    which is allowed only on a loopback address. Use the global --embedder hashing only in
    tests.
    """
    state = get_state(ctx)
    if no_auth and not is_loopback(host):
        raise CliError(f"--no-auth is only allowed on a loopback address, not {host!r}")
    for module, package in (("fastapi", "fastapi"), ("uvicorn", "uvicorn")):
        _require(module, package)
    import uvicorn

    from memtrellis.service.app import create_app
    from memtrellis.service.server import server_config

    keys = None if no_auth else _key_ring(state, keys_file)
    if keys is not None and not keys.list():
        state.err.print(
            f"[yellow]No API keys in {escape(str(keys.path))}: every request will get 401. "
            "Add one with `memtrellis keys add --entity-id ...`.[/]",
            soft_wrap=True,
        )
    # An async server: Chroma's embedded writes must not hold the event loop's GIL.
    memory = state.open(vector_process=True)
    app = create_app(memory, keys=keys, default_entity=state.entity, max_body_bytes=max_body_bytes)
    config = server_config(  # uvicorn's own 400s are counted in /metrics too
        app,
        host=host,
        port=port,
        log_level=log_level.lower(),
        server_header=False,
        timeout_graceful_shutdown=30,
    )
    try:
        uvicorn.Server(config).run()
    finally:
        memory.close()  # no-op when the lifespan closed it; covers a failed start


def mcp(ctx: typer.Context) -> None:
    """Serve the memory tools over MCP (stdio) for an agent, in the --entity/--process scope.

    Add to an MCP client's configuration as a command, e.g.
    `memtrellis --path ~/.memtrellis --entity alice mcp`.
    """
    state = get_state(ctx)
    _require("mcp", "mcp")
    from memtrellis.service.mcp_server import create_mcp_server

    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(level=logging.WARNING)
    with state.open() as memory:
        server = create_mcp_server(memory, entity_id=state.entity, process_id=state.process)
        server.run("stdio")


@keys_app.command("add")
def keys_add(
    ctx: typer.Context,
    entity_ids: Annotated[
        list[str] | None,
        typer.Option("--entity-id", help="An entity the key may touch; repeat for several."),
    ] = None,
    process_id: Annotated[
        str | None,
        typer.Option("--process-id", help="Pin the key to this process (its memories only)."),
    ] = None,
    monitor: Annotated[
        bool, typer.Option("--monitor", help="The key may read /health and /metrics.")
    ] = False,
    label: Annotated[str, typer.Option("--label", help="A note for yourself.")] = "",
    keys_file: KeysFileOption = None,
) -> None:
    """Make an API key and print it once (only its hash is stored)."""
    state = get_state(ctx)
    if not entity_ids and not monitor:
        raise CliError("give --entity-id (repeatable) or --monitor")
    ring = _key_ring(state, keys_file)
    record, key = ring.add(
        entity_ids=entity_ids or (), process_id=process_id, monitor=monitor, label=label
    )
    if state.json:
        state.emit_json({**record.public(), "key": key})
        return
    typer.echo(key)
    scope = ", ".join(record.entity_ids) or "no entity"
    state.err.print(
        f"Key {record.key_id} for {escape(scope)}"
        + (f", process {escape(process_id)}" if process_id else "")
        + (", monitor" if monitor else "")
        + ". It is shown only now: store it safely.",
        soft_wrap=True,
    )


@keys_app.command("list")
def keys_list(ctx: typer.Context, keys_file: KeysFileOption = None) -> None:
    """List key ids and their scopes (never the keys themselves)."""
    state = get_state(ctx)
    records = [record.public() for record in _key_ring(state, keys_file).list()]
    if state.json:
        state.emit_json(records)
        return
    if not records:
        state.out.print("No API keys.")
    for r in records:
        state.out.print(
            f"{r['key_id']}  entities={','.join(r['entity_ids']) or '-'}  "
            f"process={r['process_id'] or '*'}  monitor={'yes' if r['monitor'] else 'no'}  "
            f"created={r['created_at']}  {escape(r['label'])}",
            soft_wrap=True,
        )


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="The key id `keys list` shows.")],
    keys_file: KeysFileOption = None,
) -> None:
    """Revoke a key: the service refuses it from the next request on."""
    state = get_state(ctx)
    if not _key_ring(state, keys_file).revoke(key_id):
        raise CliError(f"no key with id {key_id!r}")
    if state.json:
        state.emit_json({"revoked": key_id})
    else:
        state.out.print(f"Revoked key {escape(key_id)}.")
