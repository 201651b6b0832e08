"""The ``memtrellis`` command line: add, recall, list, inspect, export and import memories.

Run ``memtrellis demo`` to see memory and recall work on a sample conversation, offline.

Examples:
    >>> from typer.testing import CliRunner
    >>> from memtrellis.cli import app
    >>> "recall" in CliRunner().invoke(app, ["--help"]).output
    True
"""

from memtrellis.cli._app import app, main

__all__ = ["app", "main"]
