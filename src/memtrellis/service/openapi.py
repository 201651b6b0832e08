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

from memtrellis.service._openapi_tidy import plain_description, plain_descriptions, tidy

__all__ = ["main", "openapi_document", "plain_description", "render", "tidy"]


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the HTTP API, generated from the routes and schemas.

    Examples:
        >>> document = openapi_document()
        >>> document["openapi"].startswith("3.1"), "/v1/recall" in document["paths"]
        (True, True)
    """
    from memtrellis.service.app import create_app

    document: dict[str, Any] = create_app(None, keys=None).openapi()
    plain_descriptions(document)
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
