"""Where CrewAI is not installed (the dev environment: its pins clash with the core's
extras), its module is not collected for doctests; ``nox -s crewai`` runs it.

This file is not collected for doctests either: run as ``pytest integrations/agents``
(as the full check runs it), pytest would import it as a test module named ``conftest``,
the name ``tests/conftest.py`` already holds, and stop at the mismatch."""

from __future__ import annotations

import importlib.util

collect_ignore = ["conftest.py"]
if not importlib.util.find_spec("crewai"):
    collect_ignore.append("src/memtrellis_agents/crewai.py")
