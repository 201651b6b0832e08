"""The service's OpenAPI document, as published in ``docs/openapi.json``.

Regenerate the published copy after changing a route or a schema::

    python -m memtrellis.service.openapi docs/openapi.json

The test suite fails while the published copy differs from what the app generates.

Examples:
    >>> sorted(openapi_document()["paths"])[:2]
    ['/health', '/metrics']
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "openapi_document", "render", "tidy"]


def tidy(document: dict[str, Any]) -> dict[str, Any]:
    """Say what a query or path parameter really is: a value, or absent — never null.

    FastAPI writes an optional parameter as ``anyOf: [<type>, {"type": "null"}]``; a URL
    cannot carry a null, and the parameter is already marked not required. Changes
    ``document`` in place and returns it.

    Examples:
        >>> doc = {"paths": {"/x": {"get": {"parameters": [{"in": "query", "schema": {
        ...     "anyOf": [{"type": "string"}, {"type": "null"}], "title": "Key"}}]}}}}
        >>> tidy(doc)["paths"]["/x"]["get"]["parameters"][0]["schema"]
        {'type': 'string', 'title': 'Key'}
    """
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                options = schema.get("anyOf", [])
                kept = [option for option in options if option != {"type": "null"}]
                if len(kept) == 1 and len(options) == 2:
                    del schema["anyOf"]
                    parameter["schema"] = {**kept[0], **schema}
    return document


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the HTTP API, generated from the routes and schemas."""
    from memtrellis.service.app import create_app

    document: dict[str, Any] = create_app(None, keys=None).openapi()
    return document


def render() -> str:
    """The document as the published file holds it (stable key order, final newline)."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Write the document to the path given (``-`` or nothing: stdout)."""
    args = sys.argv[1:] if argv is None else argv
    target = args[0] if args else "-"
    if target == "-":
        sys.stdout.write(render())
    else:
        Path(target).write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
