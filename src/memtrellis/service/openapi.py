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
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["main", "openapi_document", "plain_description", "render", "tidy"]

# A doctest: the ``>>>`` line, its ``...`` continuations and its output, up to a blank line.
_DOCTEST = re.compile(r"^[ \t]*>>>.*(?:\n[ \t]*\S.*)*\n?", re.MULTILINE)
# An ``Examples:`` heading left with nothing under it once its doctests are gone.
_EMPTY_EXAMPLES = re.compile(r"^Examples:\n(?:[ \t]*\n)*(?=\S|\Z)", re.MULTILINE)
# An API-reference link (``[`Memory`][memtrellis.Memory]``) reads as its text outside the site.
_AUTOREF = re.compile(r"\[([^\]\n]+)\]\[[\w.]*\]")


def plain_description(text: str) -> str:
    r"""A docstring as an OpenAPI description: no doctests, no API-reference link syntax.

    The docstrings of the service's schemas carry examples for the API reference and the
    doctest run; in the published OpenAPI they would be noise to a client of the HTTP API.

    Examples:
        >>> print(plain_description(
        ...     "Whose memory [`Scope`][memtrellis.Scope] is.\n\nExamples:\n"
        ...     "    >>> Scope(entity_id='a').entity_id\n    'a'\n"
        ... ))
        Whose memory `Scope` is.
    """
    text = _DOCTEST.sub("", text)
    text = _EMPTY_EXAMPLES.sub("", text)
    return _AUTOREF.sub(r"\1", text).strip()


def _plain_descriptions(node: Any) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = plain_description(value)
            else:
                _plain_descriptions(value)
    elif isinstance(node, list):
        for value in node:
            _plain_descriptions(value)


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
    """The OpenAPI 3.1 document of the HTTP API, generated from the routes and schemas.

    Examples:
        >>> document = openapi_document()
        >>> document["openapi"].startswith("3.1"), "/v1/recall" in document["paths"]
        (True, True)
    """
    from memtrellis.service.app import create_app

    document: dict[str, Any] = create_app(None, keys=None).openapi()
    _plain_descriptions(document)
    return document


def render() -> str:
    """The document as the published file holds it (stable key order, final newline).

    Examples:
        >>> import json
        >>> text = render()
        >>> json.loads(text) == openapi_document(), text.splitlines()[-1]
        (True, '}')
    """
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Write the document to the path given (``-`` or nothing: stdout).

    Examples:
        >>> import json, tempfile
        >>> from pathlib import Path
        >>> target = Path(tempfile.mkdtemp()) / "openapi.json"
        >>> main([str(target)])
        >>> json.loads(target.read_text(encoding="utf-8"))["info"]["title"]
        'memtrellis'
    """
    args = sys.argv[1:] if argv is None else argv
    target = args[0] if args else "-"
    if target == "-":
        sys.stdout.write(render())
    else:
        Path(target).write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    main()
