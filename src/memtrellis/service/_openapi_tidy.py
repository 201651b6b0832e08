"""How the service's OpenAPI document is tidied: plain descriptions, no null parameters
(a module of its own, so that the app and `memtrellis.service.openapi` share it without
importing each other)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["plain_description", "plain_descriptions", "tidy"]

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


def plain_descriptions(node: Any) -> None:
    """Every ``description`` in ``node`` (a JSON document) as `plain_description` makes it.

    Examples:
        >>> doc = {"a": [{"description": "See [`X`][memtrellis.X]."}]}
        >>> plain_descriptions(doc)
        >>> doc
        {'a': [{'description': 'See `X`.'}]}
    """
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = plain_description(value)
            else:
                plain_descriptions(value)
    elif isinstance(node, list):
        for value in node:
            plain_descriptions(value)


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
