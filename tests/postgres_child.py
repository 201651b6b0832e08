"""The other process of tests/test_postgres_storage.py: one command per run, on a real server.

Run as ``python tests/postgres_child.py COMMAND URL [ARGS...]``:

``schema URL START``
    sleep until the epoch time ``START``, open the backend (creating the schema), print
    the schema version.
``append URL ENTITY N``
    append ``N`` records one at a time to generation 0, without the lock (appends that
    race must still get dense positions), print the last position.
``hold URL ENTITY``
    take the entity's writer lock, print ``locked``, then wait until killed.
``follow URL ENTITY EXPECTED``
    print ``ready`` with the stamp taken, then poll ``stamp()``; each time it changes,
    read the log after the last position read, until ``EXPECTED`` records came; print
    them, the position and the number of reads as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time

from memtrellis.store.postgres import PostgresBackend


def main(command: str, url: str, *args: str) -> None:
    if command == "schema":
        time.sleep(max(float(args[0]) - time.time(), 0.0))
        backend = PostgresBackend(url)
        print(backend.schema_version(), flush=True)
        backend.close()
        return
    backend = PostgresBackend(url)
    storage = backend.storage(args[0])
    if command == "append":
        position = 0
        for number in range(int(args[1])):
            record = {"op": "ok", "rid": f"{args[0]}-{number}", "pid": sys.argv[0]}
            position = storage.append(0, [record], durable=True)
        print(position, flush=True)
    elif command == "hold":
        with storage.lock(timeout=30):
            print("locked", flush=True)
            while True:
                time.sleep(60)
    elif command == "follow":
        stamp = storage.stamp()
        print("ready", flush=True)
        records: list[dict[str, object]] = []
        position, reads = 0, 0
        deadline = time.monotonic() + 60
        while len(records) < int(args[1]) and time.monotonic() < deadline:
            now = storage.stamp()
            if now != stamp:
                stamp = now
                read = storage.read_log(0, position)
                records += read.records
                position, reads = read.position, reads + 1
            time.sleep(0.005)
        print(json.dumps({"records": records, "position": position, "reads": reads}), flush=True)
    else:
        raise SystemExit(f"unknown command {command!r}")
    backend.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
