"""Reading a node-link snapshot one node and one edge at a time.

``json.loads`` of a whole snapshot builds every node's dicts before the first is used: at
20k memories that is about 60 MB of short-lived objects, and the strings the graph keeps
(ids, texts) are scattered among them, so the allocator cannot give that memory back. Read
element by element, each node's temporaries are freed before the next is parsed and their
memory is reused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["members"]

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_BLANK = frozenset(" \t\n\r")
#: Members whose list elements are yielded one by one.
STREAMED = frozenset({"nodes", "edges"})


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _expect(text: str, at: int, allowed: str) -> tuple[str, int]:
    char = text[at : at + 1]
    if not char or char not in allowed:
        found = repr(char) if char else "the end"
        raise ValueError(f"expected one of {allowed!r} at character {at}, found {found}")
    return char, _skip(text, at + 1)


def members(text: str, seen: set[str] | None = None) -> Iterator[tuple[str, Any]]:
    """``(name, value)`` of each member of the JSON object ``text``, in order.

    The lists ``nodes`` and ``edges`` are not yielded whole: each of their elements is
    yielded as ``(name, element)``. Any JSON the standard parser reads as an object is
    read (whitespace anywhere); anything else raises ``ValueError``. Each member's name
    is added to ``seen`` as it starts (an empty list yields nothing but is seen).

    Examples:
        >>> list(members('{"graph": {"generation": 2}, "nodes": [{"id": "a"}, {"id": "b"}]}'))
        [('graph', {'generation': 2}), ('nodes', {'id': 'a'}), ('nodes', {'id': 'b'})]
        >>> list(members('{"nodes": [], "edges": [ ]}'))
        []
        >>> list(members('{"nodes": [1,]}'))
        Traceback (most recent call last):
        ...
        json.decoder.JSONDecodeError: Expecting value: line 1 column 14 (char 13)
    """
    _, at = _expect(text, _skip(text, 0), "{")
    if text[at : at + 1] == "}":
        at = _skip(text, at + 1)
    else:
        while True:
            name, at = _DECODER.raw_decode(text, at)
            if not isinstance(name, str):
                raise ValueError(f"expected a member name before character {at}")
            _, at = _expect(text, _skip(text, at), ":")
            if seen is not None:
                seen.add(name)
            if name in STREAMED and text[at : at + 1] == "[":
                at = _skip(text, at + 1)
                char = "]" if text[at : at + 1] == "]" else ","
                if char == "]":
                    at = _skip(text, at + 1)
                decode = _DECODER.raw_decode
                while char == ",":
                    value, at = decode(text, at)
                    yield name, value
                    char = text[at : at + 1]
                    if char == "," and text[at + 1 : at + 2] not in _BLANK:
                        at += 1  # the compact form the store writes: no spaces to skip
                    else:
                        char, at = _expect(text, _skip(text, at), ",]")
            else:
                value, at = _DECODER.raw_decode(text, at)
                yield name, value
                at = _skip(text, at)
            char, at = _expect(text, at, ",}")
            if char == "}":
                break
    if at != len(text):
        raise ValueError(f"extra data after the graph at character {at}")
