"""Where CrewAI is not installed (the dev environment: its pins clash with the core's
extras), its module is not collected for doctests; ``nox -s crewai`` runs it.

This file itself is not collected for doctests either: run from the repository's root
(``pytest integrations/agents``, as ``nox -s tests`` does), ``--doctest-modules`` would
import it as a module named ``conftest``, which ``tests/conftest.py`` already is."""

from __future__ import annotations

import importlib.util

_CREWAI = [] if importlib.util.find_spec("crewai") else ["src/memtrellis_agents/crewai.py"]
collect_ignore = ["conftest.py", *_CREWAI]
